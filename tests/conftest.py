"""Shared fixtures: storage over every backend, a Memory on it, sync/async parametrization."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_mastra_memory import (
    MastraStorage,
    Memory,
    MemoryStorage,
    PostgresStorage,
    SQLiteStorage,
)
from langchain_mastra_memory.storage.base import forbid_blocking_calls
from langchain_mastra_memory.testing import pgvector_problem, throwaway_postgres

# The whole suite on every machine: a DSN in the environment (CI may give one) wins; otherwise
# the session starts its own server, and a failure to start is an error, never a skip.
if not os.environ.get("LMM_TEST_POSTGRES_DSN"):
    os.environ["LMM_TEST_POSTGRES_DSN"] = throwaway_postgres()
BACKENDS = ["sqlite-memory", "sqlite-file", "mastra-file", "postgres", "mastra-postgres"]


def pytest_sessionstart(session: pytest.Session) -> None:
    """Before any test: the session's PostgreSQL runs a pgvector distance query, or the run
    stops with one error naming the cause and the fix (a crashing pgvector is not 279 errors)."""
    problem = pgvector_problem(os.environ["LMM_TEST_POSTGRES_DSN"])
    if problem:
        pytest.exit(problem, returncode=3)


def make_storage(kind: str, tmp_path: Path) -> MemoryStorage:
    if kind == "sqlite-memory":
        return SQLiteStorage(":memory:")
    if kind == "sqlite-file":
        return SQLiteStorage(tmp_path / "memory.db")
    if kind == "mastra-file":  # memory on a Mastra store's own tables (issue 94)
        return MastraStorage(f"file:{tmp_path / 'mastra.db'}")
    if kind == "mastra-postgres":  # Mastra's PostgresStore tables, in a schema of the test's
        name = uuid.uuid4().hex[:12]
        return MastraStorage(
            os.environ["LMM_TEST_POSTGRES_DSN"], schema_name=f"m_{name}", schema=f"t_{name}"
        )
    if kind == "postgres":  # a fresh schema per test, dropped afterwards
        return PostgresStorage(
            os.environ["LMM_TEST_POSTGRES_DSN"], schema=f"t_{uuid.uuid4().hex[:12]}"
        )
    raise AssertionError(kind)


@pytest.fixture(
    params=[
        pytest.param(kind, marks=pytest.mark.postgres) if "postgres" in kind else kind
        for kind in BACKENDS
    ]
)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStorage]:
    store = make_storage(request.param, tmp_path)
    yield store
    try:
        if isinstance(store, MastraStorage) and not store.closed:
            assert mastra_rows_disagree(store) == []  # whatever the test did, both sides agree
    finally:
        if isinstance(store, PostgresStorage):
            store.drop_schema()
            if isinstance(store, MastraStorage):  # Mastra's tables: the test's own schema
                with store._transaction(write=True) as conn:
                    conn.execute(f'DROP SCHEMA "{store.schema_name}" CASCADE')
        store.close()


def mastra_rows_disagree(store: MastraStorage) -> list[str]:
    """Where Mastra's tables, decoded as `MastraStorage` reads them, differ from our tables:
    the threads, each thread's messages (ids, order, every field), working memory."""
    from langchain_core.messages import message_to_dict

    from langchain_mastra_memory.messages import message_from_json
    from langchain_mastra_memory.storage.mastra.content import decode_row
    from langchain_mastra_memory.storage.mastra.layout import json_object

    problems = []
    with store._transaction(write=False) as conn:

        def rows(sql: str, *params: object) -> list:
            return store._run(conn, sql, params).fetchall()

        ours = dict(rows("SELECT id, working_memory FROM memory_threads"))
        theirs = {
            tid: json_object(meta).get("workingMemory")
            for tid, meta in rows(f"SELECT id, metadata FROM {store._t('mastra_threads')}")
        }
        if ours != theirs:
            problems.append(f"threads (and their working memory): {ours} != {theirs}")
        for thread_id in ours:
            mine = [
                message_to_dict(message_from_json(c))
                for (c,) in rows(
                    "SELECT content FROM memory_messages WHERE thread_id = ? "
                    "ORDER BY created_at, seq",
                    thread_id,
                )
            ]
            decoded = [
                message_to_dict(m)
                for row in rows(
                    f"SELECT id, role, content FROM {store._t('mastra_messages')} "
                    'WHERE thread_id = ? ORDER BY "createdAt", id',
                    thread_id,
                )
                for m in decode_row(*row)
            ]
            if mine != decoded:
                problems.append(f"thread {thread_id!r}: {mine} != {decoded}")
        memories = dict(
            rows("SELECT id, working_memory FROM memory_resources WHERE working_memory IS NOT NULL")
        )
        mastra = dict(rows(f'SELECT id, "workingMemory" FROM {store._t("mastra_resources")}'))
        if memories != {k: v for k, v in mastra.items() if v is not None or k in memories}:
            problems.append(f"working memory: {memories} != {mastra}")
        for (key,) in rows("SELECT DISTINCT scope_key FROM memory_observation_groups"):
            log = "\n".join(g.text for g in store._groups(conn, key, active=True))
            current = store._current_record(conn, key)
            text = current["activeObservations"] if current is not None else ""
            if log != text:
                problems.append(f"observation log {key!r}: {log!r} != Mastra's {text!r}")
    return problems


@pytest.fixture
def memory(storage: MemoryStorage) -> Memory:
    return Memory(storage=storage)


Call = Callable[..., Any]


@pytest.fixture(params=["sync", "async"])
def call(request: pytest.FixtureRequest) -> Call:
    """`call(obj, "save_messages", ...)` runs the method or, in the async run, its `a` twin."""

    def run(obj: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        if request.param == "sync":
            return getattr(obj, name)(*args, **kwargs)
        with forbid_blocking_calls():  # an async twin must never block its event loop
            return asyncio.run(getattr(obj, "a" + name)(*args, **kwargs))

    run.mode = request.param  # type: ignore[attr-defined]
    return run


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real Milvus server for the session (the `milvus` wheel: Milvus 2.3 standalone with
    embedded etcd, no Docker), in a temporary folder on a free port, stopped at the end. A
    failure to start is an error, never a skip."""
    from helpers import start_milvus

    server = start_milvus(tmp_path_factory.mktemp("milvus"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def milvus_uri(milvus_server: Any) -> str:
    """The session's Milvus server's address."""
    uri = os.environ["LMM_TEST_MILVUS_URI"] = f"http://127.0.0.1:{milvus_server.listen_port}"
    return uri


@pytest.fixture(scope="session")
def pgbouncer() -> Iterator[Callable[..., Any]]:
    """``pgbouncer(mode, ignore_options=False)``: a PgBouncer (`pg_bouncer.Bouncer`) in front
    of the session's PostgreSQL in that pooling mode, one per kind for the session."""
    from pg_bouncer import Bouncer

    started: dict[tuple[str, bool], Any] = {}

    def bouncer(mode: str, *, ignore_options: bool = False) -> Any:
        if (mode, ignore_options) not in started:
            # (under /tmp itself: pytest's own folders are closed to the user PgBouncer runs as)
            folder = Path(tempfile.mkdtemp(prefix=f"lmm-pgbouncer-{mode}-"))
            started[mode, ignore_options] = Bouncer.start(
                folder, os.environ["LMM_TEST_POSTGRES_DSN"], mode=mode,
                ignore_options=ignore_options,
            )  # fmt: skip
        return started[mode, ignore_options]

    yield bouncer
    for running in started.values():
        running.stop()
        shutil.rmtree(running.folder, ignore_errors=True)
