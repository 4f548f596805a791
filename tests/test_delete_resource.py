"""Forget a tenant entirely: `Memory.delete_resource` (sync and async), the CLI's `forget` and
the MCP server's `forget_user` erase every thread, message, vector, working memory, observation,
withheld id, store item and checkpoint memory can reach of one resource, and nothing of any
other. The test scans every table of the database (SQLite file or PostgreSQL schema, the
checkpoint tables in the file included) and asks every vector engine afterwards."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from langchain_mastra_memory import LangChainVectorStore, Memory, PostgresStorage, SQLiteStorage
from langchain_mastra_memory.cli import app
from tests.test_isolation_matrix import ALICE, SECRET, WORLDS, build_world, cfg, server_for

LEAK = SECRET.split("-")[1]


def every_row(memory: Memory, db: Path | None) -> str:
    """Every row of every table memory's storage holds (and the checkpoint tables beside)."""
    storage = memory.storage
    dumped = []
    if isinstance(storage, PostgresStorage):
        with storage._transaction(write=False) as conn:  # the test reads every table
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (storage.schema,),
            ).fetchall()
            for (table,) in tables:
                rows = conn.execute(f'SELECT * FROM "{storage.schema}"."{table}"').fetchall()
                dumped.append(f"{table}: {rows!r}")
        return "\n".join(dumped)
    assert db is not None
    conn = sqlite3.connect(db)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in names:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                dumped.append(f"{table}: " + " | ".join(
                    bytes(v).decode("utf-8", "replace") if isinstance(v, (bytes, memoryview))
                    else str(v) for v in row
                ))  # fmt: skip
    finally:
        conn.close()
    return "\n".join(dumped)


def vectors_of(memory: Memory, resource: str) -> int:
    index = memory.recall_index
    assert index is not None and index.vector is not None
    if isinstance(index.vector, LangChainVectorStore):  # (LangChain's API counts nothing)
        documents = index.vector.store.store.values()  # an InMemoryVectorStore's own dict
        return sum(d["metadata"].get("resource_id") == resource for d in documents)
    return index.vector.count(index.upkeep.index_name(), 384, resource)


@pytest.mark.parametrize("world_param", WORLDS)
@pytest.mark.parametrize("how", ["sync", "async"])
def test_delete_resource_erases_alice_everywhere_and_nothing_of_bob(
    world_param: Any, how: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    kind, om = world_param
    server_for(kind, request)
    world = build_world(kind, om, tmp_path)
    memory = world.memory
    try:
        world.graph.invoke({"messages": [HumanMessage(f"branch me {SECRET}")]},
                           cfg("tA2", "alice"))  # fmt: skip
        memory.archive_thread("tA2", resource_id="alice")  # archived threads go too
        assert memory.flush(60)
        assert LEAK in every_row(memory, world.db) and vectors_of(memory, "alice") > 0
        bob_before = (memory.get_messages(thread_id="tB"), vectors_of(memory, "bob"))
        if how == "sync":
            assert memory.delete_resource("alice")
        else:
            assert asyncio.run(memory.adelete_resource("alice"))
        rows = every_row(memory, world.db)
        assert LEAK not in rows and "alice" not in rows.lower()
        assert vectors_of(memory, "alice") == 0
        assert memory.list_threads(resource_id="alice", archived=None) == []
        assert memory.get_working_memory(resource_id="alice") is None
        assert world.store.search(("alice",)) == []
        assert world.graph.get_state(ALICE).values == {}  # no checkpoint left to read
        # bob keeps everything
        assert (memory.get_messages(thread_id="tB"), vectors_of(memory, "bob")) == bob_before
        assert memory.get_working_memory(resource_id="bob") == "# Bob\n- Likes: chess"
        assert world.store.get(("bob", "notes"), "k1") is not None
        assert memory.delete_resource("alice") is False  # nothing held any more
    finally:
        if isinstance(memory.storage, PostgresStorage):
            memory.storage.drop_schema()
        memory.storage.close()


def test_the_cli_forgets_a_resource(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    memory = Memory(storage=SQLiteStorage(db))
    memory.save_turn([HumanMessage(f"alice: {SECRET}")], thread_id="a", resource_id="alice")
    memory.save_turn([HumanMessage("bob's turn")], thread_id="b", resource_id="bob")
    memory.storage.close()
    runner = CliRunner()
    done = runner.invoke(app, ["forget", "alice", "--yes", "--db", str(db)])
    assert done.exit_code == 0 and "erased" in done.output, done.output
    assert runner.invoke(app, ["forget", "alice", "--yes", "--db", str(db)]).exit_code == 1
    after = Memory(storage=SQLiteStorage(db))
    assert after.list_threads(resource_id="alice") == []
    assert [m.content for m in after.get_messages(thread_id="b")] == ["bob's turn"]


def test_the_mcp_server_erases_only_when_it_serves_several_users(tmp_path: Path) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from langchain_mastra_memory.integrations.mcp_server import create_mcp_server

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    memory.save_turn([HumanMessage(f"alice: {SECRET}")], thread_id="a", resource_id="alice")
    single = create_mcp_server(memory, resource_id="alice")  # a model serving alice herself
    assert "forget_user" not in {t.name for t in asyncio.run(single.list_tools())}
    with pytest.raises(ToolError, match="forget_user"):
        asyncio.run(single.call_tool("forget_user", {"resource_id": "alice"}))
    assert memory.list_threads(resource_id="alice")  # nothing erased
    several = create_mcp_server(memory, multi_resource=True)
    asyncio.run(several.call_tool("forget_user", {"resource_id": "alice"}))
    assert memory.list_threads(resource_id="alice") == []
