"""The connections memory takes from its PostgreSQL pools: alive, and on a primary.

`check_alive` (and `acheck_alive` for an ``AsyncConnectionPool``) is a pool's check without a
round trip: a connection the server closed (a restart, a failover, an idle timeout) is found by
what waits on its socket, a connection to a standby by the ``in_hot_standby`` status PostgreSQL
14+ reports with each connection; either is closed (the pool replaces it), and the pool's other
idle connections are checked at once. Memory's pools and the savers it makes use it; pass it as
``check=`` to your own.

    pool = ConnectionPool(dsn, check=check_alive)
"""

from __future__ import annotations

from typing import Any, cast

__all__ = ["NO_PRIMARY", "acheck_alive", "check_alive", "in_recovery"]


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
