"""The SQL backends' algorithms, written once over a small `Dialect`.

`SQLStorage` holds every algorithm (saving with strictly increasing times, ownership checks,
cloning, neighbour windows, the working-memory read-modify-write) as statements written with
``?`` placeholders. A backend supplies only a connection and its transactions, a `Dialect`
(placeholder, row locks, id-list binding, JSON casts, time codec, "no limit"), its schema
migrations and its full-text query. A third backend costs a dialect, not a copy.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, TypeVar

from ...errors import (
    SchemaVersionError,
    StorageError,
    ThreadExistsError,
)
from ...messages import message_from_json
from ..records import (
    MESSAGE_COLUMNS,
    MessageRow,
    StoredMessage,
    Thread,
    call_ids_column,
    from_iso,
    now_utc,
    stored_message,
    thread_from_row,
)
from .checkpoint_lists import CheckpointListTable
from .items import ItemTable
from .messages import MessageTable
from .observations import ObservationTable
from .retention import RetentionTable
from .search import SearchTable
from .statements import (
    INSERT_RESOURCE,
    NEW_THREAD_COLUMNS,
    SCHEMA_TABLE,
    THREAD_COLUMNS,
    UPDATE_MESSAGE,
    Connection,
    Cursor,
    TextMatch,
    check_thread_owner,
)
from .threads import ThreadTable
from .working_memory import WorkingMemoryTable

T = TypeVar("T")
__all__ = ["SCHEMA_TABLE", "Dialect", "SQLStorage", "TextMatch"]  # what the backends import
Splitter = Callable[[str], Iterable[str]]  # a migration script -> its statements


@dataclass(frozen=True)
class Dialect:
    """What differs between SQL engines, and nothing else."""

    placeholder: str = "?"
    row_lock: str = ""  # appended to a SELECT that must lock its rows until commit
    json_cast: str = ""  # appended to a placeholder bound to a JSON column
    id_chunk: int | None = 500  # ids per IN (...) list; None: bind one array with = ANY(?)
    lateral_windows: bool = False  # neighbour windows as one array-bound LATERAL statement
    one_statement_lists: bool = False  # a thread and its checkpoint list read as one row of arrays
    no_limit: Any = -1  # the LIMIT value meaning "no limit"
    metadata_equals: str = "json_extract(metadata, ?) IS json_extract(?, '$')"
    metadata_key: Callable[[str], str] = field(default=lambda key: f'$."{key}"')
    to_db_time: Callable[[datetime], Any] = field(default=lambda moment: moment)

    def sql(self, statement: str) -> str:
        """`statement` with this engine's placeholders."""
        return _translate(statement, self.placeholder)

    def ids_in(self, column: str, ids: Sequence[str]) -> Iterator[tuple[str, list[Any]]]:
        """``column`` matches one of `ids`, as (condition, params) pieces covering all ids."""
        if self.id_chunk is None:
            yield f"{column} = ANY(?)", [list(ids)]
            return
        for start in range(0, len(ids), self.id_chunk):
            chunk = list(ids[start : start + self.id_chunk])
            yield f"{column} IN ({', '.join('?' * len(chunk))})", chunk


@lru_cache(maxsize=512)
def _translate(statement: str, placeholder: str) -> str:
    return statement if placeholder == "?" else statement.replace("?", placeholder)


