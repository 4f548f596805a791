"""Messages in LangGraph's ``DeltaChannel``, through ``memory.checkpointer()``.

A delta channel stores the list only at a snapshot every ``snapshot_frequency`` updates; the
checkpoints in between hold nothing for it, and the saver's ``get_delta_channel_history``
rebuilds it. Memory mirrors it as it mirrors a list channel: any cadence, any saver, every
durability mode, threads crossing snapshots, reads of checkpoints that hold only deltas, a
read-only turn, a value it cannot read (a clear error naming the channel, nothing saved).
The graph patterns (compaction, ``RemoveMessage``, time travel, interrupts, ``update_state``)
run over both channels in ``test_graph_conversation.py``; ownership in the isolation matrix.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langchain_mastra_memory import InvalidMessageError, Memory, MemoryStorage, SQLiteStorage
from tests.helpers import delta_state, echo_graph

ALICE = {"configurable": {"thread_id": "t", "resource_id": "alice"}}


def contents(messages: list) -> list[str]:
    return [str(m.content) for m in messages]


@pytest.mark.parametrize("frequency", [1, 2, 7, 100])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_cadence_is_mirrored_once_in_order(
    storage: MemoryStorage, frequency: int, mode: str
) -> None:
    memory = Memory(storage=storage)  # its default saver: SQLite's, or PostgreSQL's
    graph = echo_graph(memory.checkpointer(), delta_state(frequency))
    for i in range(25):
        turn = {"messages": [HumanMessage(f"q{i}")]}
        if mode == "sync":
            graph.invoke(turn, ALICE)
        else:
            asyncio.run(graph.ainvoke(turn, ALICE))
    expected = [m for i in range(25) for m in (f"q{i}", f"echo: q{i}")]
    assert contents(memory.get_messages(thread_id="t")) == expected
    assert contents(graph.get_state(ALICE).values["messages"]) == expected


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_every_durability_mode(tmp_path: Any, durability: str) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    graph = echo_graph(memory.checkpointer(), delta_state(3))
    for i in range(10):
        graph.invoke({"messages": [HumanMessage(f"q{i}")]}, ALICE, durability=durability)
    expected = [m for i in range(10) for m in (f"q{i}", f"echo: q{i}")]
    assert contents(memory.get_messages(thread_id="t")) == expected


def test_a_fresh_checkpointer_reads_a_checkpoint_that_holds_only_deltas(tmp_path: Any) -> None:
    """Another process (a new `Memory`: no cache) continues from deltas past a snapshot, and
    the one before it carries on after: every message once."""
    path = tmp_path / "m.db"
    first = echo_graph(Memory(storage=SQLiteStorage(path)).checkpointer(), delta_state(4))
    for i in range(5):  # 10 updates: a snapshot at 4 and 8, deltas after
        first.invoke({"messages": [HumanMessage(f"q{i}")]}, ALICE)
    latest = first.checkpointer.saver.get_tuple(
        {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    )
    assert "messages" not in latest.checkpoint["channel_values"]  # deltas only, here
    memory = Memory(storage=SQLiteStorage(path))
    second = echo_graph(memory.checkpointer(), delta_state(4))
    assert contents(second.get_state(ALICE).values["messages"])[-1] == "echo: q4"
    for i in range(5, 8):
        second.invoke({"messages": [HumanMessage(f"q{i}")]}, ALICE)
    first.invoke({"messages": [HumanMessage("q8")]}, ALICE)
    expected = [m for i in range(9) for m in (f"q{i}", f"echo: q{i}")]
    assert contents(memory.get_messages(thread_id="t")) == expected


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_history_is_the_savers_own_for_the_owner(tmp_path: Any, mode: str) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    graph = echo_graph(memory.checkpointer(), delta_state(5))
    for i in range(4):
        graph.invoke({"messages": [HumanMessage(f"q{i}")]}, ALICE)
    checkpointer = graph.checkpointer
    if mode == "sync":
        history = checkpointer.get_delta_channel_history(config=ALICE, channels=["messages"])
    else:
        history = asyncio.run(
            checkpointer.aget_delta_channel_history(config=ALICE, channels=["messages"])
        )
    bare = checkpointer.saver.get_delta_channel_history(
        config={"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, channels=["messages"]
    )
    assert history == bare and history["messages"]["writes"]


def test_a_read_only_turn_is_never_stored_later(tmp_path: Any) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    graph = echo_graph(memory.checkpointer(), delta_state(2))
    peek = {"configurable": {**ALICE["configurable"], "memory_options": {"read_only": True}}}
    graph.invoke({"messages": [HumanMessage("one")]}, ALICE)
    graph.invoke({"messages": [HumanMessage("peek")]}, peek)
    for text in ("two", "three"):
        graph.invoke({"messages": [HumanMessage(text)]}, ALICE)
    assert contents(memory.get_messages(thread_id="t")) == [
        "one", "echo: one", "two", "echo: two", "three", "echo: three"
    ]  # fmt: skip
    assert "peek" in contents(graph.get_state(ALICE).values["messages"])


def _keep_anything(state: list, writes: list) -> list:
    return [*(state or []), *(x for w in writes for x in (w if isinstance(w, list) else [w]))]


class Loose(TypedDict):
    messages: Annotated[list, DeltaChannel(_keep_anything, snapshot_frequency=2)]


@pytest.mark.parametrize("bad", [42, {"role": "nobody", "no": "content"}])
def test_a_value_memory_cannot_read_is_a_clear_error_and_nothing_is_saved(bad: Any) -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    saver = InMemorySaver()
    builder = StateGraph(Loose)
    builder.add_node("reply", lambda s: {"messages": [AIMessage("fine"), bad]})
    builder.add_edge(START, "reply")
    graph = builder.compile(checkpointer=memory.checkpointer(saver))
    with pytest.raises(InvalidMessageError, match="'messages' channel \\(a DeltaChannel"):
        graph.invoke({"messages": [HumanMessage("hi")]}, ALICE)
    # the checkpoint holding it was refused before the saver wrote it, and none of it stored
    assert "fine" not in contents(memory.get_messages(thread_id="t"))
    assert all("fine" not in repr(c.checkpoint) for c in saver.list(None))


def test_a_thread_that_changes_hands_goes_on_for_its_new_owner_only(tmp_path: Any) -> None:
    """The delta value this process cached for alice's thread is dropped with the transfer:
    bob goes on from the graph's state, each message stored once, and alice is refused."""
    from langchain_mastra_memory import ResourceMismatchError

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    graph = echo_graph(memory.checkpointer(), delta_state(3))
    for i in range(4):
        graph.invoke({"messages": [HumanMessage(f"q{i}")]}, ALICE)
    memory.transfer_thread("t", to_resource_id="bob", resource_id="alice")
    bob = {"configurable": {"thread_id": "t", "resource_id": "bob"}}
    graph.invoke({"messages": [HumanMessage("q4")]}, bob)
    expected = [m for i in range(5) for m in (f"q{i}", f"echo: q{i}")]
    assert contents(memory.get_messages(thread_id="t", resource_id="bob")) == expected
    with pytest.raises(ResourceMismatchError):
        graph.invoke({"messages": [HumanMessage("mine?")]}, ALICE)
