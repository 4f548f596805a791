"""How `SQLStorage`'s rooms run their statements: the statements more than one room writes
(with ``?`` placeholders), the `Dialect` that translates them for an engine, `TextMatch` (what
a backend's full-text search returns) and `SQLRoom`, the base every room stands on (the
transactions and their retries, the statement runner, the row helpers rooms share), typed, so a
room reaches nothing of the whole that is not declared here."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple, Protocol, TypeVar

from ...errors import ResourceMismatchError, StorageError, ThreadExistsError, ThreadNotFoundError
from ...messages import message_from_json
from ..base import MemoryStorage
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

T = TypeVar("T")

SCHEMA_TABLE = "memory_schema"  # one row: the number of migrations applied
NEW_THREAD_COLUMNS = "id, resource_id, title, metadata, created_at, updated_at"
THREAD_COLUMNS = NEW_THREAD_COLUMNS + ", archived_at"
INSERT_MESSAGE = (
    "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, text, "
    "tool_call_ids, token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
UPDATE_MESSAGE = (
    "UPDATE memory_messages SET role = ?, type = ?, content = ?, text = ?, tool_call_ids = ?, "
    "token_count = ?, embedded = ? WHERE id = ?"
)
CLONE_MESSAGE = (
    "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, text, "
    "tool_call_ids, token_count, created_at) SELECT ?, ?, resource_id, role, type, ?, text, "
    "tool_call_ids, token_count, created_at FROM memory_messages WHERE id = ?"
)
INSERT_RESOURCE = (
    "INSERT INTO memory_resources (id, created_at, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (id) DO NOTHING"
)
TOUCH_THREAD = "UPDATE memory_threads SET updated_at = ? WHERE id = ?"


def window_sql(hits: int, columns: str = MESSAGE_COLUMNS) -> str:
    """One statement for the neighbour windows of `hits` messages: per hit, its anchor (id and
    owner checked) and up to ``before`` earlier / ``after`` later messages of its thread.
    Rows: `columns` (the message columns by default), then ``seq``. Parameters per hit: id,
    resource id, before, id, resource id, after + 1."""
    anchor = (
        "(SELECT thread_id, created_at, seq FROM memory_messages WHERE id = ? AND resource_id = ?)"
    )
    qualified = ", ".join("m." + c for c in columns.split(", "))
    side = (
        f"SELECT {columns}, seq FROM (SELECT {qualified}, m.seq FROM memory_messages m "
        f"JOIN {anchor} AS a ON m.thread_id = a.thread_id "
        "WHERE (m.created_at, m.seq) {op} (a.created_at, a.seq) "
        "ORDER BY m.created_at {order}, m.seq {order} LIMIT ?) AS w{n}"
    )
    blocks = [
        side.format(op=op, order=order, n=2 * i + j)
        for i in range(hits)
        for j, (op, order) in enumerate((("<", "DESC"), (">=", "ASC")))
    ]
    return " UNION ALL ".join(blocks)


def lateral_window_sql(columns: str = MESSAGE_COLUMNS) -> str:
    """`window_sql` as one statement whose text does not depend on the number of hits, for an
    engine with arrays and ``LATERAL`` (PostgreSQL): the same rows, from the parameters (the
    ids as an array, resource id, before, after + 1), so the driver prepares it once and the
    server plans it once per connection."""
    qualified = ", ".join("m." + c for c in columns.split(", "))
    side = (
        f"(SELECT {qualified}, m.seq FROM memory_messages m WHERE m.thread_id = a.thread_id "
        "AND (m.created_at, m.seq) {op} (a.created_at, a.seq) "
        "ORDER BY m.created_at {order}, m.seq {order} LIMIT ?)"
    )
    return (
        "SELECT w.* FROM unnest(?::text[]) AS h(id) "
        "JOIN memory_messages a ON a.id = h.id AND a.resource_id = ? "
        f"CROSS JOIN LATERAL ({side.format(op='<', order='DESC')} UNION ALL "
        f"{side.format(op='>=', order='ASC')}) AS w"
    )


# ids of messages read-only turns left in a graph's state (`messages`): both dialects' migration
WITHHELD_TABLE = """
    CREATE TABLE memory_withheld_messages (
        thread_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        PRIMARY KEY (thread_id, message_id)
    );
    CREATE INDEX memory_withheld_by_resource ON memory_withheld_messages(resource_id);
