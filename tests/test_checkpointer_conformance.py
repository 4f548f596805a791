"""LangGraph's own checkpointer conformance suite, run against MemoryCheckpointer.

Wrapping InMemorySaver, SqliteSaver (sync only: our async methods delegate to a worker thread),
AsyncSqliteSaver, AsyncPostgresSaver, and the default saver over `PostgresStorage` (LangGraph's
`PostgresSaver` in memory's schema). Every base capability must pass; extended ones must pass where detected.
``copy_thread``, ``delete_for_runs`` and ``prune`` (what LangGraph Server calls) must pass
over every saver, including those without them. The report is printed (pytest -s, or in the
captured output on failure).
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from langchain_mastra_memory import Memory, SQLiteStorage


def make_factory(kind: str, tmp: Path):
    async def factory():
        memory = Memory(storage=SQLiteStorage(tmp / f"{kind}-memory.db"))
        if kind == "InMemorySaver":
            yield memory.checkpointer(InMemorySaver(), default_resource_id="conformance")
        elif kind == "SqliteSaver":
            conn = sqlite3.connect(tmp / f"{kind}-cp.db", check_same_thread=False)
            yield memory.checkpointer(SqliteSaver(conn), default_resource_id="conformance")
            conn.close()
        else:
            async with AsyncSqliteSaver.from_conn_string(str(tmp / f"{kind}-cp.db")) as saver:
                yield memory.checkpointer(saver, default_resource_id="conformance")

    return factory


def postgres_factory(dsn: str, tmp: Path):
    """PostgresSaver in a database of its own, created and dropped around the run."""
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    name = f"conformance_{uuid.uuid4().hex[:10]}"

    async def lifespan():
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        yield
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")

    async def factory():
        target = psycopg.conninfo.make_conninfo(dsn, dbname=name)
        async with AsyncPostgresSaver.from_conn_string(target) as saver:
            await saver.setup()
            memory = Memory(storage=SQLiteStorage(tmp / f"pg-memory-{uuid.uuid4().hex[:6]}.db"))
            yield memory.checkpointer(saver, default_resource_id="conformance")

    return factory, lifespan


def default_postgres_factory(dsn: str):
    """No saver given, over `PostgresStorage`: LangGraph's `PostgresSaver` in memory's schema
    (a fresh one each time, dropped afterwards)."""
    from langchain_mastra_memory import PostgresStorage

    async def factory():
        storage = PostgresStorage(dsn, schema=f"conformance_{uuid.uuid4().hex[:10]}")
        try:
            yield Memory(storage=storage).checkpointer(default_resource_id="conformance")
        finally:
            storage.drop_schema()
            storage.close()

    return factory


KINDS = ["InMemorySaver", "SqliteSaver", "AsyncSqliteSaver"]
if os.environ.get("LMM_TEST_POSTGRES_DSN"):
    KINDS.append(pytest.param("AsyncPostgresSaver", marks=pytest.mark.postgres))
    KINDS.append(pytest.param("default on PostgresStorage", marks=pytest.mark.postgres))


@pytest.mark.parametrize("kind", KINDS)
async def test_conformance(kind: str, tmp_path: Path, capsys) -> None:
    if kind == "AsyncPostgresSaver":
        factory, lifespan = postgres_factory(os.environ["LMM_TEST_POSTGRES_DSN"], tmp_path)
        registered = checkpointer_test(name=f"MemoryCheckpointer({kind})", lifespan=lifespan)(
            factory
        )
    elif kind == "default on PostgresStorage":
        registered = checkpointer_test(name=f"MemoryCheckpointer({kind})")(
            default_postgres_factory(os.environ["LMM_TEST_POSTGRES_DSN"])
        )
    else:
        registered = checkpointer_test(name=f"MemoryCheckpointer({kind})")(
            make_factory(kind, tmp_path)
        )
    report = await validate(registered)
    lines = [f"conformance report for {report.checkpointer_name}:"]
    for capability, result in sorted(report.results.items()):
        status = (
            "n/a (not offered by the inner saver)"
            if not result.detected
            else ("PASS" if result.passed else f"FAIL {result.failures}")
        )
        lines.append(
            f"  {capability:16} {status}  ({result.tests_passed} passed, {result.tests_failed} failed)"
        )
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    for capability in BASE_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected and result.passed, (capability, result.failures)
    for capability, result in report.results.items():
        assert not result.detected or result.passed, (capability, result.failures)
    for capability in ("copy_thread", "delete_for_runs", "prune"):  # what LangGraph Server
        result = report.results[capability]  # needs, whatever the inner saver offers
        assert result.detected and result.passed, (capability, result.failures)
