"""A run whose checkpoint is not written leaves memory as the state the graph resumes from.

The database fails while a turn's checkpoint is written (here LangGraph's own `SqliteSaver`
refuses that put once, as a disk or a server outage would), with the checkpoints written
at each step or only when the run ends (LangGraph's ``durability``); the run raises, the client sends
the same input again, and the model answers anew. Memory must hold what the state holds: the
question and the second answer, not the first answer the failed run produced.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from helpers import listed_messages
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.testing import strict_model


class FailsOnceWithAReply(SqliteSaver):
    """LangGraph's SQLite saver, failing the first put whose state holds an AI reply, after a
    moment (a server timing out): meanwhile the run goes on (LangGraph writes checkpoints in
    the background by default), and the middleware's `after_model` runs."""

    failed = False
    storage: Any = None  # memory's, to read a list it keeps for a checkpoint

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        thread_id = config["configurable"]["thread_id"]
        messages = listed_messages(checkpoint, self.storage, thread_id)
        if not self.failed and any(isinstance(m, AIMessage) for m in messages):
            FailsOnceWithAReply.failed = True
            time.sleep(0.5)
            raise sqlite3.OperationalError("disk I/O error")
        return super().put(config, checkpoint, metadata, new_versions)


def agent_with(shape: str, memory: Memory, saver: Any) -> Any:
    model = strict_model(AIMessage("first answer"), AIMessage("second answer"))
    checkpointer = memory.checkpointer(saver)
    if shape == "middleware":
        from langchain.agents import create_agent

        return create_agent(model, middleware=[memory.middleware()], checkpointer=checkpointer)
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(
            model, [], pre_model_hook=memory.pre_model_hook(), checkpointer=checkpointer
        )


@pytest.mark.parametrize("durability", ["exit", "async", "sync"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("shape", ["middleware", "hook"])
def test_a_failed_runs_reply_is_not_kept(
    tmp_path: Path, shape: str, mode: str, durability: str
) -> None:
    FailsOnceWithAReply.failed = False
    path = tmp_path / "memory.db"
    memory = Memory(storage=SQLiteStorage(path))
    saver = FailsOnceWithAReply(sqlite3.connect(path, check_same_thread=False))
    saver.setup()
    saver.storage = memory.storage
    agent = agent_with(shape, memory, saver)
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    question = {"messages": [HumanMessage("Where is my passport?", id="q1")]}

    def run() -> Any:
        if mode == "async":
            return asyncio.run(agent.ainvoke(question, config, durability=durability))
        return agent.invoke(question, config, durability=durability)

    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        run()
    run()  # the client's retry of the same input
    state = [(type(m).__name__, m.content) for m in agent.get_state(config).values["messages"]]
    assert state == [("HumanMessage", "Where is my passport?"), ("AIMessage", "second answer")]
    stored = [(type(m).__name__, m.content) for m in memory.get_messages(thread_id="t1")]
    assert stored == state
