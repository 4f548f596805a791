"""Reads from a replica (a hot standby), never behind this storage's own writes.

`PostgresStorage(dsn, read_dsn=...)` sends each read (history, recall's vector and keyword
searches, pages, the explorer, the recall tool) to the replica once the replica has replayed
every write this storage made: after each write the primary's WAL position is noted
(``pg_current_wal_lsn()``), and a read while a noted position is pending first asks the replica
how far it replayed (``pg_last_wal_replay_lsn()``, on the connection the read then uses). A
replica behind it, or one that does not answer, leaves the read to the primary. So a turn reads
its own writes, and the next turn of the thread its previous one, wherever the reads go; writes
of *other* processes reach this one's replica reads after the replication lag.

    reads = ReplicaReads("host=replica ...", options, max_connections=8)
    with reads.connection() as conn:   # None: read from the primary
        ...
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import ConfigurationError
from .connections import session_transaction

logger = logging.getLogger(__name__)

UNKNOWN = -1  # a write whose WAL position could not be read: the replica counts as behind it
REPLICA_WAIT = 1.0  # seconds a read waits for a replica connection before it goes to the primary


def check_read_dsn(dsn: str) -> None:
    """A replica that is down is fine (the primary reads); a DSN that is not one is an error."""
    import psycopg

    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise ConfigurationError(f"read_dsn is not a PostgreSQL DSN: {exc}") from exc


def lsn(position: str) -> int:
    """A WAL position (``"16/B374D848"``) as a number."""
    high, low = position.split("/")
    return (int(high, 16) << 32) | int(low, 16)


class ReplicaReads:
    """A pool on a replica, and the newest write of this storage it has not replayed yet."""

    def __init__(
        self,
        dsn: str,
        options: dict[str, Any],
        *,
        max_connections: int,
        begin: str | None = None,
    ) -> None:
        from psycopg_pool import ConnectionPool

        self.begin = begin  # behind a pooler: each read one transaction that sets its session
        self.pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=max_connections,
            open=False,
            kwargs={**options, "autocommit": True},
            timeout=REPLICA_WAIT,
        )
        self.pool.open(wait=False)  # (a replica that is down only sends reads to the primary)
        self._pending: int | None = None  # the newest write not known to be replayed there
        self._lock = threading.Lock()
        self.served: Counter[str] = Counter()  # "replica", "primary: behind", "primary: down"
        self._warned = False

    def wrote(self, conn: Any) -> None:
        """Note the primary's WAL position after a write committed on `conn`. The write is
        committed whatever happens here: a position that cannot be read (the connection lost
        just after the commit) sends reads to the primary until a later write is noted."""
        import psycopg

        try:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
            position = lsn(row[0]) if row is not None else UNKNOWN
        except psycopg.Error:
            position = UNKNOWN
        with self._lock:  # (a later write's position is past an unknown earlier one's)
            if position == UNKNOWN or self._pending in (None, UNKNOWN) or position > self._pending:
                self._pending = position

    @contextmanager
    def connection(self) -> Iterator[Any | None]:
        """A replica connection that has replayed this storage's writes, else None."""
        conn = self._caught_up()
        if conn is None:
            yield None
            return
        self.served["replica"] += 1
        try:
            if self.begin is None:
                yield conn
            else:
                with session_transaction(conn, self.begin):
                    yield conn
        finally:
            self.pool.putconn(conn)

    def _caught_up(self) -> Any | None:
        import psycopg

        from .connections import _probe

        pending = self._pending
        try:
            conn = self.pool.getconn(REPLICA_WAIT)
        except Exception as exc:  # (a replica down, or its pool's wait over: the primary reads)
            self._down(exc)
            return None
        try:
            _probe(conn)
            if pending is not None:
                row = conn.execute(
                    "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text"
                ).fetchone()
                recovering, replayed = row if row is not None else (False, None)
                behind = pending == UNKNOWN or replayed is None or lsn(replayed) < pending
                if recovering and behind:  # (a "replica" that is a primary is never behind)
                    self.served["primary: behind"] += 1
                    self.pool.putconn(conn)
                    return None
                with self._lock:
                    if self._pending == pending:
                        self._pending = None
            return conn
        except psycopg.OperationalError as exc:
            conn.close()
            self.pool.putconn(conn)
            self._down(exc)
            return None

    def _down(self, exc: BaseException) -> None:
        self.served["primary: down"] += 1
        if not self._warned:
            self._warned = True
            logger.warning("the read replica does not answer (%s): reads go to the primary", exc)

    def close(self) -> None:
        self.pool.close()
