"""A new thread's first checkpoints, put at once by a graph and its subgraph, all kept.

LangGraph puts a subgraph's checkpoints from its own executor while the parent's put is still
in flight. Both puts find the thread unheld by memory; the first one makes it and writes, and
the second must not then purge the first one's checkpoint as an earlier owner's orphan. The
saver below stretches the window the race needs.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.integrations.checkpointer.owners import FirstPuts

pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_mastra_memory.errors.VolatileCheckpointsWarning"
)


class RacingSaver(InMemorySaver):
    """An `InMemorySaver` whose reads of a thread's latest root checkpoint (what a purge of
    orphans reads) linger while the thread has none, so each put reading it overlaps the
    others: the subgraph's owner read lands inside the parent's purge, and its own purge
    read ends after the parent's write."""

    def get_tuple(self, config: Any) -> Any:
        configurable = config["configurable"]
        latest = not configurable.get("checkpoint_ns") and not configurable.get("checkpoint_id")
        if latest and super().get_tuple(config) is None:
            time.sleep(0.2)
        return super().get_tuple(config)

    async def aget_tuple(self, config: Any) -> Any:
        return await asyncio.to_thread(self.get_tuple, config)

    async def aput(self, config: Any, *args: Any) -> Any:
        return self.put(config, *args)


def graph(checkpointer: Any) -> Any:
    inner = StateGraph(MessagesState)
    inner.add_node("note", lambda s: {"messages": [AIMessage("note", id="n1")]})
    inner.add_edge(START, "note")
    outer = StateGraph(MessagesState)
    outer.add_node("inner", inner.compile())
    outer.add_node("reply", lambda s: {"messages": [AIMessage("reply", id="a1")]})
    outer.add_edge(START, "inner")
    outer.add_edge("inner", "reply")
    return outer.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_subgraph_s_first_put_keeps_the_parent_s(mode: str, tmp_path: Path) -> None:
    saver = RacingSaver()
    app = graph(Memory(storage=SQLiteStorage(tmp_path / "m.db")).checkpointer(saver))
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    turn = {"messages": [HumanMessage("hi", id="u1")]}
    if mode == "async":
        asyncio.run(app.ainvoke(turn, config))
    else:
        app.invoke(turn, config)
    root = [(s.metadata["source"], s.metadata["step"]) for s in app.get_state_history(config)]
    assert root == [("loop", 2), ("loop", 1), ("loop", 0), ("input", -1)]
    every = list(saver.list({"configurable": {"thread_id": "t1"}}))
    assert len(every) == len(root) + 3  # and the subgraph's input, step 0 and step 1
    assert [m.id for m in app.get_state(config).values["messages"]] == ["u1", "n1", "a1"]


def test_first_puts_let_one_holder_in_at_a_time() -> None:
    births, order = FirstPuts(), []
    births.hold("t1")

    def second() -> None:
        births.hold("t1")
        order.append("second")
        births.release("t1")

    worker = threading.Thread(target=second)
    worker.start()
    worker.join(timeout=0.2)
    assert worker.is_alive() and births.waiting("t1") == 2  # blocked behind the first
    births.hold("t2")  # another thread id is not
    births.release("t2")
    order.append("first")
    births.release("t1")
    worker.join(timeout=5)
    assert order == ["first", "second"] and births.waiting("t1") == 0


def test_an_event_loop_waits_without_blocking_and_a_cancelled_wait_lets_go() -> None:
    births = FirstPuts()

    async def main() -> list[str]:
        order: list[str] = []
        births.hold("t1")
        waiter = asyncio.create_task(births.ahold("t1"))
        await asyncio.sleep(0.05)
        order.append("the loop ran on")  # the waiter polls, so this ran
        cancelled = asyncio.create_task(births.ahold("t1"))
        await asyncio.sleep(0.01)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert births.waiting("t1") == 2
        births.release("t1")
        await waiter
        order.append("held")
        births.release("t1")
        return order

    assert asyncio.run(main()) == ["the loop ran on", "held"]
    assert births.waiting("t1") == 0
