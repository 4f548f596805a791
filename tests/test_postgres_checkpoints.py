"""`memory.checkpointer()` over PostgreSQL keeps the graph's state in PostgreSQL.

With no saver given, it wraps LangGraph's `PostgresSaver` on memory's own database and schema:
a restarted process (here: another process) reads every earlier checkpoint of a thread, two
processes continue each other's threads, and the state survives what memory survives. An
`InMemorySaver` beside a persistent memory is warned about.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_mastra_memory import (
    Memory,
    PostgresStorage,
    SQLiteStorage,
    VolatileCheckpointsWarning,
)
from langchain_mastra_memory.testing import strict_model

DSN = os.environ.get("LMM_TEST_POSTGRES_DSN", "")

# one turn of `create_agent` + memory.middleware() + memory.checkpointer(), in a process of its
# own; prints the state's messages and how many checkpoints the thread has
TURN = textwrap.dedent(
    """
    import json, sys
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_mastra_memory import Memory, PostgresStorage
    from langchain_mastra_memory.testing import strict_model

    dsn, schema, text, reply = sys.argv[1:5]
    memory = Memory(storage=PostgresStorage(dsn, schema=schema))
    agent = create_agent(strict_model(AIMessage(reply)), middleware=[memory.middleware()],
                         checkpointer=memory.checkpointer())
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    agent.invoke({"messages": [HumanMessage(text)]}, config)
    print(json.dumps({
        "state": [m.content for m in agent.get_state(config).values["messages"]],
        "checkpoints": len(list(agent.get_state_history(config))),
        "saver": type(memory.checkpointer().saver).__name__,
    }))
    memory.storage.close()
    """
)


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"cp_{uuid.uuid4().hex[:10]}"
    yield name
    storage = PostgresStorage(DSN, schema=name)
    storage.drop_schema()
    storage.close()


def turn_in_a_process(schema: str, text: str, reply: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", TURN, DSN, schema, text, reply],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.postgres
def test_processes_continue_each_others_threads(schema: str) -> None:
    first = turn_in_a_process(schema, "I moved to Lisbon.", "Noted.")
    assert first["saver"] == "PostgresSaver"
    second = turn_in_a_process(schema, "Where do I live?", "In Lisbon.")
    assert second["state"] == ["I moved to Lisbon.", "Noted.", "Where do I live?", "In Lisbon."]
    assert second["checkpoints"] > first["checkpoints"]  # every earlier one is still read
    memory = Memory(storage=PostgresStorage(DSN, schema=schema))  # and memory agrees
    try:
        stored = [m.content for m in memory.get_messages(thread_id="t1")]
        assert stored == second["state"]
    finally:
        memory.storage.close()


@pytest.mark.postgres
def test_the_default_saver_lives_in_memorys_schema(schema: str) -> None:
    from langchain.agents import create_agent

    memory = Memory(storage=PostgresStorage(DSN, schema=schema))
    try:
        agent = create_agent(strict_model(AIMessage("Hi.")), checkpointer=memory.checkpointer())
        config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        agent.invoke({"messages": [HumanMessage("Hello")]}, config)
        storage = memory.storage
        assert isinstance(storage, PostgresStorage)
        with storage._transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT count(*) FROM checkpoints WHERE thread_id = 't1'"
            ).fetchone()
        assert rows[0] > 0  # (the schema's own table: on the storage's search path)
        memory.delete_thread("t1")
        with storage._transaction(write=False) as conn:
            assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
    finally:
        memory.storage.close()


@pytest.mark.postgres
async def test_the_default_saver_serves_async_graphs(schema: str) -> None:
    from langchain.agents import create_agent

    memory = Memory(storage=PostgresStorage(DSN, schema=schema))
    try:
        agent = create_agent(
            strict_model(AIMessage("One."), AIMessage("Two.")),
            middleware=[memory.middleware()],
            checkpointer=memory.checkpointer(),
        )
        config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        await agent.ainvoke({"messages": [HumanMessage("First")]}, config)
        await agent.ainvoke({"messages": [HumanMessage("Second")]}, config)
        state = (await agent.aget_state(config)).values["messages"]
        assert [m.content for m in state] == ["First", "One.", "Second", "Two."]
        assert [m.content for m in await memory.aget_messages(thread_id="t1")] == [
            m.content for m in state
        ]
    finally:
        memory.storage.close()


def test_checkpoints_in_ram_beside_a_persistent_memory_are_warned_about(
    tmp_path: Path,
) -> None:
    with pytest.warns(VolatileCheckpointsWarning, match="lost at a restart"):
        Memory(storage=SQLiteStorage(tmp_path / "m.db")).checkpointer(InMemorySaver())
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", VolatileCheckpointsWarning)
        Memory(storage=SQLiteStorage(":memory:")).checkpointer()  # both in RAM: fine
        Memory(storage=SQLiteStorage(":memory:")).checkpointer(InMemorySaver())


HANGING_TURN = textwrap.dedent(
    """
    import sys, time
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_mastra_memory import Memory, PostgresStorage
    from langchain_mastra_memory.testing import ProviderStrictChatModel

    class Hangs(ProviderStrictChatModel):
        def _generate(self, messages, *args, **kwargs):
            print("in the model", flush=True)
            time.sleep(600)  # killed here

    dsn, schema = sys.argv[1:3]
    memory = Memory(storage=PostgresStorage(dsn, schema=schema))
    agent = create_agent(Hangs(responses=[AIMessage("never")]),
                         middleware=[memory.middleware()], checkpointer=memory.checkpointer())
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    agent.invoke({"messages": [HumanMessage("And my passport?")]}, config)
    """
)


@pytest.mark.postgres
def test_a_process_killed_mid_turn_leaves_state_and_memory_agreeing(schema: str) -> None:
    turn_in_a_process(schema, "I moved to Lisbon.", "Noted.")
    hanging = subprocess.Popen(
        [sys.executable, "-c", HANGING_TURN, DSN, schema],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert hanging.stdout is not None
        assert hanging.stdout.readline().strip() == "in the model"
    finally:
        hanging.kill()  # SIGKILL, mid-turn
        hanging.wait(30)
    after = turn_in_a_process(schema, "Where do I live?", "In Lisbon.")  # the restart
    memory = Memory(storage=PostgresStorage(DSN, schema=schema))
    try:
        stored = [m.content for m in memory.get_messages(thread_id="t1")]
    finally:
        memory.storage.close()
    assert stored == after["state"]
    assert after["state"][:2] == ["I moved to Lisbon.", "Noted."]
    assert after["state"][-2:] == ["Where do I live?", "In Lisbon."]
