"""PostgreSQL restarted under a full pool: the next calls get live connections.

A server of its own (pgserver's PostgreSQL 18, as the session's), restarted with ``pg_ctl
restart -m fast``: every pooled connection dies with "terminating connection due to
administrator command". A dead connection fails at its transaction's BEGIN, before anything
of the call is sent, and is replaced; a call that broke after it sent something is not
retried (a write could have been applied).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import PostgresStorage, StorageError

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    import pgserver

    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())
    pg = pgserver.get_server(tempfile.mkdtemp(prefix="lmm-pg-restart-"), cleanup_mode="delete")
    yield pg
    pg.cleanup()


def restart(server: Any) -> None:
    import psycopg
    from pgserver._commands import pg_ctl

    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user)
    deadline = time.monotonic() + 30
    while True:  # until it answers a new connection
        try:
            psycopg.connect(server.get_uri(), connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def fill_the_pool(storage: PostgresStorage) -> None:
    def hold(_: int) -> None:
        with storage._transaction(write=False) as conn:
            conn.execute("SELECT pg_sleep(0.2)")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(hold, range(8)))


@pytest.fixture
def storage(server: Any, request: pytest.FixtureRequest) -> Iterator[PostgresStorage]:
    schema = f"restart_{request.node.name.rsplit('[', 1)[-1].strip(']').replace('-', '_')}"
    store = PostgresStorage(server.get_uri(), schema=schema, max_connections=8)
    store.create_thread(thread_id="t", resource_id="alice")
    store.save_messages([HumanMessage("before the restart", id="m1")], thread_id="t",
                        resource_id="alice")  # fmt: skip
    yield store
    store.drop_schema()
    store.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_no_call_fails_after_a_restart(server: Any, storage: PostgresStorage, mode: str) -> None:
    fill_the_pool(storage)
    assert storage._pool.get_stats()["pool_size"] >= 4  # (connections that will die)
    restart(server)
    failures: list[str] = []

    async def twelve_async() -> None:
        for n in range(12):
            try:
                if n % 2:
                    await storage.aget_thread("t")
                else:
                    await storage.asave_messages(
                        [HumanMessage(f"after {n}", id=f"a{n}")], thread_id="t",
                        resource_id="alice",
                    )  # fmt: skip
            except StorageError as exc:
                failures.append(str(exc))

    if mode == "async":
        asyncio.run(twelve_async())
    else:
        for n in range(12):
            try:
                if n % 2:
                    storage.get_thread("t")
                else:
                    storage.save_messages([HumanMessage(f"after {n}", id=f"a{n}")],
                                          thread_id="t", resource_id="alice")  # fmt: skip
            except StorageError as exc:
                failures.append(str(exc))
    assert failures == []
    stored = [s.message.id for s in storage.list_messages("t")]
    assert stored == ["m1", *(f"a{n}" for n in range(0, 12, 2))]  # each write once


def test_a_connection_lost_mid_call_is_not_retried(server: Any, storage: PostgresStorage) -> None:
    """The server ends the session while the call runs: it fails, it is not sent again."""
    import psycopg

    with (
        psycopg.connect(server.get_uri(), autocommit=True) as admin,
        pytest.raises(StorageError, match="unavailable"),
        storage._transaction(write=True) as conn,
    ):
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        conn.execute("SELECT 1")
    assert storage.get_thread("t") is not None  # and the next call gets a live connection


def test_an_unreachable_server_is_named_at_once() -> None:
    """No server on that port: one line naming the server and the cause, not a pool timeout
    (nor the password)."""
    with pytest.raises(StorageError) as info:
        PostgresStorage("postgresql://app:s3cret@127.0.0.1:1/memory", connect_timeout=2)
    message = str(info.value)
    assert message.startswith("cannot connect to PostgreSQL at 127.0.0.1:1/memory: ")
    assert "refused" in message
    assert "s3cret" not in message and "\n" not in message


def test_a_pooled_connection_is_checked_without_a_query_at_any_descriptor() -> None:
    """`check_alive` (the pools' check): a live connection passes, with a notification waiting
    too; one the server ended fails; in a process with descriptors past 1,024 (a busy test
    run, an app with many files) as well."""
    import resource

    import psycopg

    from langchain_mastra_memory.storage.postgres.connections import check_alive

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 4096), hard), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    dsn = os.environ["LMM_TEST_POSTGRES_DSN"]
    try:
        conn = psycopg.connect(dsn, autocommit=True)
        assert conn.fileno() > 1024
        check_alive(conn)
        conn.execute("LISTEN lmm_check")
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("NOTIFY lmm_check")
            time.sleep(0.2)
            check_alive(conn)  # a notification is not a goodbye
            admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        time.sleep(0.3)
        with pytest.raises(psycopg.OperationalError, match="closed"):
            check_alive(conn)
        conn.close()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