class SQLStorage(
    ThreadTable,
    MessageTable,
    SearchTable,
    WorkingMemoryTable,
    ObservationTable,
    ItemTable,
    CheckpointListTable,
    RetentionTable,
):
    """A `MemoryStorage` over a SQL engine: every algorithm here, once.

    Subclasses provide `dialect`, `_transaction` (a context manager yielding a connection that
    executes ``dialect.sql(...)`` statements, one transaction; ``write=True`` for writes, which
    must serialize with other writers of the same rows) and `_text_search`.
    """

    dialect: Dialect

    @abstractmethod
    def _transaction(
        self, *, write: bool, atomic: bool = True
    ) -> AbstractContextManager[Connection]:
        """One transaction on a connection (``atomic=False``: a write whose statements may
        stand each on its own, which an engine may run without a transaction block)."""

    @abstractmethod
    def _text_match(
        self, query: str, conn: Connection, resource_id: str, *, pool: int
    ) -> TextMatch | None:
        """The engine's full-text search for `resource_id` (None when the query has no
        words); see `TextMatch`. `pool`: how many of the best matches the engine may rank
        alone before the caller's filters."""

    # -- schema --------------------------------------------------------------------------------
    def _migrate(
        self, conn: Connection, migrations: Sequence[str], *, where: str, statements: Splitter
    ) -> None:
        """Bring the schema in `conn` to ``len(migrations)``; refuse a newer one (untouched)."""
        self._run(conn, f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER NOT NULL)")
        row = self._run(conn, f"SELECT version FROM {SCHEMA_TABLE}").fetchone()
        version = row[0] if row else 0
        if version > len(migrations):
            msg = (
                f"{where} has memory schema version {version}, newer than this package knows "
                f"({len(migrations)}); upgrade langchain-mastra-memory."
            )
            raise SchemaVersionError(msg)
        for script in migrations[version:]:
            for statement in statements(script):
                conn.execute(statement)
        if row is None:
            self._run(conn, f"INSERT INTO {SCHEMA_TABLE} VALUES (?)", (len(migrations),))
        elif version < len(migrations):
            self._run(conn, f"UPDATE {SCHEMA_TABLE} SET version = ?", (len(migrations),))

    # -- plumbing ------------------------------------------------------------------------------
    # When a whole transaction may be run again: the engine's transient failure (a deadlock
    # victim in PostgreSQL; a schema another connection changed under a SQLite reader), how
    # many attempts, and the random back-off between them (seconds). None: never again.
    _transient: Callable[[BaseException], bool] | None = None
    _attempts = 1
    _backoff = (0.005, 0.02)

    def _retried(self, transaction: Callable[[], T], what: str) -> T:
        """Run a whole `transaction` (a function opening its own), again while it fails for
        the engine's `_transient` reason; then `_gave_up` says so."""
        transient = self._transient
        if transient is None:
            return transaction()
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random

        retrying = Retrying(
            retry=retry_if_exception(transient),
            stop=stop_after_attempt(self._attempts),
            wait=wait_random(*self._backoff),
            reraise=True,
        )
        try:
            return retrying(transaction)
        except StorageError as exc:
            if not transient(exc):
                raise
            raise self._gave_up(exc, what) from exc

    def _gave_up(self, exc: StorageError, what: str) -> StorageError:
        """The error after the last attempt (by default, that attempt's own)."""
        return exc

    def _run(self, conn: Connection, statement: str, params: Sequence[Any] = ()) -> Cursor:
        return conn.execute(self.dialect.sql(statement), params)

    def _time(self, moment: datetime) -> Any:
        return self.dialect.to_db_time(moment)

    def _owned_thread(
        self, conn: Connection, thread_id: str, resource_id: str | None, *, lock: bool = False
    ) -> Thread:
        row = self._thread_row(conn, THREAD_COLUMNS, thread_id, lock=lock)
        check_thread_owner(thread_id, resource_id, row and row[1])
        return thread_from_row(row)

    def _check_thread(
        self, conn: Connection, thread_id: str, resource_id: str | None, *, lock: bool = False
    ) -> None:
        """`_owned_thread` for a caller that only needs the check (no thread built)."""
        row = self._thread_row(conn, "resource_id", thread_id, lock=lock)
        check_thread_owner(thread_id, resource_id, row and row[0])

    def _thread_row(self, conn: Connection, columns: str, thread_id: str, *, lock: bool) -> Any:
        """The thread's `columns` (locked for the transaction with `lock`), or None."""
        statement = f"SELECT {columns} FROM memory_threads WHERE id = ?"
        lock_clause = self.dialect.row_lock if lock else ""
        return self._run(conn, statement + lock_clause, (thread_id,)).fetchone()

    def _insert_thread(
        self,
        conn: Connection,
        thread_id: str,
        resource_id: str,
        title: str | None,
        metadata_json: str,
        *,
        created_at: datetime | None = None,
    ) -> Thread:
        now = self._time(now_utc())
        made = self._time(created_at) if created_at is not None else now
        self._run(conn, INSERT_RESOURCE, (resource_id, now, now))
        inserted = self._run(
            conn,
            f"INSERT INTO memory_threads ({NEW_THREAD_COLUMNS}) "
            f"VALUES (?, ?, ?, ?{self.dialect.json_cast}, ?, ?) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            (thread_id, resource_id, title, metadata_json, made, now),
        ).fetchone()
        if inserted is None:
            raise ThreadExistsError(f"a thread {thread_id!r} already exists")
        return self._owned_thread(conn, thread_id, None)

    @staticmethod
    def _stored(row: Sequence[Any]) -> StoredMessage:
        _id, thread_id, resource_id, content, created_at, tokens = row
        return stored_message(
            message_from_json(content), thread_id, resource_id, created_at, tokens
        )

    def _thread_messages(
        self, conn: Connection, thread_id: str, last: int | None
    ) -> list[StoredMessage]:
        if last is None:
            statement = (
                f"SELECT {MESSAGE_COLUMNS} FROM memory_messages WHERE thread_id = ? "
                "ORDER BY created_at, seq"
            )
            params: tuple[Any, ...] = (thread_id,)
        else:
            statement = (
                f"SELECT {MESSAGE_COLUMNS} FROM (SELECT {MESSAGE_COLUMNS}, seq "
                "FROM memory_messages WHERE thread_id = ? "
                "ORDER BY created_at DESC, seq DESC LIMIT ?) AS newest ORDER BY created_at, seq"
            )
            params = (thread_id, last)
        return [self._stored(row) for row in self._run(conn, statement, params).fetchall()]

    def _existing(
        self, conn: Connection, ids: Sequence[str]
    ) -> dict[str, tuple[str, str, datetime]]:
        """Stored ids among `ids`, with their thread, resource and creation time."""
        found: dict[str, tuple[str, str, datetime]] = {}
        for condition, params in self.dialect.ids_in("id", ids):
            rows = self._run(
                conn,
                f"SELECT id, thread_id, resource_id, created_at FROM memory_messages "
                f"WHERE {condition}",
                params,
            ).fetchall()
            for id_, thread_id, resource_id, created_at in rows:
                found[id_] = (thread_id, resource_id, from_iso(created_at))
        return found

    def _update_row(self, conn: Connection, row: MessageRow) -> None:
        self._run(
            conn,
            UPDATE_MESSAGE,
            (
                row.role,
                row.type,
                row.content,
                row.text,
                call_ids_column(row),
                row.token_count,
                False,
                row.id,
            ),
        )

    def _known_calls(self, conn: Connection, thread_id: str) -> list[str]:
        rows = self._run(
            conn,
            "SELECT tool_call_ids FROM memory_messages "
            "WHERE thread_id = ? AND tool_call_ids IS NOT NULL",
            (thread_id,),
        ).fetchall()
        return [call_id for (ids,) in rows for call_id in ids.split(" ")]
