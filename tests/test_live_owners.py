"""A live checkpointer answers for the thread's owner *now*: after a transfer in this process,
and after another process deleted the thread and another resource made the id its own.

The second party is real: the transfer goes through the same `Memory`, the delete and the new
owner's writes through a second Python process on the same database (SQLite file or
PostgreSQL schema) and the same checkpoint saver.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_mastra_memory import Memory, PostgresStorage, ResourceMismatchError, SQLiteStorage
from tests.helpers import echo_graph

ALICE = {"configurable": {"thread_id": "g-tx", "resource_id": "alice"}}
BOB = {"configurable": {"thread_id": "g-tx", "resource_id": "bob"}}


def contents(state: Any) -> list[str]:
    return [m.content for m in state.values.get("messages", [])]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_transfer_moves_the_live_graphs_answers_to_the_new_owner(storage: Any, mode: str) -> None:
    memory = Memory(storage=storage)
    graph = echo_graph(memory.checkpointer())
    graph.invoke({"messages": [HumanMessage("alice's secret: kq7731")]}, ALICE)
    assert "kq7731" in repr(contents(graph.get_state(ALICE)))
    memory.transfer_thread("g-tx", to_resource_id="bob", resource_id="alice")

    def state(config: dict) -> Any:
        if mode == "sync":
            return graph.get_state(config)
        return asyncio.run(graph.aget_state(config))

    with pytest.raises(ResourceMismatchError):
        state(ALICE)  # alice gave it away: she no longer reads it
    with pytest.raises(ResourceMismatchError):
        list(graph.get_state_history(ALICE))
    assert "kq7731" in repr(contents(state(BOB)))  # the new owner reads and continues it
    if mode == "sync":
        graph.invoke({"messages": [HumanMessage("bob here")]}, BOB)
    else:
        asyncio.run(graph.ainvoke({"messages": [HumanMessage("bob here")]}, BOB))
    assert [m.content for m in memory.get_messages(thread_id="g-tx", resource_id="bob")][-2:] == [
        "bob here",
        "echo: bob here",
    ]
    with pytest.raises(ResourceMismatchError):
        graph.invoke({"messages": [HumanMessage("alice again")]}, ALICE)


SECOND_PROCESS = textwrap.dedent(
    """
    import sqlite3
    import sys
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langchain_mastra_memory import Memory, PostgresStorage, SQLiteStorage
    from tests.helpers import echo_graph

    kind, where, schema, saver_file = sys.argv[1:5]
    storage = SQLiteStorage(where) if kind == "sqlite" else PostgresStorage(where, schema=schema)
    memory = Memory(storage=storage)
    saver = None if saver_file == "-" else SqliteSaver(sqlite3.connect(saver_file, check_same_thread=False))
    checkpointer = memory.checkpointer(saver)
    assert memory.delete_thread("g-tx", resource_id="alice")
    graph = echo_graph(checkpointer)
    bob = {"configurable": {"thread_id": "g-tx", "resource_id": "bob"}}
    graph.invoke({"messages": [HumanMessage("bob's own words: zz9081")]}, bob)
    storage.close()
    print("done")
    """
)


def other_process(*args: str) -> None:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0 and "done" in done.stdout, done.stderr[-3000:]


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_thread_deleted_and_taken_by_another_process_is_not_read_as_the_old_owners(
    tmp_path: Path, kind: str, mode: str
) -> None:
    """Alice's graph lives on in this process; another process deletes her thread and bob
    makes the id his and writes to it. Alice's next read is refused; bob's is his."""
    if kind == "sqlite":
        where, schema, saver_file = str(tmp_path / "memory.db"), "-", "-"
        storage: Any = SQLiteStorage(where)
        saver = None  # the default: LangGraph's SqliteSaver in memory's own file
    else:
        import uuid

        where, schema = os.environ["LMM_TEST_POSTGRES_DSN"], f"t_{uuid.uuid4().hex[:12]}"
        storage = PostgresStorage(where, schema=schema)
        saver_file = str(tmp_path / "checkpoints.db")  # one saver both processes reach
        saver = SqliteSaver(sqlite3.connect(saver_file, check_same_thread=False))
    try:
        memory = Memory(storage=storage)
        graph = echo_graph(memory.checkpointer(saver))
        graph.invoke({"messages": [HumanMessage("alice's secret: kq7731")]}, ALICE)
        assert "kq7731" in repr(contents(graph.get_state(ALICE)))  # her graph has seen it
        other_process(kind, where, schema, saver_file)

        def state(config: dict) -> Any:
            if mode == "sync":
                return graph.get_state(config)
            return asyncio.run(graph.aget_state(config))

        with pytest.raises(ResourceMismatchError):
            state(ALICE)  # not bob's messages under alice's name
        with pytest.raises(ResourceMismatchError):
            graph.invoke({"messages": [HumanMessage("alice writes")]}, ALICE)
        seen = contents(state(BOB))
        assert seen == ["bob's own words: zz9081", "echo: bob's own words: zz9081"]
        graph.invoke({"messages": [HumanMessage("bob again")]}, BOB)  # this process's mirror
        assert [m.content for m in memory.get_messages(thread_id="g-tx")] == [  # starts anew
            "bob's own words: zz9081",
            "echo: bob's own words: zz9081",
            "bob again",
            "echo: bob again",
        ]
    finally:
        if isinstance(storage, PostgresStorage):
            storage.drop_schema()
        storage.close()


TRANSFER_IN_ANOTHER_PROCESS = textwrap.dedent(
    """
    import sys
    from langchain_mastra_memory import Memory, PostgresStorage, SQLiteStorage

    kind, where, schema = sys.argv[1:4]
    storage = SQLiteStorage(where) if kind == "sqlite" else PostgresStorage(where, schema=schema)
    Memory(storage=storage).transfer_thread("g-tx", to_resource_id="bob", resource_id="alice")
    storage.close()
    print("done")
    """
)


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_thread_transferred_by_another_process_is_refused_to_the_old_owner_at_once(
    tmp_path: Path, kind: str, mode: str
) -> None:
    """Alice's graph has just read and written her thread (so its puts would follow a checked
    parent); another process gives the thread to bob. Alice's very next read and run are
    refused, and nothing of hers is written after the transfer; bob reads and continues."""
    if kind == "sqlite":
        where, schema = str(tmp_path / "memory.db"), "-"
        storage: Any = SQLiteStorage(where)
    else:
        import uuid

        where, schema = os.environ["LMM_TEST_POSTGRES_DSN"], f"t_{uuid.uuid4().hex[:12]}"
        storage = PostgresStorage(where, schema=schema)
    try:
        memory = Memory(storage=storage)
        graph = echo_graph(memory.checkpointer())
        graph.invoke({"messages": [HumanMessage("alice's secret: kq7731")]}, ALICE)
        before = graph.get_state(ALICE)  # a checked read of the latest checkpoint
        root = Path(__file__).resolve().parents[1]
        done = subprocess.run(
            [sys.executable, "-c", TRANSFER_IN_ANOTHER_PROCESS, kind, where, schema],
            capture_output=True, text=True, timeout=300, cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )  # fmt: skip
        assert done.returncode == 0 and "done" in done.stdout, done.stderr[-3000:]

        def run(method: str, *args: Any) -> Any:
            if mode == "sync":
                return getattr(graph, method)(*args)
            return asyncio.run(getattr(graph, "a" + method)(*args))

        with pytest.raises(ResourceMismatchError):
            run("get_state", ALICE)
        with pytest.raises(ResourceMismatchError):
            run("invoke", {"messages": [HumanMessage("alice writes")]}, ALICE)
        with pytest.raises(ResourceMismatchError):  # a fork of the checkpoint she last read
            run("update_state", before.config, {"messages": [HumanMessage("alice edits")]})
        state = run("get_state", BOB)
        assert contents(state) == ["alice's secret: kq7731", "echo: alice's secret: kq7731"]
        run("invoke", {"messages": [HumanMessage("bob here")]}, BOB)
        assert [m.content for m in memory.get_messages(thread_id="g-tx", resource_id="bob")] == [
            "alice's secret: kq7731",
            "echo: alice's secret: kq7731",
            "bob here",
            "echo: bob here",
        ]
    finally:
        if isinstance(storage, PostgresStorage):
            storage.drop_schema()
        storage.close()
