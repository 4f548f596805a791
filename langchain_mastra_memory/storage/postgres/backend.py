"""`PostgresStorage`: threads, messages and resources in PostgreSQL, for many app processes."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from ...errors import ConfigurationError, StorageError
from ..sql.backend import Dialect, SQLStorage, TextMatch
from .connections import (
    NO_PRIMARY,
    PREPARED_HINT,
    begin_statement,
    check_alive,
    in_recovery,
    refused_options,
    session_transaction,
    sessions_dropped,
)
from .items import ItemVectors
from .replicas import ReplicaReads, check_read_dsn
from .schema import MIGRATIONS
from .text import PostgresText

logger = logging.getLogger(__name__)

POSTGRES = Dialect(
    placeholder="%s",
    row_lock=" FOR UPDATE",
    json_cast="::jsonb",
    id_chunk=None,
    lateral_windows=True,
    one_statement_lists=True,
    no_limit=None,
    metadata_equals="metadata -> ? = ?::jsonb",
    metadata_key=lambda key: key,
)
DEADLOCK_ATTEMPTS = 5
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def _aborted_by_conflict(exc: BaseException) -> bool:
    """A transaction PostgreSQL rolled back to break a deadlock or a serialization conflict
    (SQLSTATE 40P01 / 40001): safe to run again."""
    cause = exc.__cause__ if isinstance(exc, StorageError) else exc
    return getattr(cause, "sqlstate", None) in ("40P01", "40001")


def _when_committed(callback: Callable[[Any], None], served: list[Any]) -> Callable[..., bool]:
    """An exit callback: `callback(connection)` once the work on it ended without an error."""

    def exit_(kind: type[BaseException] | None, *_: Any) -> bool:
        if kind is None and served:
            callback(served[0])
        return False

    return exit_


def _whole(script: str) -> list[str]:
    """PostgreSQL runs a multi-statement migration as one."""
    return [script]


class PostgresStorage(SQLStorage):
    """Threads, messages and resources in PostgreSQL (psycopg 3 with a connection pool).

    Every write is one transaction; writers of the same thread (or working memory) are
    serialized by a row lock, so several app processes can share the database. `schema` puts
    the tables in their own PostgreSQL schema (created if needed). Nothing waits without a
    bound: a lock held elsewhere longer than `lock_timeout` seconds fails the operation with
    a `StorageError` (nothing applied), a connection is made within `connect_timeout` and taken
    from the pool within `pool_timeout`. Needs the ``postgres`` extra.

    High availability: give a libpq multi-host DSN with ``target_session_attrs=read-write``
    and memory follows a promoted standby by itself; it never writes to a server in recovery
    (`connections`). `read_dsn` names a replica for reads: each read goes there once the
    replica has replayed this storage's writes, else to the primary (`replicas`).

    Behind a connection pooler (PgBouncer, in transaction or session mode) it works as it is:
    the pooler is found at the first connection, and then nothing is prepared and every
    operation is one transaction that sets its own session (`connections`); ``pooler=True`` says
    so for a pooler it cannot see, ``pooler=False`` never looks.

    Example (needs a server)::

        storage = PostgresStorage("postgresql://user:pass@db:5432/app")
        memory = Memory(storage=storage)
    """

    dialect = POSTGRES

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "public",
        max_connections: int = 8,
        lock_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        pool_timeout: float = 30.0,
        read_dsn: str | None = None,
        pooler: bool | None = None,
    ) -> None:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover - depends on the install
            msg = (
                "PostgresStorage needs the 'postgres' extra: "
                "pip install 'langchain-mastra-memory[postgres]'"
            )
            raise ConfigurationError(msg) from exc
        if not _SCHEMA_NAME.match(schema):
            raise ConfigurationError(f"schema must be a lower-case SQL identifier, got {schema!r}")
        if pooler is not None and not isinstance(pooler, bool):
            raise ConfigurationError(f"pooler must be True, False or None, got {pooler!r}")
        if read_dsn is not None:
            check_read_dsn(read_dsn)  # before any connection is made
        self.schema = schema
        self.conninfo = conninfo
        self.max_connections = max_connections
        self.pool_timeout = pool_timeout
        self._options: dict[str, Any] = {
            "options": f"-c search_path={schema} -c timezone=UTC "
            f"-c lock_timeout={int(lock_timeout * 1000)}",
            "connect_timeout": max(1, round(connect_timeout)),
        }
        self.checkpoint_saver: Any = None  # LangGraph's saver here, made on first use
        self._closers: list[Callable[[], None]] = []
        self._text = PostgresText(schema)
        self._item_vectors = ItemVectors()
        # behind a pooler (`connections`): no startup options, nothing prepared, and every use of
        # a connection one transaction that sets its session first (None: a plain server)
        found = self._first_connection(connect_timeout)  # (fails at once, naming the cause)
        if found and pooler is False:  # every table would go to public, statements clash
            raise ConfigurationError(
                f"PostgreSQL at {self.where()} is behind a connection pooler (the connection's "
                "startup options were refused or dropped), but pooler=False: pass pooler=True, "
                "or leave it out and memory finds the pooler itself"
            )
        self.pooled = found if pooler is None else pooler
        self._begin: str | None = None
        if self.pooled:
            self._options = {
                "connect_timeout": self._options["connect_timeout"],
                "prepare_threshold": None,
            }
            self._begin = begin_statement(schema, lock_timeout_ms=int(lock_timeout * 1000))
            logger.info(
                "PostgreSQL at %s is behind a connection pooler: each operation is one "
                "transaction setting its own session, nothing prepared",
                self.where(),
            )
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max_connections,
            kwargs={**self._options, "autocommit": True},  # a read is one statement
            timeout=pool_timeout,
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout + 5)
        except Exception as exc:
            raise StorageError(f"cannot connect to PostgreSQL at {self.where()}: {exc}") from exc
        self.replica: ReplicaReads | None = None  # reads that need not be the primary's
        if read_dsn is not None:
            self.replica = ReplicaReads(
                read_dsn, self._options, max_connections=max_connections, begin=self._begin
            )
            self.on_close(self.replica.close)
        self.setup()

    def __repr__(self) -> str:
        return f"PostgresStorage(schema={self.schema!r})"

    def where(self) -> str:
        """The server and database this storage names (no password): ``host:port/dbname``."""
        import psycopg

        try:
            parts = psycopg.conninfo.conninfo_to_dict(self.conninfo)
        except psycopg.Error:
            return "(an unreadable DSN)"
        hosts = str(parts.get("host") or "localhost").split(",")
        ports = str(parts.get("port") or "5432").split(",")
        ports += ports[-1:] * (len(hosts) - len(ports))  # (one port for all hosts)
        servers = ",".join(f"{h}:{p}" for h, p in zip(hosts, ports, strict=False))
        return f"{servers}/{parts.get('dbname') or ''}"

    def _first_connection(self, connect_timeout: float) -> bool:
        """Connect once before the pool does, so an unreachable server fails within
        `connect_timeout` with one line naming the server and the cause (the pool would retry
        in the background and report only its own timeout); whether a pooler stands between
        (the startup options refused, or not applied: `connections`)."""
        import psycopg

        bare = {"connect_timeout": self._options["connect_timeout"], "prepare_threshold": None}
        try:
            try:
                with psycopg.connect(self.conninfo, **self._options) as conn:
                    on_standby, pooled = in_recovery(conn), sessions_dropped(conn, self.schema)
            except psycopg.OperationalError as exc:
                if not refused_options(exc):
                    raise
                with psycopg.connect(self.conninfo, **bare) as conn:
                    on_standby, pooled = in_recovery(conn), True
        except psycopg.Error as exc:
            cause = " ".join(str(exc).split()) or type(exc).__name__
            msg = f"cannot connect to PostgreSQL at {self.where()}: {cause}"
            if "session is read-only" in cause:
                msg += f" ({NO_PRIMARY})"
            raise StorageError(msg) from exc
        if on_standby:
            msg = f"PostgreSQL at {self.where()} is a standby in recovery: {NO_PRIMARY}"
            raise StorageError(msg)
        return pooled

    # -- plumbing ------------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, *, write: bool, atomic: bool = True) -> Iterator[Any]:
        """A pooled connection: for a write, one transaction (writers lock rows with ``FOR
        UPDATE``); for a read, or a write whose statements stand each on its own
        (``atomic=False``), each statement on its own (autocommit: no BEGIN / COMMIT).

        A pooled connection the server closed meanwhile (a restart, a failover, an idle
        timeout) is found before anything of the caller's is sent (`check_alive`, or a
        failed BEGIN): it is dropped and the next one taken, so nothing is retried that
        could have been applied."""
        import psycopg

        try:
            with self._connection(write, atomic) as conn:
                yield conn
        except psycopg.OperationalError as exc:
            hint = f" ({NO_PRIMARY})" if "standby in recovery" in str(exc) else ""
            raise StorageError(f"PostgreSQL is unavailable: {exc}{hint}") from exc
        except psycopg.Error as exc:  # rolled back by the transaction block
            hint = f" ({PREPARED_HINT})" if "prepared statement" in str(exc) else ""
            raise StorageError(f"PostgreSQL refused the operation: {exc}{hint}") from exc

    @contextmanager
    def _connection(self, write: bool, atomic: bool) -> Iterator[Any]:
        """A read on the replica when it has replayed this storage's writes (`replicas`),
        else on the primary; a write on the primary, its WAL position noted for the replica."""
        if not write and self.replica is not None:
            with self.replica.connection() as conn:
                if conn is not None:
                    yield conn
                    return
        noted = self.replica.wrote if write and self.replica is not None else None
        with self._live_connection(write and atomic, after_commit=noted) as conn:
            yield conn

    @contextmanager
    def _live_connection(
        self, write: bool, after_commit: Callable[[Any], None] | None = None
    ) -> Iterator[Any]:
        """A pooled connection found alive (`check_alive`), with a write's transaction
        begun. A dead one, or one whose BEGIN fails all the same, goes back to the pool (which
        discards a broken one) and the next is taken, up to the pool's size plus one.
        `after_commit(conn)` runs once the caller's work is committed (not when it failed)."""
        import psycopg

        for attempt in range(self._pool.max_size + 1):
            with ExitStack() as stack:
                conn = stack.enter_context(self._pool.connection())
                served: list[Any] = []  # the connection, once the caller's work succeeded
                if after_commit is not None:  # (runs after the transaction below has ended)
                    stack.push(_when_committed(after_commit, served))
                try:  # here, not as the pool's check: its retries back off (1 s, 2 s, 4 s...)
                    check_alive(conn)
                except psycopg.OperationalError:
                    if attempt == self._pool.max_size:
                        raise
                    continue  # (closed: the pool replaces it)
                if write or self._begin is not None:  # (behind a pooler: every use)
                    try:
                        begun = (
                            conn.transaction()
                            if self._begin is None
                            else session_transaction(conn, self._begin)
                        )
                        stack.enter_context(begun)
                    except psycopg.OperationalError:
                        if not conn.broken or attempt == self._pool.max_size:
                            raise
                        continue
                yield conn
                served.append(conn)
                return

    _transient = staticmethod(_aborted_by_conflict)  # a deadlock or serialization victim
    _attempts = DEADLOCK_ATTEMPTS
    _backoff = (0.005, 0.05)

    def _gave_up(self, exc: StorageError, what: str) -> StorageError:
        msg = (
            f"{what}: PostgreSQL aborted the transaction {DEADLOCK_ATTEMPTS} times to break "
            "a deadlock with concurrent writers of the same rows; nothing of it was applied, "
            f"try again ({exc.__cause__})"
        )
        return StorageError(msg)

    def _text_match(
        self, query: str, conn: Any, resource_id: str, *, pool: int
    ) -> TextMatch | None:
        found = self._text.match(query, conn, resource_id)
        return None if found is None else TextMatch(found[0].replace("%s", "?"), found[1])

    def _index_item(self, conn: Any, where: tuple[str, str], vectors: Any) -> None:
        self._item_vectors.write(conn, where, vectors)

    def nearest_items(
        self, prefix: tuple[str, ...], vector: Sequence[float], *, limit: int
    ) -> list[tuple[tuple[str, ...], str, float]]:
        """The items under `prefix` nearest `vector`, through pgvector (HNSW for a big prefix;
        the exact scan when the server has no pgvector)."""
        with self._transaction(write=False) as conn:
            found = self._item_vectors.nearest(conn, prefix, vector, limit)
        return super().nearest_items(prefix, vector, limit=limit) if found is None else found

    # -- schema --------------------------------------------------------------------------------
    def setup(self) -> None:
        """Create or migrate the schema (safe to call twice, and from several processes)."""
        with self._transaction(write=True) as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('langchain_mastra_memory'))")
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            self._migrate(conn, MIGRATIONS, where=f"schema {self.schema!r}", statements=_whole)

    def connection_options(self) -> dict[str, Any]:
        """What every connection to this storage is opened with (its schema on the search
        path, UTC, the lock and connect timeouts; behind a pooler, none of those but the
        connect timeout, and nothing prepared): for a saver sharing the database."""
        return dict(self._options)

    def begin_statement(self) -> str | None:
        """Behind a pooler, what begins each transaction (its session set for it alone: the
        schema, UTC, the lock timeout); None on a plain server (the session has them)."""
        return self._begin

    def on_close(self, closer: Callable[[], None]) -> None:
        """Call `closer` when the storage closes (a pool made for it: LangGraph's saver's)."""
        self._closers.append(closer)

    @property
    def closed(self) -> bool:
        """Whether `close` was called (its pool is closed: nothing can be read or written)."""
        return bool(self._pool.closed)

    def close(self) -> None:
        """Close the pool (and those made for it)."""
        for closer in reversed(self._closers):
            closer()
        self._closers.clear()
        self._pool.close()

    def drop_schema(self) -> None:
        """Drop the schema and everything in it (for tests and teardown; not `public`)."""
        if self.schema == "public":
            raise ConfigurationError("refusing to drop the public schema")
        with self._transaction(write=True) as conn:
            conn.execute(f'DROP SCHEMA "{self.schema}" CASCADE')
