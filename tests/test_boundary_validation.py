"""Boundary validation on every backend: whatever arrives at a public entry point either round
trips exactly or raises a package error (`MastraMemoryError`), and a canary thread of another
resource never changes."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import (
    ConfigurationError,
    InvalidMessageError,
    MastraMemoryError,
    Memory,
    MemoryStorage,
    SQLiteStorage,
)

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(max_size=8),
    st.lists(st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
# arbitrary Unicode, lone surrogates and NUL included
texts = st.text(alphabet=st.characters(), max_size=40)


@pytest.fixture
def memory(storage: MemoryStorage) -> Memory:
    memory = Memory(storage=storage, options={"semantic_recall": False})
    memory.create_thread(thread_id="canary", resource_id="keeper", title="keep", metadata={"a": 1})
    memory.save_messages([HumanMessage("keep me", id="canary-1")], thread_id="canary",
                         resource_id="keeper")  # fmt: skip
    return memory


def canary_intact(memory: Memory) -> None:
    thread = memory.storage.get_thread("canary")
    assert thread is not None and thread.title == "keep" and thread.metadata == {"a": 1}
    assert [m.content for m in memory.get_messages(thread_id="canary")] == ["keep me"]


def refused_or(func: Any, check: Any = None) -> Any:
    try:
        result = func()
    except MastraMemoryError:
        return None
    if check is not None:
        check(result)
    return result


@SETTINGS
@given(thread_id=anything, resource_id=anything, title=anything)
def test_thread_fields(memory: Memory, thread_id: Any, resource_id: Any, title: Any) -> None:
    def round_trip(thread: Any) -> None:
        stored = memory.storage.get_thread(thread.id)  # None as thread_id: a generated id
        assert stored is not None
        assert stored.id == (thread_id if thread_id is not None else thread.id)
        assert (stored.resource_id, stored.title) == (resource_id, title)

    if thread_id != "canary":
        refused_or(
            lambda: memory.create_thread(thread_id=thread_id, resource_id=resource_id, title=title),
            round_trip,
        )
    canary_intact(memory)


@SETTINGS
@given(text=texts, name=st.one_of(st.none(), texts))
def test_message_text_round_trips_or_is_refused(memory: Memory, text: str, name: Any) -> None:
    memory.storage.create_thread(thread_id="t", resource_id="r") if not memory.storage.get_thread(
        "t"
    ) else None
    message = HumanMessage(text, name=name)

    def round_trip(saved: Any) -> None:
        stored = memory.storage.get_messages_by_id([saved[0].id])[0].message
        assert stored.content == text and stored.name == name

    refused_or(lambda: memory.save_messages([message], thread_id="t", resource_id="r"), round_trip)
    canary_intact(memory)


@SETTINGS
@given(ids=anything)
def test_id_lists(memory: Memory, ids: Any) -> None:
    refused_or(lambda: memory.delete_messages(ids, resource_id="keeper"))
    refused_or(lambda: memory.storage.get_messages_by_id(ids))
    if not (isinstance(ids, list) and "canary-1" in ids):
        canary_intact(memory)


@SETTINGS
@given(metadata=st.dictionaries(texts, st.one_of(anything, st.floats())))
def test_metadata(memory: Memory, metadata: dict) -> None:
    def round_trip(thread: Any) -> None:
        assert memory.storage.get_thread("m").metadata == metadata

    if memory.storage.get_thread("m") is None:
        refused_or(
            lambda: memory.create_thread(thread_id="m", resource_id="r", metadata=metadata),
            round_trip,
        )
    refused_or(lambda: memory.storage.list_threads(metadata=metadata))
    canary_intact(memory)


# -- the cases the adversarial report found ---------------------------------------------------


def test_a_string_is_not_a_list_of_ids(memory: Memory) -> None:
    memory.create_thread(thread_id="t", resource_id="r")
    memory.save_messages([HumanMessage("a", id="1"), HumanMessage("b", id="2")],
                         thread_id="t", resource_id="r")  # fmt: skip
    with pytest.raises(ConfigurationError, match="not a str"):
        memory.delete_messages("12")
    with pytest.raises(ConfigurationError, match="not a str"):
        memory.storage.get_messages_by_id("12")
    with pytest.raises(ConfigurationError):
        memory.delete_messages(None)  # type: ignore[arg-type]
    assert [m.id for m in memory.get_messages(thread_id="t")] == ["1", "2"]


async def test_a_string_is_not_a_turn(memory: Memory) -> None:
    """`context("hi")` (a string, not a list of messages) is a clear error, sync and async."""
    memory.create_thread(thread_id="t", resource_id="r")
    with pytest.raises(InvalidMessageError, match="not a single str"):
        memory.context("hi", thread_id="t", resource_id="r")  # type: ignore[arg-type]
    with pytest.raises(InvalidMessageError, match="not a single str"):
        await memory.acontext("hi", thread_id="t", resource_id="r")  # type: ignore[arg-type]
    with pytest.raises(InvalidMessageError, match="got int"):
        memory.context([1], thread_id="t", resource_id="r")  # type: ignore[list-item]
    assert memory.get_messages(thread_id="t") == []


def test_lone_surrogates_are_refused_and_nul_round_trips(memory: Memory) -> None:
    memory.create_thread(thread_id="t", resource_id="r")
    with pytest.raises(InvalidMessageError, match="surrogate"):
        memory.save_messages([HumanMessage("bad \ud800 text")], thread_id="t", resource_id="r")
    with pytest.raises(InvalidMessageError, match="surrogate"):  # a message's id is input
        memory.save_messages([HumanMessage("ok", id="x\udfff")], thread_id="t", resource_id="r")
    saved = memory.save_messages([HumanMessage("a\x00b")], thread_id="t", resource_id="r")
    assert memory.get_messages(thread_id="t")[0].content == "a\x00b" == saved[0].content
    assert memory.storage.search_text("ab", resource_id="r") is not None


def test_save_without_a_resource_is_a_clear_error(memory: Memory) -> None:
    memory.create_thread(thread_id="t", resource_id="r")
    with pytest.raises(ConfigurationError, match="resource_id"):
        memory.storage.save_messages([HumanMessage("x")], thread_id="t", resource_id=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="resource_id"):
        memory.storage.save_messages([HumanMessage("x")], thread_id="t", resource_id={"$ne": "B"})  # type: ignore[arg-type]


def test_nul_in_metadata_is_refused_on_every_backend(memory: Memory) -> None:
    for metadata in ({"k": "a\x00b"}, {"a\x00": 1}, {"k": ["\x00"]}):
        with pytest.raises(ConfigurationError, match="NUL"):
            memory.create_thread(thread_id="n", resource_id="r", metadata=metadata)
        with pytest.raises(ConfigurationError, match=r"NUL|keys must match"):
            memory.storage.list_threads(metadata=metadata)
    assert memory.storage.get_thread("n") is None


def test_non_finite_filters_and_deep_nesting_are_refused(memory: Memory) -> None:
    with pytest.raises(ConfigurationError, match="finite"):
        memory.storage.list_threads(metadata={"k": math.nan})
    memory.create_thread(thread_id="t", resource_id="r")
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(InvalidMessageError, match="nested"):
        memory.save_messages([AIMessage("x", additional_kwargs={"d": deep})],
                             thread_id="t", resource_id="r")  # fmt: skip
    with pytest.raises(ConfigurationError, match="nested"):
        memory.create_thread(thread_id="d", resource_id="r", metadata={"d": deep})
    assert memory.storage.get_thread("d") is None


@pytest.mark.parametrize(
    "moment",
    [
        datetime(9999, 1, 1, tzinfo=timezone.utc),
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
        12345,
    ],
)
def test_timestamps_a_thread_could_not_follow_are_refused(memory: Memory, moment: Any) -> None:
    memory.create_thread(thread_id="t", resource_id="r")
    with pytest.raises(InvalidMessageError, match="created_at"):
        memory.storage.save_messages([HumanMessage("x")], thread_id="t", resource_id="r",
                                     created_at=[moment])  # fmt: skip
    memory.save_messages([HumanMessage("still writable")], thread_id="t", resource_id="r")
    assert [m.content for m in memory.get_messages(thread_id="t")] == ["still writable"]


def test_recall_refuses_a_resource_that_is_not_an_id(tmp_path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options={"semantic_recall": True})
    assert memory.recall_index is not None
    for bad in ({"$ne": "B"}, None, 7, ""):
        with pytest.raises(ConfigurationError, match="resource_id"):
            memory.recall_index.search("hello", resource_id=bad)  # type: ignore[arg-type]


def test_memory_refuses_a_storage_that_is_not_one(tmp_path) -> None:
    from langgraph.store.memory import InMemoryStore

    with pytest.raises(ConfigurationError, match=r"SQLiteStorage\('x.db'\)"):
        Memory(storage="x.db")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="InMemoryStore"):
        Memory(storage=InMemoryStore())  # type: ignore[arg-type]
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("owner", [42, 4.2, True, ["alice"], {"id": "alice"}])
def test_a_non_string_owner_in_a_config_is_refused_not_stringified(owner) -> None:
    from langchain_mastra_memory import SemanticRecall, WorkingMemory

    memory = Memory(storage=SQLiteStorage(":memory:"), options={"semantic_recall": True})
    recall = SemanticRecall(storage=memory.storage, vector=memory.vector, embedder=memory.embedder)
    config = {"configurable": {"thread_id": "t1", "resource_id": owner}}
    with pytest.raises(ConfigurationError, match="resource_id must be a non-empty string"):
        recall.invoke([HumanMessage("hi")], config)
    with pytest.raises(ConfigurationError, match="resource_id must be a non-empty string"):
        recall.process([HumanMessage("hi")], thread_id="t1", resource_id=owner)
    with pytest.raises(ConfigurationError, match="resource_id must be a non-empty string"):
        WorkingMemory(memory.storage).invoke([], config)
    with pytest.raises(ConfigurationError, match="user_id must be a non-empty string"):
        memory.as_runnable().invoke({"input": "hi"}, {"configurable": {"thread_id": "t1",
                                                                        "user_id": owner}})  # fmt: skip
    assert memory.get_thread("t1") is None  # nothing was created for "42"
