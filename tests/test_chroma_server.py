"""Semantic recall against a real Chroma server (HttpClient), including one that goes down.

With LMM_TEST_CHROMA_URL set these tests use that server; without it (`make test` on any
machine, CI included) they start their own (`chroma run`, from the chromadb package), so they
never skip.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import free_port
from helpers import start_chroma_server as start_server
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import ChromaVectorStore, Memory, SQLiteStorage, VectorStoreError

pytestmark = pytest.mark.chroma_server


@pytest.fixture(scope="module")
def server_url(tmp_path_factory) -> Iterator[str]:
    url = os.environ.get("LMM_TEST_CHROMA_URL")
    if url:
        yield url
        return
    port = free_port()
    proc = start_server(tmp_path_factory.mktemp("chroma"), port)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(10)


def test_recall_through_a_chroma_server(server_url: str) -> None:
    index = f"server-test-{uuid.uuid4().hex[:8]}"
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        vector=ChromaVectorStore.from_url(server_url),
        options={"semantic_recall": {"top_k": 2, "index_name": index}},
    )
    for resource, fact in [
        ("alice", "I moved to Lisbon in March."),
        ("bob", "I moved to Oslo in May."),
    ]:
        memory.create_thread(resource_id=resource, thread_id=f"{resource}-1")
        memory.save_messages(
            [HumanMessage(fact), AIMessage("Noted.")],
            thread_id=f"{resource}-1",
            resource_id=resource,
        )
        memory.create_thread(resource_id=resource, thread_id=f"{resource}-2")
    out = memory.recall(thread_id="alice-2", new_messages=[HumanMessage("Where do I live now?")])
    assert "Lisbon" in out[0].content and "Oslo" not in out[0].content


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(VectorStoreError, match="not reachable"):
        ChromaVectorStore.from_url(f"http://127.0.0.1:{free_port()}")


def test_saving_while_the_server_is_down_then_backfilling(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "chroma"
    proc = start_server(data, port)
    url = f"http://127.0.0.1:{port}"
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        vector=ChromaVectorStore.from_url(url),
        options={"semantic_recall": {"top_k": 2}},
    )
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [HumanMessage("My dog is a beagle called Biscuit.")], thread_id="t1", resource_id="alice"
    )
    memory.flush()
    proc.terminate()
    proc.wait(10)
    saved = memory.save_messages(  # the server is down: the save still succeeds
        [HumanMessage("I moved to Lisbon in March.")], thread_id="t1", resource_id="alice"
    )
    assert [m.content for m in memory.get_messages(thread_id="t1")][-1] == saved[0].content
    assert memory.flush(timeout=60) is False  # the writer tried, failed, left the backlog
    assert [s.message.id for s in memory.storage.unembedded()] == [saved[0].id]
    backlog = memory.vector_backlog()
    assert backlog.pending == 1 and "Chroma is unavailable" in (backlog.last_error or "")
    with pytest.raises(VectorStoreError):
        memory.recall_index.search("Where do I live?", resource_id="alice")
    proc = start_server(data, port)
    try:  # the backlog kept the vector: a backfill writes it, unless the writer, trying again
        # by itself once the server answers, wrote it first (one of the two, never both)
        assert memory.backfill_embeddings() in (0, 1)
        assert memory.storage.unembedded() == []
        assert memory.vector_backlog().last_error is None and memory.flush(60)
        hits = memory.recall_index.search("Where do I live?", resource_id="alice")
        assert hits[0].message_id == saved[0].id
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP is POSIX")
def test_a_frozen_server_never_blocks_a_save_and_bounds_a_search(tmp_path: Path) -> None:
    import signal

    port = free_port()
    proc = start_server(tmp_path / "chroma", port)
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        vector=ChromaVectorStore.from_url(f"http://127.0.0.1:{port}", timeout=1.0),
        options={"semantic_recall": {"top_k": 2}},
    )
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [HumanMessage("My dog is called Biscuit.")], thread_id="t1", resource_id="alice"
    )
    assert memory.flush(timeout=60)
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        saved = memory.save_messages(
            [HumanMessage("I moved to Lisbon in March.")], thread_id="t1", resource_id="alice"
        )
        assert time.monotonic() - started < 5  # acknowledged without waiting on the server
        assert memory.get_messages(thread_id="t1")[-1].id == saved[0].id
        started = time.monotonic()
        with pytest.raises(VectorStoreError):
            memory.recall_index.search("Where do I live?", resource_id="alice")
        assert time.monotonic() - started < 20  # bounded by the timeout, not forever
        assert [s.message.id for s in memory.storage.unembedded()] == [saved[0].id]
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    assert memory.backfill_embeddings() in (0, 1)  # the backlog kept the vector (written by
    # the backfill, or by the writer trying again once the server answers)
    assert memory.storage.unembedded() == []
    hits = memory.recall_index.search("Where do I live?", resource_id="alice")
    assert hits[0].message_id == saved[0].id
    proc.terminate()
    proc.wait(10)


def test_the_timeout_must_be_positive(server_url: str) -> None:
    from langchain_mastra_memory import ConfigurationError

    with pytest.raises(ConfigurationError, match="timeout"):
        ChromaVectorStore.from_url(server_url, timeout=0)
