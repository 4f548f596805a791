"""PostgreSQL behind a connection pooler (PgBouncer, in transaction or session pooling mode).

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
from typing import Any

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
