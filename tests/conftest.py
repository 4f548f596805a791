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

from langchain_mastra_memory import Memory, MemoryStorage, PostgresStorage, SQLiteStorage
from langchain_mastra_memory.storage.base import forbid_blocking_calls
from langchain_mastra_memory.testing import pgvector_problem, throwaway_postgres

# The whole suite on every machine: a DSN in the environment (CI may give one) wins; otherwise
# the session starts its own server, and a failure to start is an error, never a skip.
if not os.environ.get("LMM_TEST_POSTGRES_DSN"):
    os.environ["LMM_TEST_POSTGRES_DSN"] = throwaway_postgres()
BACKENDS = ["sqlite-memory", "sqlite-file", "postgres"]


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
    if kind == "postgres":  # a fresh schema per test, dropped afterwards
        return PostgresStorage(
            os.environ["LMM_TEST_POSTGRES_DSN"], schema=f"t_{uuid.uuid4().hex[:12]}"
        )
    raise AssertionError(kind)


@pytest.fixture(
    params=[
        pytest.param(kind, marks=pytest.mark.postgres) if kind == "postgres" else kind
        for kind in BACKENDS
    ]
)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStorage]:
    store = make_storage(request.param, tmp_path)
    yield store
    if isinstance(store, PostgresStorage):
        store.drop_schema()
    store.close()


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
    import socket

    from milvus import MilvusServer

    server = MilvusServer()
    server.set_base_dir(str(tmp_path_factory.mktemp("milvus")))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        server.listen_port = probe.getsockname()[1]
    server.start()
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
