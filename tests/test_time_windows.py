"""Date windows reach the search: ``since``/``until`` are filtered inside every engine (SQL
``created_at``, Chroma's ``where``, Qdrant's and Milvus's payload ranges, pgvector's ``WHERE``, a
LangChain store's filter), so an in-window message is found even when more than a page of
newer, out-of-window messages match better. And the tool's inputs read as a model sends them."""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import (
    ConfigurationError,
    Memory,
    MilvusVectorStore,
    PostgresStorage,
    SQLiteStorage,
)
from tests.helpers import drop_milvus_collections
from tests.test_isolation_matrix import vector_store

OLD = datetime(2025, 3, 1, tzinfo=timezone.utc)
NEW = datetime(2026, 6, 1, tzinfo=timezone.utc)
NEWER = 120  # more than a search ranks (100): a post-filter would find nothing in the window

ENGINES = [
    pytest.param(("sqlite", None), id="sqlite+chroma"),
    pytest.param(("postgres", None), id="postgres+pgvector", marks=pytest.mark.postgres),
    pytest.param(("sqlite", "sqlite+qdrant"), id="sqlite+qdrant"),
    pytest.param(("sqlite", "sqlite+milvus"), id="sqlite+milvus"),
    pytest.param(("sqlite", "milvus-server"), id="sqlite+milvus-server"),
    pytest.param(("sqlite", "sqlite+langchain"), id="sqlite+langchain"),
]


@pytest.fixture(scope="module", params=ENGINES)
def memory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    backend, engine = request.param
    folder = tmp_path_factory.mktemp("window")
    storage: Any = (
        PostgresStorage(os.environ["LMM_TEST_POSTGRES_DSN"], schema=f"t_{uuid.uuid4().hex[:12]}")
        if backend == "postgres"
        else SQLiteStorage(folder / "memory.db")
    )
    if engine == "milvus-server":  # the session's real Milvus (2.3)
        uri = request.getfixturevalue("milvus_uri")
        request.addfinalizer(lambda: drop_milvus_collections(uri))
        vector: Any = MilvusVectorStore(uri=uri)
    else:
        vector = vector_store(engine or "", folder)
    memory = Memory(
        storage=storage,
        vector=vector,
        options={"semantic_recall": {"scope": "resource"}},
    )
    memory.create_thread(thread_id="old", resource_id="alice")
    memory.save_messages(
        [HumanMessage("We talked about green tea from Shizuoka", id="in-window")],
        thread_id="old", resource_id="alice", created_at=[OLD],
    )  # fmt: skip
    memory.create_thread(thread_id="new", resource_id="alice")
    newer = [AIMessage(f"green tea, green tea: cup {i} of green tea") for i in range(NEWER)]
    memory.save_messages(
        newer, thread_id="new", resource_id="alice",
        created_at=[NEW + timedelta(minutes=i) for i in range(NEWER)],
    )  # fmt: skip
    assert memory.flush(120)
    yield memory
    if isinstance(storage, PostgresStorage):
        storage.drop_schema()
    storage.close()


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_an_in_window_message_is_found_behind_many_better_newer_ones(memory: Any, mode: str):
    found = memory.search_messages(
        "green tea", resource_id="alice", until=datetime(2026, 1, 1, tzinfo=timezone.utc),
        mode=mode,
    )  # fmt: skip
    assert [h.message.id for h in found.items] == ["in-window"]
    since = memory.search_messages("green tea", resource_id="alice", since=NEW, mode=mode)
    assert since.total == min(NEWER, 100) and "in-window" not in [h.message.id for h in since.items]


def test_the_tool_finds_it_too_sync_and_async(memory: Any) -> None:
    tool = memory.recall_tool(resource_id="alice")
    args = {"query": "green tea", "until": "2026-01-01"}
    assert "Shizuoka" in tool.invoke(args)
    assert "Shizuoka" in asyncio.run(tool.ainvoke(args))


def test_since_after_until_is_an_error_the_model_can_read(memory: Any) -> None:
    tool = memory.recall_tool(resource_id="alice")
    answer = tool.invoke({"query": "green tea", "since": "2026-02-01", "until": "2026-01-01"})
    assert "must be before until" in answer and "Nothing in memory" not in answer
    with pytest.raises(ConfigurationError, match="must be before until"):
        memory.search_messages("tea", resource_id="alice", since=NEW, until=OLD)
    with pytest.raises(ConfigurationError, match="must be before until"):
        memory.page_messages("old", resource_id="alice", since=NEW, until=NEW)


def test_a_plain_string_is_the_query(memory: Any) -> None:
    tool = memory.recall_tool(resource_id="alice")
    assert "Shizuoka" in tool.invoke("Shizuoka")  # LangChain's single-input convention
    assert "Shizuoka" in asyncio.run(tool.ainvoke("Shizuoka"))


def test_include_is_a_list_of_ids_never_a_strings_characters(memory: Any) -> None:
    with pytest.raises(ConfigurationError, match="list of message ids"):
        memory.page_messages("old", resource_id="alice", include="in-window")
    page = memory.page_messages("new", resource_id="alice", include=["in-window"], per_page=1)
    assert [m.id for m in page.included] == ["in-window"]


def test_a_window_is_kept_by_a_langchain_store_with_a_scope_of_ones_own(tmp_path: Path) -> None:
    """A user's scope filters by owner and threads only: the window is kept from a deeper
    search (and never lets an out-of-window hit through)."""
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_mastra_memory import LangChainVectorStore
    from langchain_mastra_memory.recall.embedders.cache import _default_minilm

    def scope(resource_id: str, threads: Any) -> Any:
        return lambda doc: doc.metadata.get("resource_id") == resource_id

    store = LangChainVectorStore(InMemoryVectorStore(_default_minilm()), filter=scope)
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), vector=store,
                    options={"semantic_recall": True})  # fmt: skip
    memory.create_thread(thread_id="t", resource_id="alice")
    memory.save_messages([HumanMessage("green tea in March", id="m1"),
                          HumanMessage("green tea today", id="m2")], thread_id="t",
                         resource_id="alice", created_at=[OLD, NEW])  # fmt: skip
    assert memory.flush(60)
    found = memory.search_messages("green tea", resource_id="alice", mode="vector", until=NEW)
    assert [h.message.id for h in found.items] == ["m1"]
