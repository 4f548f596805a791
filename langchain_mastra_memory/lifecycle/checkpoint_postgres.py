"""Memory's PostgreSQL database as LangGraph's checkpoint store: `memory.checkpointer()` with
no saver, over `PostgresStorage`, wraps LangGraph's own `PostgresSaver` on the same database
and schema, so a restart or a second process reads every checkpoint (an in-memory saver would
lose the graph's state at every restart and never share it between processes).

The saver has a bounded pool of its own (LangGraph's saver wants autocommit connections with
dict rows, memory's are transactional), checked on checkout so that a connection that died
with the server is replaced, and closed with the storage. Its tables are made once, under an
advisory lock (two processes starting together), in the storage's schema (so two tenants in
two schemas share nothing, and `drop_schema` removes them too).

Behind a connection pooler (`storage.postgres.poolers`) the saver's connections prepare
nothing and each of its cursors is one transaction that sets the schema for itself
(`PooledPostgresSaver`); its setup creates its indexes without ``CONCURRENTLY`` (which no
transaction may run), and the setup lock is the transaction's.

Example (needs a server)::

    memory = Memory(storage=PostgresStorage(dsn))
    graph = builder.compile(checkpointer=memory.checkpointer())  # PostgresSaver underneath
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from langgraph.checkpoint.postgres import PostgresSaver

    from ..storage.postgres.backend import PostgresStorage

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

    from ..storage.postgres.poolers import session_transaction

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
