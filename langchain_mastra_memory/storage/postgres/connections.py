"""The connections memory takes from its PostgreSQL pools: alive, and on a primary.

`check_alive` (and `acheck_alive` for an ``AsyncConnectionPool``) is a pool's check without a
round trip: a connection the server closed (a restart, a failover, an idle timeout) is found by
what waits on its socket, a connection to a standby by the ``in_hot_standby`` status PostgreSQL
14+ reports with each connection; either is closed (the pool replaces it), and the pool's other
idle connections are checked at once. Memory's pools and the savers it makes use it; pass it as
``check=`` to your own.

    pool = ConnectionPool(dsn, check=check_alive)

PostgreSQL behind a connection pooler (PgBouncer, in transaction or session pooling mode).

Memory's connections carry their session on the startup packet (``options``: the schema on the
search path, UTC, the lock timeout) and psycopg prepares a statement it ran five times. A
pooler in transaction mode hands each transaction whichever server connection is free, so
neither survives it: PgBouncer refuses the ``options`` parameter ("unsupported startup
parameter"), or drops it when told to ignore it, and then every table lands in ``public``
whatever the schema (two tenants in two schemas would share one set of tables); a statement
prepared on one server connection is missing on the next ("prepared statement "_pg3_0" does not
exist") or clashes with another client's ("already exists").

So `PostgresStorage` finds a pooler at its first connection (`sessions_dropped`: the startup
``options`` refused or not applied) and then works in the one way every pooling mode keeps:
connections open with no ``options`` and no prepared statements (``prepare_threshold=None``),
and every use of a connection, a read too, is one transaction that begins by setting the
session it needs for itself (`begin_statement`: ``SET LOCAL``, gone at its end, in the same
round trip as ``BEGIN``). Locks are the transaction's own (``pg_advisory_xact_lock``, row
locks), never the session's; nothing is kept between transactions (no ``LISTEN``, no temporary
table). ``PostgresStorage(..., pooler=True)`` says so up front (a pooler that passes
``options`` on, which this cannot see); ``pooler=False`` never looks.

Examples:
    >>> for statement in begin_statement("tenant_a", lock_timeout_ms=30000).split("; "):
    ...     print(statement)
    BEGIN
    SET LOCAL search_path = "tenant_a"
    SET LOCAL timezone = 'UTC'
    SET LOCAL lock_timeout = 30000
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

NO_PRIMARY = (
    "no server of the DSN accepts writes, and memory writes with every turn; name the primary, "
    "or every server with target_session_attrs=read-write (libpq then connects to whichever "
    "is the primary, and after a failover to the promoted one)"
)


def in_recovery(conn: Any) -> bool:
    """Whether `conn` is on a standby (PostgreSQL 14+ reports ``in_hot_standby`` with each
    connection and when it changes: no round trip)."""
    return cast("bool", conn.info.parameter_status("in_hot_standby") == "on")


def check_alive(conn: Any) -> None:
    """A pool's check of a connection before it is handed out, without a round trip: an
    idle connection the server closed (a restart, a failover, an idle timeout) has its
    goodbye waiting on the socket; reading it marks the connection bad, and this raises (the
    pool then drops it and takes another). A connection to a standby is refused the same way:
    memory never writes to a server in recovery. The pool's other idle connections are checked at
    once then (`ConnectionPool.check`), so after a failover its next connection comes from the
    new primary in about a second, not after a backoff per dead connection (15 s with four).
    LangGraph's savers on memory's database use it; pass it as ``check=`` to your own pool
    (`acheck_alive` for an ``AsyncConnectionPool``).
    """
    import psycopg

    try:
        _probe(conn)
        if in_recovery(conn):  # (a DSN without target_session_attrs, a demoted old primary)
            raise psycopg.OperationalError("the server is a standby in recovery (read-only)")
    except psycopg.OperationalError:
        conn.close()  # so the pool discards it (a connection it thinks open goes back in)
        pool = getattr(conn, "_pool", None)  # (psycopg_pool's: set before it checks)
        if pool is not None and hasattr(pool, "check"):
            pool.check()  # one dead, likely all: the idle ones swept now, not one by one
        raise


async def acheck_alive(conn: Any) -> None:
    """`check_alive` for psycopg_pool's ``AsyncConnectionPool``."""
    import psycopg

    try:
        _probe(conn)
        if in_recovery(conn):
            raise psycopg.OperationalError("the server is a standby in recovery (read-only)")
    except psycopg.OperationalError:
        await conn.close()
        pool = getattr(conn, "_pool", None)
        if pool is not None and hasattr(pool, "check"):
            await pool.check()
        raise


def _probe(conn: Any) -> None:
    """Raise `OperationalError` if the server closed `conn` (what waits on its socket is read,
    nothing is sent)."""
    import select

    import psycopg
    from psycopg.pq import ConnStatus

    if conn.closed:
        raise psycopg.OperationalError("the connection is closed")
    poller = select.poll()  # (not select(): a busy process has descriptors past 1,024)
    poller.register(conn.fileno(), select.POLLIN)
    gone = select.POLLHUP | select.POLLERR | select.POLLNVAL
    for _ in range(4):  # a healthy idle connection has nothing to say (but a notification)
        events = poller.poll(0)
        if not events:
            break
        if events[0][1] & gone:  # the server's goodbye came with the end of the stream
            raise psycopg.OperationalError("the server closed the connection")
        conn.pgconn.consume_input()  # (raises when what was waiting was the end)
    if conn.pgconn.status != ConnStatus.OK:
        raise psycopg.OperationalError("the server closed the connection")


logger = logging.getLogger(__name__)

REFUSED = "unsupported startup parameter"  # PgBouncer's answer to ``options``

PREPARED_HINT = (
    "a connection pooler in transaction mode (PgBouncer) between memory and PostgreSQL? "
    "PostgresStorage(dsn, pooler=True) works behind one; on a saver of your own there, open "
    "its connections with prepare_threshold=None"
)


def begin_statement(schema: str, *, lock_timeout_ms: int) -> str:
    """``BEGIN`` and the session a connection of `schema`'s storage needs, for this
    transaction only: one simple-protocol round trip (no parameters, nothing prepared)."""
    return (
        f"BEGIN; SET LOCAL search_path = \"{schema}\"; SET LOCAL timezone = 'UTC'; "
        f"SET LOCAL lock_timeout = {int(lock_timeout_ms)}"
    )


def sessions_dropped(conn: Any, schema: str) -> bool:
    """Whether the startup ``options`` did not reach the server's session (a pooler told to
    ignore them): the search path is not the schema's."""
    row = conn.execute("SELECT current_setting('search_path')").fetchone()
    return row is None or row[0].strip().strip('"') != schema


def refused_options(exc: BaseException) -> bool:
    """Whether a connection failed because the startup ``options`` were refused (PgBouncer)."""
    return REFUSED in str(exc)


@contextmanager
def session_transaction(conn: Any, begin: str) -> Iterator[Any]:
    """`conn` (autocommit) inside one transaction begun with `begin`: committed when the
    block ends, rolled back when it raises (psycopg's own ``conn.transaction()`` inside is a
    savepoint then)."""
    conn.execute(begin)
    try:
        yield conn
    except BaseException:
        if not conn.closed and not conn.broken:
            try:
                conn.execute("ROLLBACK")
            except Exception:  # the connection died meanwhile: the pool discards it
                logger.debug("rollback failed", exc_info=True)
        raise
    conn.execute("COMMIT")


__all__ = ["NO_PRIMARY", "acheck_alive", "check_alive", "in_recovery"]