"""

# a graph's message lists, each value once (`checkpoint_lists`), and retention's reads by age
# (`retention`): both dialects' migration, with the value column's type (BLOB, BYTEA) and the
# time column's (TEXT, TIMESTAMPTZ) filled in
CHECKPOINT_LISTS_TABLES = """
    CREATE INDEX memory_messages_by_age ON memory_messages(created_at);
    CREATE INDEX memory_threads_by_activity ON memory_threads(updated_at);
    CREATE INDEX memory_observation_groups_by_age ON memory_observation_groups(created_at);
    CREATE TABLE memory_checkpoint_values (
        thread_id TEXT NOT NULL REFERENCES memory_threads(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        message_id TEXT,
        type TEXT,
        value {bytes},
        created_at {time} NOT NULL,
        PRIMARY KEY (thread_id, key)
    );
    CREATE INDEX memory_checkpoint_values_by_message
        ON memory_checkpoint_values(thread_id, message_id);
    CREATE TABLE memory_checkpoint_lists (
        thread_id TEXT NOT NULL REFERENCES memory_threads(id) ON DELETE CASCADE,
        checkpoint_ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        base_id TEXT,
        keep INTEGER NOT NULL,
        tail TEXT NOT NULL,
        depth INTEGER NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
    );
"""

# when each observation group joined the log (an observation at its activation, a reflection at
# its commit), what `observations_as_of` reads: both dialects' migration, with the time column's
# type filled in; groups written before it count from their creation
OBSERVATIONS_ACTIVATED = """
    ALTER TABLE memory_observation_groups ADD COLUMN activated_at {time};
    UPDATE memory_observation_groups SET activated_at = created_at WHERE active = TRUE;
"""

# the values extractors keep per observation scope (`observations`): both dialects' migration
EXTRACTED_VALUES_TABLE = """
    CREATE TABLE memory_extracted_values (
        scope_key TEXT NOT NULL,
        slug TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        value TEXT NOT NULL,
        source TEXT NOT NULL,
        updated_at {time} NOT NULL,
        PRIMARY KEY (scope_key, slug)
    );
    CREATE INDEX memory_extracted_values_by_resource ON memory_extracted_values(resource_id);
"""


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


class TextMatch(NamedTuple):
    """A dialect's full-text search: ``statement`` is ``SELECT m.id, m.thread_id, <score> AS
    score FROM ... WHERE <match>`` over messages aliased ``m`` (higher scores better) taking
    the `params`; the caller appends its filters (resource, role, thread), the order
    and the limit. When `unpooled` is given, the statement ranks only a pool of the best
    matches before those filters, and `unpooled` is the same search over every match, for
    when they leave too few."""

    statement: str
    params: tuple[Any, ...]
    unpooled: str | None = None


class Cursor(Protocol):
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ...) -> Cursor: ...


class SQLRoom(MemoryStorage):
    """What every room of `SQLStorage` (threads, messages, search, working memory, the
    observation log, items, checkpoint lists, retention) stands on: the dialect, the
    transactions and their retries, the statement runner and the row helpers more than one
    room reads. A backend provides `dialect`, `_transaction` and `_text_match`; the observation
    log provides the three hooks the threads room calls when a thread is cloned, given away or
    deleted."""

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
        self._run(conn, UPDATE_MESSAGE, (*row_values(row), False, row.id))

    def _known_calls(self, conn: Connection, thread_id: str) -> list[str]:
        rows = self._run(
            conn,
            "SELECT tool_call_ids FROM memory_messages "
            "WHERE thread_id = ? AND tool_call_ids IS NOT NULL",
            (thread_id,),
        ).fetchall()
        return [call_id for (ids,) in rows for call_id in ids.split(" ")]

    # -- the observation log's part in a thread's clone, transfer and deletion -----------------
    @abstractmethod
    def _copy_observations(
        self, conn: Connection, source: str, target: str, copies: dict[str, tuple[str, int, int]]
    ) -> None:
        """Carry scope `source`'s log of the copied messages to the clone's scope `target`."""

    @abstractmethod
    def _forget_observed(self, conn: Connection, key: str, message_ids: Sequence[str]) -> int:
        """Unlearn `message_ids` from scope `key`'s log; the groups removed."""

    @abstractmethod
    def _delete_observations(self, conn: Connection, key: str) -> None:
        """Forget scope `key`'s log and state."""


def row_values(row: MessageRow) -> tuple[Any, ...]:
    """A message row's stored columns, in `INSERT_MESSAGE` / `UPDATE_MESSAGE` order: role, type,
    content, text, tool-call ids, token count."""
    return (row.role, row.type, row.content, row.text, call_ids_column(row), row.token_count)


def check_thread_owner(thread_id: str, resource_id: str | None, owner: str | None) -> None:
    """A thread found (`owner`: its resource) and, when `resource_id` is given, owned by it."""
    if owner is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}; create it with create_thread()")
    if resource_id is not None and owner != resource_id:
        raise ResourceMismatchError.for_thread(thread_id, resource_id)
