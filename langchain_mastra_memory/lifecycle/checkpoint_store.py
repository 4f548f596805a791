"""Memory's own database as LangGraph's checkpoint store: the default saver on it (so the
CLI, a restarted app and a second process see one store: `SqliteSaver` on memory's SQLite
file, `PostgresSaver` on its PostgreSQL schema), and a thread's checkpoints removed from it.
Checkpoints are kept in RAM only beside a memory that is too (``:memory:``).

Examples:
    >>> from langchain_mastra_memory.storage import SQLiteStorage
    >>> type(default_saver(SQLiteStorage(":memory:"))).__name__  # no file: kept in memory
    'InMemorySaver'

On PostgreSQL, `memory.checkpointer()` with no saver wraps LangGraph's own `PostgresSaver` on
the same database and schema, so a restart or a second process reads every checkpoint (an
in-memory saver would lose the graph's state at every restart and never share it between
processes).

The saver has a bounded pool of its own (LangGraph's saver wants autocommit connections with
dict rows, memory's are transactional), checked on checkout so that a connection that died
with the server is replaced, and closed with the storage. Its tables are made once, under an
advisory lock (two processes starting together), in the storage's schema (so two tenants in
two schemas share nothing, and `drop_schema` removes them too).

Behind a connection pooler (`storage.postgres.connections`) the saver's connections prepare
nothing and each of its cursors is one transaction that sets the schema for itself
(`PooledPostgresSaver`); its setup creates its indexes without ``CONCURRENTLY`` (which no
transaction may run), and the setup lock is the transaction's.

Example (needs a server)::

    memory = Memory(storage=PostgresStorage(dsn))
    graph = builder.compile(checkpointer=memory.checkpointer())  # PostgresSaver underneath
"""

from __future__ import annotations

import logging
import sqlite3
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from ..errors import VolatileCheckpointsWarning
from ..storage.sqlite.backend import SYNCHRONOUS, SQLiteStorage

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.postgres import PostgresSaver

    from ..storage.postgres.backend import PostgresStorage


logger = logging.getLogger(__name__)


def default_saver(storage: Any) -> BaseCheckpointSaver[Any]:
    """A saver on `storage`'s own database: SQLite's file, PostgreSQL's schema; in memory
    only for a storage that is too (or one of a kind it cannot write to, with a warning)."""
    from ..storage.postgres.backend import PostgresStorage

    if isinstance(storage, PostgresStorage):
        return postgres_saver(storage)
    if isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(storage.path, timeout=storage.busy_timeout, check_same_thread=False)
        conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")  # the file's durability, as memory's
        saver = SqliteSaver(conn)  # (waits for the file's write lock as long as memory does)
        saver.setup()  # its tables now, not under a turn's concurrent reads of the same file
        return saver
    from langgraph.checkpoint.memory import InMemorySaver

    volatile = InMemorySaver()
    warn_if_volatile(storage, volatile)
    return volatile


def warn_if_volatile(storage: Any, saver: Any) -> None:
    """Warn when a persistent memory is paired with checkpoints kept in RAM: after a restart
    the graph's state is gone while memory still holds the thread (and a second process
    never sees it)."""
    from langgraph.checkpoint.memory import InMemorySaver

    if type(saver) is not InMemorySaver or (
        isinstance(storage, SQLiteStorage) and storage.path == ":memory:"
    ):
        return
    msg = (
        f"memory.checkpointer() over {storage!r} with InMemorySaver: the graph's checkpoints "
        "live in this process only (lost at a restart, unseen by other processes) while "
        "memory persists; pass a persistent saver, or none (memory's database is used)"
    )
    logger.warning(msg)
    warnings.warn(msg, VolatileCheckpointsWarning, stacklevel=4)


def forget_in_file(storage: Any, thread_id: str) -> None:
    """The thread's checkpoints in memory's database (its SQLite file, its PostgreSQL
    schema), through LangGraph's own saver (whose tables are not created when absent)."""
    from ..storage.postgres.backend import PostgresStorage

    if isinstance(storage, PostgresStorage):
        forget_in_postgres(storage, thread_id)
        return
    if not isinstance(storage, SQLiteStorage) or storage.path == ":memory:":
        return
    conn = sqlite3.connect(storage.path, timeout=30, check_same_thread=False)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if {"checkpoints", "writes"} <= tables:
            from langgraph.checkpoint.sqlite import SqliteSaver

            SqliteSaver(conn).delete_thread(thread_id)
    finally:
        conn.close()


SETUP_LOCK = "langchain_mastra_memory.checkpoints"


def postgres_saver(storage: PostgresStorage) -> PostgresSaver:
    """LangGraph's `PostgresSaver` on `storage`'s database and schema (one per storage)."""
    if storage.checkpoint_saver is None:
        storage.checkpoint_saver = _made(storage)
    return cast("PostgresSaver", storage.checkpoint_saver)


def _made(storage: PostgresStorage) -> PostgresSaver:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from ..storage.postgres.connections import check_alive

    options = storage.connection_options()
    begin = storage.begin_statement()
    pool = ConnectionPool(
        storage.conninfo,
        min_size=1,
        max_size=storage.max_connections,
        kwargs={
            **options,
            "autocommit": True,
            "prepare_threshold": 0 if begin is None else None,  # (a pooler: nothing prepared)
            "row_factory": dict_row,
        },
        check=check_alive,  # a connection dead since a restart: replaced (no round trip)
        timeout=storage.pool_timeout,
        open=False,
    )
    pool.open(wait=True, timeout=storage.pool_timeout)
    saver = PostgresSaver(pool) if begin is None else _pooled_saver(pool, begin)
    if begin is None:  # a session's lock, outside any transaction (CONCURRENTLY waits for those)
        with psycopg.connect(storage.conninfo, autocommit=True, **options) as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (SETUP_LOCK,))
            try:
                saver.setup()
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (SETUP_LOCK,))
    else:  # behind a pooler, a transaction's lock (a session's would outlive it, on any
        # server connection); its indexes are made without CONCURRENTLY (`_pooled_saver`)
        with psycopg.connect(storage.conninfo, **options) as conn, conn.transaction():
            conn.execute(begin.removeprefix("BEGIN; "))
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (SETUP_LOCK,))
            saver.setup()
    storage.on_close(pool.close)
    return saver


def _pooled_saver(pool: Any, begin: str) -> PostgresSaver:
    """LangGraph's `PostgresSaver` for a connection pooler: every cursor one transaction
    begun with `begin` (the schema set for it alone), the setup's indexes made in one."""
    from langgraph.checkpoint.postgres import PostgresSaver, _internal
    from psycopg.rows import dict_row

    from ..storage.postgres.connections import session_transaction

    class PooledPostgresSaver(PostgresSaver):
        MIGRATIONS = [m.replace(" CONCURRENTLY", "") for m in PostgresSaver.MIGRATIONS]  # noqa: RUF012

        @contextmanager
        def _cursor(self, *, pipeline: bool = False) -> Iterator[Any]:
            with (
                self.lock,
                _internal.get_connection(self.conn) as conn,
                session_transaction(conn, begin),
                conn.cursor(binary=True, row_factory=dict_row) as cur,
            ):
                yield cur

    return PooledPostgresSaver(pool)


def forget_in_postgres(storage: PostgresStorage, thread_id: str) -> None:
    """The thread's checkpoints in the storage's schema (LangGraph's tables, when there)."""
    with storage._transaction(write=False) as conn:
        found = conn.execute("SELECT to_regclass('checkpoints') IS NOT NULL").fetchone()
    if found and found[0]:
        postgres_saver(storage).delete_thread(thread_id)
