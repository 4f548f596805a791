"""The thread API: create, get, list (filters, paging, order), update, delete (cascade), clone."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import (
    ConfigurationError,
    Memory,
    ResourceMismatchError,
    ThreadExistsError,
    ThreadNotFoundError,
)


def test_create_and_get(memory: Memory, call) -> None:
    thread = call(
        memory, "create_thread", resource_id="alice", thread_id="t1", title="Hi", metadata={"k": 1}
    )
    assert (thread.id, thread.resource_id, thread.title, thread.metadata) == (
        "t1",
        "alice",
        "Hi",
        {"k": 1},
    )
    assert call(memory, "get_thread", "t1") == thread
    assert call(memory, "get_thread", "t1", resource_id="bob") is None
    assert call(memory, "get_thread", "nope") is None
    generated = call(memory, "create_thread", resource_id="alice")
    assert generated.id and generated.id != "t1"


def test_get_threads_reads_those_that_exist_at_once(memory: Memory, call) -> None:
    storage = memory.storage
    for thread_id, title in (("t1", "Cats"), ("t2", None), ("t3", "Dogs")):
        call(storage, "create_thread", thread_id=thread_id, resource_id="alice", title=title)
    found = call(storage, "get_threads", ["t3", "nope", "t1", "t3", "t2"])
    assert {i: t.title for i, t in found.items()} == {"t3": "Dogs", "t1": "Cats", "t2": None}
    assert found["t1"] == call(storage, "get_thread", "t1")
    assert call(storage, "get_threads", []) == {}
    many = [f"x{i}" for i in range(1200)]  # more ids than one SQLite statement binds
    for thread_id in many[::100]:
        storage.create_thread(thread_id=thread_id, resource_id="bob")
    assert sorted(call(storage, "get_threads", many)) == sorted(many[::100])
    with pytest.raises(ConfigurationError):
        call(storage, "get_threads", ["t1", ""])


def test_create_twice_is_refused(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1", title="original")
    with pytest.raises(ThreadExistsError):
        memory.create_thread(resource_id="bob", thread_id="t1", title="hijack")
    assert memory.get_thread("t1").resource_id == "alice"


@pytest.mark.parametrize("bad", ["", "   ", None, 5])
def test_ids_must_be_non_empty_strings(memory: Memory, bad) -> None:
    with pytest.raises(ConfigurationError):
        memory.create_thread(resource_id=bad, thread_id="t1")
    with pytest.raises(ConfigurationError):
        memory.create_thread(resource_id="alice", thread_id=bad or " ")


def test_list_filters_pages_and_orders(memory: Memory, call) -> None:
    for i in range(5):
        call(
            memory,
            "create_thread",
            resource_id="alice",
            thread_id=f"a{i}",
            metadata={"topic": "x" if i % 2 else "y", "n": i},
        )
    call(memory, "create_thread", resource_id="bob", thread_id="b0", metadata={"topic": "x"})
    oldest_first = call(
        memory, "list_threads", resource_id="alice", order_by="created_at", descending=False
    )
    assert [t.id for t in oldest_first] == ["a0", "a1", "a2", "a3", "a4"]
    page = call(
        memory,
        "list_threads",
        resource_id="alice",
        order_by="created_at",
        descending=False,
        limit=2,
        offset=2,
    )
    assert [t.id for t in page] == ["a2", "a3"]
    xs = call(memory, "list_threads", resource_id="alice", metadata={"topic": "x"})
    assert sorted(t.id for t in xs) == ["a1", "a3"]
    assert [t.id for t in call(memory, "list_threads", metadata={"n": 4})] == ["a4"]
    assert sorted(t.id for t in call(memory, "list_threads", metadata={"topic": "x"})) == [
        "a1",
        "a3",
        "b0",
    ]
    # touching a thread moves it to the front of the default order (updated_at, newest first)
    call(memory, "save_messages", [HumanMessage("bump")], thread_id="a0", resource_id="alice")
    assert call(memory, "list_threads", resource_id="alice")[0].id == "a0"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"metadata": {"x') OR 1=1 --": 1}},
        {"metadata": {'a"b': 1}},
        {"order_by": "id; DROP TABLE memory_threads"},
        {"limit": -1},
        {"offset": -3},
    ],
)
def test_list_refuses_unsafe_or_invalid_arguments(memory: Memory, kwargs) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    with pytest.raises(ConfigurationError):
        memory.list_threads(**kwargs)
    assert [t.id for t in memory.list_threads()] == ["t1"]


def test_update_merges_metadata_and_sets_title(memory: Memory, call) -> None:
    call(
        memory,
        "create_thread",
        resource_id="alice",
        thread_id="t1",
        title="old",
        metadata={"a": 1, "b": 2},
    )
    updated = call(memory, "update_thread", "t1", metadata={"b": 3, "c": 4})
    assert updated.metadata == {"a": 1, "b": 3, "c": 4} and updated.title == "old"
    assert call(memory, "update_thread", "t1", title="new").title == "new"
    assert updated.updated_at >= updated.created_at
    with pytest.raises(ResourceMismatchError):
        call(memory, "update_thread", "t1", title="stolen", resource_id="bob")
    with pytest.raises(ThreadNotFoundError):
        call(memory, "update_thread", "ghost", title="x")
    assert memory.get_thread("t1").title == "new"


def test_delete_cascades_to_messages(memory: Memory, call) -> None:
    call(memory, "create_thread", resource_id="alice", thread_id="t1")
    saved = call(
        memory,
        "save_messages",
        [HumanMessage("a"), AIMessage("b")],
        thread_id="t1",
        resource_id="alice",
    )
    with pytest.raises(ResourceMismatchError):
        call(memory, "delete_thread", "t1", resource_id="bob")
    assert call(memory, "delete_thread", "t1", resource_id="alice") is True
    assert call(memory, "delete_thread", "t1") is False
    assert memory.get_thread("t1") is None
    assert memory.storage.get_messages_by_id([m.id for m in saved]) == []


def test_clone_copies_messages_with_new_ids(memory: Memory, call) -> None:
    call(
        memory,
        "create_thread",
        resource_id="alice",
        thread_id="t1",
        title="src",
        metadata={"k": "v"},
    )
    saved = call(
        memory,
        "save_messages",
        [HumanMessage("a"), AIMessage("b")],
        thread_id="t1",
        resource_id="alice",
    )
    clone = call(memory, "clone_thread", "t1", new_thread_id="t2", resource_id="alice")
    assert clone.resource_id == "alice" and clone.title == "src"
    assert clone.metadata["k"] == "v" and clone.metadata["clone"]["source_thread_id"] == "t1"
    copied = call(memory, "get_messages", thread_id="t2")
    assert [m.content for m in copied] == ["a", "b"]
    assert {m.id for m in copied}.isdisjoint({m.id for m in saved})
    # the clone is independent of its source
    memory.delete_thread("t1")
    assert [m.content for m in memory.get_messages(thread_id="t2")] == ["a", "b"]


def test_clone_refuses_wrong_resource_and_taken_ids(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.create_thread(resource_id="alice", thread_id="t2")
    with pytest.raises(ResourceMismatchError):
        memory.clone_thread("t1", new_thread_id="t3", resource_id="bob")
    with pytest.raises(ThreadExistsError):
        memory.clone_thread("t1", new_thread_id="t2")
    with pytest.raises(ThreadNotFoundError):
        memory.clone_thread("ghost", new_thread_id="t4")
    assert sorted(t.id for t in memory.list_threads()) == ["t1", "t2"]


def test_resources_are_paged_newest_first_with_their_totals(storage, call) -> None:
    """`page_resources` (the explorer's home page): one query, the same answer as the listing
    it replaced (`MemoryStorage.page_resources`, the Python fallback)."""
    from langchain_mastra_memory import MemoryStorage

    for n, owner in enumerate(["ann", "bob_1", "bobx1", "100%", "carol"]):
        for t in range(n + 1):
            storage.create_thread(thread_id=f"{owner}-{t}", resource_id=owner)
        storage.save_messages(
            [HumanMessage("hello " * (n + 1))] * (n + 1), thread_id=f"{owner}-0", resource_id=owner
        )
    storage.update_thread("ann-0", title="touched last", resource_id="ann")
    rows, total = call(storage, "page_resources")
    assert total == 5 and rows[0].id == "ann" and rows[0].threads == 1
    assert [r.id for r in rows[1:]] == ["carol", "100%", "bobx1", "bob_1"]
    assert {r.id: r.messages for r in rows} == {
        "ann": 1,
        "bob_1": 2,
        "bobx1": 3,
        "100%": 4,
        "carol": 5,
    }
    assert all(r.tokens > 0 for r in rows)
    assert rows == MemoryStorage.page_resources(storage)[0]  # as the fallback answers
    second, _ = call(storage, "page_resources", offset=2, limit=2)
    assert [r.id for r in second] == [r.id for r in rows[2:4]]
    assert [r.id for r in call(storage, "page_resources", query="B_1")[0]] == ["bob_1"]  # _ literal
    assert [r.id for r in call(storage, "page_resources", query="0%")[0]] == ["100%"]
    assert call(storage, "page_resources", query="zzz") == ([], 0)
