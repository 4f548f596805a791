"""MemoryCheckpointer, sync paths and mirroring (the conformance suite covers the async ones)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
from helpers import echo_graph, listed_messages
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from langchain_mastra_memory import (
    ConfigurationError,
    InvalidMessageError,
    Memory,
    MemoryCheckpointer,
    ResourceMismatchError,
    SQLiteStorage,
)

ALICE = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}


@pytest.mark.parametrize("inner", ["memory", "sqlite"])
def test_graph_turns_are_mirrored_once_each(tmp_path: Path, inner: str) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    saver = (
        InMemorySaver()
        if inner == "memory"
        else SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False))
    )
    app = echo_graph(memory.checkpointer(saver))
    app.invoke({"messages": [HumanMessage("one")]}, ALICE)
    app.invoke({"messages": [HumanMessage("two")]}, ALICE)
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "one",
        "echo: one",
        "two",
        "echo: two",
    ]
    assert memory.get_thread("t1").resource_id == "alice"
    state = app.get_state(ALICE)  # checkpoints still come from the inner saver
    assert [m.id for m in state.values["messages"]] == [
        m.id for m in memory.get_messages(thread_id="t1")
    ]


def test_default_saver_is_sqlite_on_the_same_file_and_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    app = echo_graph(Memory(storage=SQLiteStorage(path)).checkpointer())
    app.invoke({"messages": [HumanMessage("before restart")]}, ALICE)
    again = echo_graph(Memory(storage=SQLiteStorage(path)).checkpointer())  # a fresh "process"
    out = again.invoke({"messages": [HumanMessage("after restart")]}, ALICE)
    assert [m.content for m in out["messages"]] == [
        "before restart",
        "echo: before restart",
        "after restart",
        "echo: after restart",
    ]
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"checkpoints", "writes", "memory_messages"} <= tables


@pytest.mark.parametrize("mirror_deletes", [False, True])
def test_remove_messages_delete_only_when_asked(mirror_deletes: bool) -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    graph = StateGraph(MessagesState)

    def node(state):
        if state["messages"][-1].content == "forget":
            return {"messages": [RemoveMessage(id=m.id) for m in state["messages"][:2]]}
        return {"messages": [AIMessage("ok")]}

    graph.add_node("n", node)
    graph.add_edge(START, "n")
    saver = memory.checkpointer(InMemorySaver(), mirror_deletes=mirror_deletes)
    app = graph.compile(checkpointer=saver)
    app.invoke({"messages": [HumanMessage("keep?")]}, ALICE)
    app.invoke({"messages": [HumanMessage("forget")]}, ALICE)
    assert [m.content for m in app.get_state(ALICE).values["messages"]] == ["forget"]
    kept = ["forget"] if mirror_deletes else ["keep?", "ok", "forget"]  # memory keeps them
    assert [m.content for m in memory.get_messages(thread_id="t1")] == kept


def test_delete_thread_deletes_both(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    cp = memory.checkpointer(InMemorySaver())
    echo_graph(cp).invoke({"messages": [HumanMessage("x")]}, ALICE)
    cp.delete_thread("t1")
    assert memory.get_thread("t1") is None and cp.get_tuple(ALICE) is None


def test_owner_follows_the_resolution_rule() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    app = echo_graph(memory.checkpointer(InMemorySaver()))
    with pytest.raises(ConfigurationError, match="thread_id"):
        app.invoke({"messages": [HumanMessage("x")]}, {"configurable": {"resource_id": "a"}})
    app.invoke({"messages": [HumanMessage("x")]}, {"configurable": {"thread_id": "t9"}})
    assert memory.get_thread("t9").resource_id == "t9"  # the thread owns itself
    app.invoke(
        {"messages": [HumanMessage("x")]}, {"configurable": {"thread_id": "u", "user_id": "bo"}}
    )
    assert memory.get_thread("u").resource_id == "bo"
    other = Memory(storage=SQLiteStorage(":memory:"))
    with_default = echo_graph(other.checkpointer(InMemorySaver(), default_resource_id="anon"))
    with_default.invoke({"messages": [HumanMessage("x")]}, {"configurable": {"thread_id": "t9"}})
    assert other.get_thread("t9").resource_id == "anon"
    assert other.default_resource_id == "anon"  # so the hook and the middleware agree
    with pytest.raises(ConfigurationError, match="disagrees"):
        other.checkpointer(InMemorySaver(), default_resource_id="someone-else")


def test_a_thread_of_another_resource_is_refused_and_nothing_written() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    inner = InMemorySaver()
    app = echo_graph(memory.checkpointer(inner))
    app.invoke({"messages": [HumanMessage("mine")]}, ALICE)
    mallory = {"configurable": {"thread_id": "t1", "resource_id": "mallory"}}
    before = len(list(inner.list(None)))
    with pytest.raises(ResourceMismatchError):
        app.invoke({"messages": [HumanMessage("theirs")]}, mallory)
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["mine", "echo: mine"]
    assert len(list(inner.list(None))) == before  # the inner saver did not write either


def test_non_message_values_in_the_messages_channel() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    inner = InMemorySaver()
    cp = memory.checkpointer(inner)
    from langgraph.checkpoint.base import empty_checkpoint

    for bad in (["not a message"], "a string", {"k": 1}):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": bad}
        with pytest.raises(InvalidMessageError):
            cp.put(
                {"configurable": {"thread_id": "t1", "resource_id": "alice", "checkpoint_ns": ""}},
                checkpoint,
                {},
                {},
            )
    assert list(inner.list(None)) == [] and memory.get_thread("t1") is None


def test_a_state_without_messages_passes_through() -> None:
    from typing import TypedDict

    class Counter(TypedDict):
        n: int

    memory = Memory(storage=SQLiteStorage(":memory:"))
    graph = StateGraph(Counter)
    graph.add_node("inc", lambda s: {"n": s["n"] + 1})
    graph.add_edge(START, "inc")
    app = graph.compile(checkpointer=memory.checkpointer(InMemorySaver()))
    assert app.invoke({"n": 1}, ALICE) == {"n": 2}
    # no messages mirrored, but the owner is recorded so that reads can be checked
    assert memory.get_thread("t1").resource_id == "alice"
    assert memory.get_messages(thread_id="t1") == []
    with pytest.raises(ResourceMismatchError):
        app.get_state({"configurable": {"thread_id": "t1", "resource_id": "mallory"}})


class FailingSaver(InMemorySaver):
    """A real saver whose storage fails on put."""

    def put(self, *args, **kwargs):
        raise OSError("disk full")


def test_an_inner_saver_that_raises_surfaces_and_memory_is_untouched() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    app = echo_graph(MemoryCheckpointer(memory, FailingSaver()))
    with pytest.raises(OSError, match="disk full"):
        app.invoke({"messages": [HumanMessage("x")]}, ALICE)
    assert memory.get_thread("t1") is None


class SaverWaitingForMemory(InMemorySaver):
    """A real saver whose write of a checkpoint holding new turns waits (boundedly) until memory
    holds them: it returns only if the adapter saves the turns while the saver writes."""

    def __init__(self, memory: Memory) -> None:
        super().__init__()
        self.memory, self.saw_turns_saved = memory, []

    def _wait(self, checkpoint) -> None:
        newest = (listed_messages(checkpoint, self.memory.storage, "t1") or [None])[-1]
        if newest is not None and checkpoint["channel_versions"]:
            deadline = threading.Event()
            for _ in range(200):  # up to 10 s, then the write goes on and the test fails
                if self.memory.storage.get_messages_by_id([newest.id], resource_id="alice"):
                    self.saw_turns_saved.append(True)
                    return
                deadline.wait(0.05)
            self.saw_turns_saved.append(False)

    def put(self, config, checkpoint, metadata, new_versions):
        self._wait(checkpoint)
        return super().put(config, checkpoint, metadata, new_versions)

    async def aput(self, config, checkpoint, metadata, new_versions):
        await asyncio.to_thread(self._wait, checkpoint)
        return InMemorySaver.put(self, config, checkpoint, metadata, new_versions)  # no 2nd wait


def test_new_turns_are_saved_while_the_saver_writes(call) -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    saver = SaverWaitingForMemory(memory)
    app = echo_graph(memory.checkpointer(saver))
    call(app, "invoke", {"messages": [HumanMessage("one")]}, ALICE)
    call(app, "invoke", {"messages": [HumanMessage("two")]}, ALICE)
    assert saver.saw_turns_saved and all(saver.saw_turns_saved)
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "one", "echo: one", "two", "echo: two",
    ]  # fmt: skip


class SaverFailingOnce(InMemorySaver):
    """A real saver whose storage fails once, on the checkpoint holding `fail_on`."""

    def __init__(self, memory: Memory) -> None:
        super().__init__()
        self.memory = memory
        self.fail_on: str | None = None

    def _check(self, checkpoint) -> None:
        messages = listed_messages(checkpoint, self.memory.storage, "t1")
        if self.fail_on and any(m.content == self.fail_on for m in messages):
            self.fail_on = None
            raise OSError("disk full")

    def put(self, config, checkpoint, metadata, new_versions):
        self._check(checkpoint)
        return super().put(config, checkpoint, metadata, new_versions)

    async def aput(self, config, checkpoint, metadata, new_versions):
        await asyncio.to_thread(self._check, checkpoint)  # (it reads memory's storage)
        return InMemorySaver.put(self, config, checkpoint, metadata, new_versions)


def test_turns_saved_beside_a_checkpoint_the_saver_refused_are_taken_back(call) -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    saver = SaverFailingOnce(memory)
    app = echo_graph(memory.checkpointer(saver))
    call(app, "invoke", {"messages": [HumanMessage("one")]}, ALICE)
    saver.fail_on = "two"
    with pytest.raises(OSError, match="disk full"):
        call(app, "invoke", {"messages": [HumanMessage("two")]}, ALICE)
    held = [m.content for m in memory.get_messages(thread_id="t1")]
    assert held == ["one", "echo: one"]  # the refused checkpoint's turn is not in memory
    call(app, "invoke", {"messages": [HumanMessage("two")]}, ALICE)  # the retry
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "one", "echo: one", "two", "echo: two",
    ]  # fmt: skip
    assert [m.id for m in app.get_state(ALICE).values["messages"]] == [
        m.id for m in memory.get_messages(thread_id="t1")
    ]


async def test_async_graph_with_a_sync_only_saver(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    app = echo_graph(memory.checkpointer())  # SqliteSaver: async delegates to a worker thread
    await app.ainvoke({"messages": [HumanMessage("async")]}, ALICE)
    assert [m.content for m in await memory.aget_messages(thread_id="t1")] == [
        "async",
        "echo: async",
    ]


# -- a turn reads back nothing this process wrote ---------------------------------------------------
class CountingStorage(SQLiteStorage):
    """The real SQLite storage, counting the id look-ups the mirror makes."""

    look_ups = 0

    def get_messages_by_id(self, *args, **kwargs):
        type(self).look_ups += 1
        return super().get_messages_by_id(*args, **kwargs)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_mirrored_turn_reads_back_nothing_it_saved(tmp_path: Path, durability: str) -> None:
    memory = Memory(storage=CountingStorage(tmp_path / "m.db"))
    saver = SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False))
    app = echo_graph(memory.checkpointer(saver))
    app.invoke({"messages": [HumanMessage("one")]}, ALICE, durability=durability)
    CountingStorage.look_ups = 0
    for n in range(30):  # the step's writes may reach the checkpointer after its checkpoint
        app.invoke({"messages": [HumanMessage(f"turn {n}")]}, ALICE, durability=durability)
    assert CountingStorage.look_ups == 0
    assert len(memory.get_messages(thread_id="t1")) == 62


def rewriting_graph(checkpointer):
    """A node replying, then another replacing that reply by id (ids unique per thread)."""

    def draft(state: MessagesState) -> dict:
        return {"messages": [AIMessage("draft", id=f"reply-{state['messages'][0].content}")]}

    def final(state: MessagesState) -> dict:
        return {"messages": [AIMessage("final", id=f"reply-{state['messages'][0].content}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("draft", draft)
    graph.add_node("final", final)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "final")
    return graph.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_a_node_rewriting_a_saved_message_by_id_updates_it(tmp_path: Path, durability: str) -> None:
    # with "async" durability LangGraph may hand over the rewrite before the checkpoint that
    # saves the draft: the next checkpoint then carries the rewrite
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    saver = SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False))
    app = rewriting_graph(memory.checkpointer(saver))
    for n in range(8):
        config = {"configurable": {"thread_id": f"t{n}", "resource_id": "alice"}}
        app.invoke({"messages": [HumanMessage(f"q{n}")]}, config, durability=durability)
        stored = memory.get_messages(thread_id=f"t{n}")
        assert [(m.id, m.content) for m in stored[1:]] == [(f"reply-q{n}", "final")]


class SaverFailingWithMemory(InMemorySaver):
    """A real saver that fails on the checkpoint holding `fail_on` once memory has saved its turn,
    and leaves memory's SQLite file locked by another connection (as a process holding a long
    write would): the adapter's take-back of the turn fails too."""

    def __init__(self, memory: Memory, path: Path) -> None:
        super().__init__()
        self.memory, self.path = memory, path
        self.fail_on: str | None = None
        self.lock: sqlite3.Connection | None = None

    def _check(self, checkpoint) -> None:
        messages = listed_messages(checkpoint, self.memory.storage, "t1")
        if not (self.fail_on and any(m.content == self.fail_on for m in messages)):
            return
        for _ in range(200):  # until memory holds the turn (it saves while the saver writes)
            if self.memory.storage.get_messages_by_id([messages[-1].id], resource_id="alice"):
                break
            threading.Event().wait(0.05)
        self.fail_on = None
        self.lock = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.lock.execute("BEGIN EXCLUSIVE")
        raise OSError("disk full")

    def put(self, config, checkpoint, metadata, new_versions):
        self._check(checkpoint)
        return super().put(config, checkpoint, metadata, new_versions)

    async def aput(self, config, checkpoint, metadata, new_versions):
        await asyncio.to_thread(self._check, checkpoint)
        return InMemorySaver.put(self, config, checkpoint, metadata, new_versions)


def test_a_turn_memory_could_not_take_back_leaves_at_the_next_checkpoint(
    call, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db", busy_timeout=0.2))
    saver = SaverFailingWithMemory(memory, tmp_path / "m.db")
    app = echo_graph(memory.checkpointer(saver))
    call(app, "invoke", {"messages": [HumanMessage("one")]}, ALICE)
    saver.fail_on = "two"
    with pytest.raises(OSError, match="disk full"):
        call(app, "invoke", {"messages": [HumanMessage("two")]}, ALICE)
    assert "could not mirror" in caplog.text  # the take-back failed, warned about
    assert saver.lock is not None
    saver.lock.rollback()
    saver.lock.close()
    held = [m.content for m in memory.get_messages(thread_id="t1")]
    assert held == ["one", "echo: one", "two"]  # still there, for now
    call(app, "invoke", {"messages": [HumanMessage("three")]}, ALICE)  # not a retry
    state = [m.id for m in app.get_state(ALICE).values["messages"]]
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "one", "echo: one", "three", "echo: three",
    ]  # fmt: skip
    assert [m.id for m in memory.get_messages(thread_id="t1")] == state
