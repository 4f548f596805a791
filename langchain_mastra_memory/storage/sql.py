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
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple, Protocol, TypeVar

from langchain_core.messages import ToolMessage

from ..errors import (
    ConfigurationError,
    InvalidMessageError,
    ResourceMismatchError,
    SchemaVersionError,
    StorageError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from ..messages import message_from_json, message_to_json, new_message_id, orphan_tool_results
from ..threads.thread import Thread
from .base import UNSET, report_orphans
from .items import ItemTable
from .observations import ObservationTable, scope_key
from .records import (
    MESSAGE_COLUMNS,
    ImportedThread,
    MessageFilter,
    MessageRow,
    ResourceSummary,
    StoredMessage,
    call_ids_column,
    check_conflicts,
    check_metadata_filter,
    check_order,
    check_owners,
    dumps_metadata,
    from_iso,
    message_rows,
    next_timestamps,
    now_utc,
    saved_messages,
    stored_message,
    thread_from_row,
)
from .validation import (
    check_id,
    check_ids,
    check_optional_id,
    check_query,
    check_time,
    check_title,
)

T = TypeVar("T")
SCHEMA_TABLE = "memory_schema"  # one row: the number of migrations applied
NEW_THREAD_COLUMNS = "id, resource_id, title, metadata, created_at, updated_at"
THREAD_COLUMNS = NEW_THREAD_COLUMNS + ", archived_at"
_INSERT_MESSAGE = (
    "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, text, "
    "tool_call_ids, token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE_MESSAGE = (
    "UPDATE memory_messages SET role = ?, type = ?, content = ?, text = ?, tool_call_ids = ?, "
    "token_count = ?, embedded = ? WHERE id = ?"
)
_CLONE_MESSAGE = (
    "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, text, "
    "tool_call_ids, token_count, created_at) SELECT ?, ?, resource_id, role, type, ?, text, "
    "tool_call_ids, token_count, created_at FROM memory_messages WHERE id = ?"
)
_INSERT_RESOURCE = (
    "INSERT INTO memory_resources (id, created_at, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (id) DO NOTHING"
)
_TOUCH_THREAD = "UPDATE memory_threads SET updated_at = ? WHERE id = ?"


def _window_sql(hits: int) -> str:
    """One statement for the neighbour windows of `hits` messages: per hit, its anchor (id and
    owner checked) and up to ``before`` earlier / ``after`` later messages of its thread.
    Rows: the message columns, then ``seq``. Parameters per hit: id, resource id, before,
    id, resource id, after + 1."""
    anchor = (
        "(SELECT thread_id, created_at, seq FROM memory_messages WHERE id = ? AND resource_id = ?)"
    )
    columns = ", ".join("m." + c for c in MESSAGE_COLUMNS.split(", "))
    side = (
        f"SELECT {MESSAGE_COLUMNS}, seq FROM (SELECT {columns}, m.seq FROM memory_messages m "
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


Splitter = Callable[[str], Iterable[str]]  # a migration script -> its statements


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


@dataclass(frozen=True)
class Dialect:
    """What differs between SQL engines, and nothing else."""

    placeholder: str = "?"
    row_lock: str = ""  # appended to a SELECT that must lock its rows until commit
    json_cast: str = ""  # appended to a placeholder bound to a JSON column
    id_chunk: int | None = 500  # ids per IN (...) list; None: bind one array with = ANY(?)
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


class SQLStorage(ObservationTable, ItemTable):
    """A `MemoryStorage` over a SQL engine: every algorithm here, once.

    Subclasses provide `dialect`, `_transaction` (a context manager yielding a connection that
    executes ``dialect.sql(...)`` statements, one transaction; ``write=True`` for writes, which
    must serialize with other writers of the same rows) and `_text_search`.
    """

    dialect: Dialect

    @abstractmethod
    def _transaction(self, *, write: bool) -> AbstractContextManager[Connection]:
        """One transaction on a connection."""

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
        statement = f"SELECT {THREAD_COLUMNS} FROM memory_threads WHERE id = ?"
        row = self._run(
            conn, statement + (self.dialect.row_lock if lock else ""), (thread_id,)
        ).fetchone()
        if row is None:
            raise ThreadNotFoundError(f"no thread {thread_id!r}; create it with create_thread()")
        thread = thread_from_row(row)
        if resource_id is not None and thread.resource_id != resource_id:
            raise ResourceMismatchError.for_thread(thread_id, resource_id)
        return thread

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
        self._run(conn, _INSERT_RESOURCE, (resource_id, now, now))
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
            _UPDATE_MESSAGE,
            (
                row.role, row.type, row.content, row.text, call_ids_column(row),
                row.token_count, False, row.id,
            ),
        )  # fmt: skip

    def _known_calls(self, conn: Connection, thread_id: str) -> list[str]:
        rows = self._run(
            conn,
            "SELECT tool_call_ids FROM memory_messages "
            "WHERE thread_id = ? AND tool_call_ids IS NOT NULL",
            (thread_id,),
        ).fetchall()
        return [call_id for (ids,) in rows for call_id in ids.split(" ")]

    # -- threads -------------------------------------------------------------------------------
    def create_thread(
        self,
        *,
        thread_id: str,
        resource_id: str,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        check_id(thread_id, "thread_id")
        check_id(resource_id, "resource_id")
        check_title(title)
        metadata_json = dumps_metadata(metadata)
        with self._transaction(write=True) as conn:
            return self._insert_thread(conn, thread_id, resource_id, title, metadata_json)

    def get_thread(self, thread_id: str) -> Thread | None:
        check_id(thread_id, "thread_id")
        with self._transaction(write=False) as conn:
            row = self._run(
                conn, f"SELECT {THREAD_COLUMNS} FROM memory_threads WHERE id = ?", (thread_id,)
            ).fetchone()
        return thread_from_row(row) if row else None

    def get_threads(self, thread_ids: Sequence[str]) -> dict[str, Thread]:
        ids = list(dict.fromkeys(check_ids(thread_ids, "thread_ids")))
        found: dict[str, Thread] = {}
        with self._transaction(write=False) as conn:
            for condition, params in self.dialect.ids_in("id", ids):
                statement = f"SELECT {THREAD_COLUMNS} FROM memory_threads WHERE {condition}"
                for row in self._run(conn, statement, params).fetchall():
                    thread = thread_from_row(row)
                    found[thread.id] = thread
        return found

    def _thread_filter(
        self, resource_id: str | None, metadata: dict[str, Any] | None, archived: bool | None
    ) -> tuple[str, list[Any]]:
        """`` WHERE ...`` (or nothing) selecting threads by owner, metadata and archived."""
        check_optional_id(resource_id, "resource_id")
        if archived is not None and not isinstance(archived, bool):
            raise ConfigurationError(f"archived must be True, False or None, got {archived!r}")
        where: list[str] = []
        params: list[Any] = []
        if resource_id is not None:
            where.append("resource_id = ?")
            params.append(resource_id)
        for key, value in check_metadata_filter(metadata):
            where.append(self.dialect.metadata_equals)
            params += [self.dialect.metadata_key(key), value]
        if archived is not None:
            where.append("archived_at IS NOT NULL" if archived else "archived_at IS NULL")
        return (" WHERE " + " AND ".join(where) if where else ""), params

    def list_threads(
        self,
        *,
        resource_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        order_by: str = "updated_at",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
        archived: bool | None = None,
    ) -> list[Thread]:
        check_order(order_by, limit, offset)
        where, params = self._thread_filter(resource_id, metadata, archived)
        direction = "DESC" if descending else "ASC"
        statement = (
            f"SELECT {THREAD_COLUMNS} FROM memory_threads{where} "
            f"ORDER BY {order_by} {direction}, id {direction} LIMIT ? OFFSET ?"
        )
        params += [self.dialect.no_limit if limit is None else limit, offset]
        with self._transaction(write=False) as conn:
            return [thread_from_row(r) for r in self._run(conn, statement, params).fetchall()]

    def count_threads(
        self,
        *,
        resource_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        archived: bool | None = None,
    ) -> int:
        where, params = self._thread_filter(resource_id, metadata, archived)
        with self._transaction(write=False) as conn:
            row = self._run(conn, f"SELECT count(*) FROM memory_threads{where}", params).fetchone()
        return int(row[0])

    def page_resources(
        self, *, query: str = "", offset: int = 0, limit: int = 50
    ) -> tuple[list[ResourceSummary], int]:
        if not (isinstance(offset, int) and offset >= 0 and isinstance(limit, int) and limit > 0):
            raise ConfigurationError("offset must be an int >= 0 and limit an int >= 1")
        escaped = query.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        needle = f"%{escaped}%"
        where = " WHERE lower(resource_id) LIKE ? ESCAPE '\\'" if query else ""
        params: tuple[Any, ...] = (needle,) if query else ()
        with self._transaction(write=False) as conn:
            (total,) = self._run(
                conn, f"SELECT count(DISTINCT resource_id) FROM memory_threads{where}", params
            ).fetchone()
            page = self._run(
                conn,
                f"SELECT resource_id, count(*), max(updated_at) AS newest FROM memory_threads"
                f"{where} GROUP BY resource_id ORDER BY newest DESC, resource_id DESC "
                "LIMIT ? OFFSET ?",
                (*params, limit, offset),
            ).fetchall()
            totals: dict[str, tuple[int, float]] = {}
            for condition, ids in self.dialect.ids_in("resource_id", [r[0] for r in page]):
                for owner, count, tokens in self._run(
                    conn,
                    "SELECT resource_id, count(*), coalesce(sum(token_count), 0) "
                    f"FROM memory_messages WHERE {condition} GROUP BY resource_id",
                    ids,
                ).fetchall():
                    totals[owner] = (int(count), float(tokens))
        rows = [
            ResourceSummary(owner, int(n), from_iso(at), *totals.get(owner, (0, 0.0)))
            for owner, n, at in page
        ]
        return rows, int(total)

    def thread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        ids = list(dict.fromkeys(check_ids(thread_ids, "thread_ids")))
        found: dict[str, tuple[int, float]] = {}
        with self._transaction(write=False) as conn:
            for condition, params in self.dialect.ids_in("thread_id", ids):
                rows = self._run(
                    conn,
                    "SELECT thread_id, count(*), coalesce(sum(token_count), 0) "
                    f"FROM memory_messages WHERE {condition} GROUP BY thread_id",
                    params,
                ).fetchall()
                found.update({r[0]: (int(r[1]), float(r[2])) for r in rows})
        return {i: found.get(i, (0, 0.0)) for i in ids}

    def set_archived(
        self, thread_id: str, *, archived: bool, resource_id: str | None = None
    ) -> Thread:
        check_id(thread_id, "thread_id")
        check_optional_id(resource_id, "resource_id")
        with self._transaction(write=True) as conn:
            thread = self._owned_thread(conn, thread_id, resource_id, lock=True)
            if thread.archived != archived:  # updated_at stays: archiving is not activity
                moment = self._time(now_utc()) if archived else None
                self._run(
                    conn, "UPDATE memory_threads SET archived_at = ? WHERE id = ?",
                    (moment, thread_id),
                )  # fmt: skip
            return self._owned_thread(conn, thread_id, None)

    def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, Any] | None = None,
        resource_id: str | None = None,
    ) -> Thread:
        check_id(thread_id, "thread_id")
        check_optional_id(resource_id, "resource_id")
        if title is not UNSET:
            check_title(title)
        dumps_metadata(metadata)
        with self._transaction(write=True) as conn:
            thread = self._owned_thread(conn, thread_id, resource_id, lock=True)
            merged = {**thread.metadata, **(metadata or {})}
            new_title = thread.title if title is UNSET else title
            self._run(
                conn,
                f"UPDATE memory_threads SET title = ?, metadata = ?{self.dialect.json_cast}, "
                "updated_at = ? WHERE id = ?",
                (new_title, dumps_metadata(merged), self._time(now_utc()), thread_id),
            )
            return self._owned_thread(conn, thread_id, None)

    def delete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        check_id(thread_id, "thread_id")
        check_optional_id(resource_id, "resource_id")
        with self._transaction(write=True) as conn:
            try:
                thread = self._owned_thread(conn, thread_id, resource_id, lock=True)
            except ThreadNotFoundError:
                return False
            said = self._thread_message_ids(conn, thread_id)
            self._run(conn, "DELETE FROM memory_threads WHERE id = ?", (thread_id,))
            key = scope_key("thread", resource_id="", thread_id=thread_id)
            self._delete_observations(conn, key)  # a later owner of the id starts with no log
            # the owner's resource-scoped log forgets what this thread said (by provenance)
            owner_key = scope_key("resource", resource_id=thread.resource_id, thread_id=None)
            self._forget_observed(conn, owner_key, said)
            return True

    def _thread_message_ids(self, conn: Any, thread_id: str) -> list[str]:
        rows = self._run(
            conn, "SELECT id FROM memory_messages WHERE thread_id = ?", (thread_id,)
        ).fetchall()
        return [str(r[0]) for r in rows]

    def clone_thread(
        self,
        thread_id: str,
        *,
        new_thread_id: str,
        resource_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        message_limit: int | None = None,
        message_filter: MessageFilter | None = None,
    ) -> tuple[Thread, list[StoredMessage]]:
        check_id(thread_id, "thread_id")
        check_id(new_thread_id, "new_thread_id")
        check_optional_id(resource_id, "resource_id")
        check_title(title)
        dumps_metadata(metadata)
        wanted = MessageFilter.parse(message_filter)
        if message_limit is not None:
            check_order("created_at", message_limit, 0)
        with self._transaction(write=True) as conn:
            source = self._owned_thread(conn, thread_id, resource_id)
            merged = {
                **source.metadata,
                **(metadata or {}),
                "clone": {"source_thread_id": thread_id, "cloned_at": now_utc().isoformat()},
            }
            clone = self._insert_thread(
                conn, new_thread_id, source.resource_id,
                title if title is not None else source.title, dumps_metadata(merged),
            )  # fmt: skip
            self._run(  # the thread's own working memory comes along
                conn,
                "UPDATE memory_threads SET working_memory = "
                "(SELECT working_memory FROM memory_threads WHERE id = ?) WHERE id = ?",
                (thread_id, new_thread_id),
            )
            chosen = [s for s in self._thread_messages(conn, thread_id, None) if wanted.keeps(s)]
            if message_limit is not None:
                chosen = chosen[len(chosen) - message_limit :] if message_limit else []
            copied, copies = [], {}  # original id -> its copy's
            for stored in chosen:
                message = stored.message.model_copy(update={"id": new_message_id()})
                self._run(
                    conn,
                    _CLONE_MESSAGE,
                    (message.id, new_thread_id, message_to_json(message), stored.message.id),
                )
                copied.append(replace(stored, message=message, thread_id=new_thread_id,
                                      copied_from=stored.message.id))  # fmt: skip
                copies[str(stored.message.id)] = str(message.id)
            seqs = dict(  # each original's seq and its copy's (the observation log's cursors)
                self._run(conn, "SELECT id, seq FROM memory_messages WHERE thread_id IN (?, ?)",
                          (thread_id, new_thread_id)).fetchall()
            )  # fmt: skip
            self._copy_observations(
                conn,
                scope_key("thread", resource_id="", thread_id=thread_id),
                scope_key("thread", resource_id="", thread_id=new_thread_id),
                {old: (new, seqs[new], seqs[old]) for old, new in copies.items()},
            )
            return clone, copied

    def transfer_thread(
        self, thread_id: str, *, to_resource_id: str, resource_id: str | None = None
    ) -> tuple[Thread, list[StoredMessage]]:
        check_id(thread_id, "thread_id")
        check_id(to_resource_id, "to_resource_id")
        check_optional_id(resource_id, "resource_id")
        with self._transaction(write=True) as conn:
            thread = self._owned_thread(conn, thread_id, resource_id, lock=True)
            if thread.resource_id != to_resource_id:
                # the old owner's resource-scoped log forgets what the thread said
                old_key = scope_key("resource", resource_id=thread.resource_id, thread_id=None)
                self._forget_observed(conn, old_key, self._thread_message_ids(conn, thread_id))
                now = self._time(now_utc())
                self._run(conn, _INSERT_RESOURCE, (to_resource_id, now, now))
                for table, column in (
                    ("memory_threads", "id"),
                    ("memory_messages", "thread_id"),  # keyword owner tokens follow (the
                    # generated tsv in PostgreSQL, a trigger on the FTS table in SQLite)
                    ("memory_observation_groups", "scope_key"),
                ):
                    key = (
                        scope_key("thread", resource_id="", thread_id=thread_id)
                        if column == "scope_key"
                        else thread_id
                    )
                    self._run(
                        conn, f"UPDATE {table} SET resource_id = ? WHERE {column} = ?",
                        (to_resource_id, key),
                    )  # fmt: skip
            return (
                self._owned_thread(conn, thread_id, None),
                self._thread_messages(conn, thread_id, None),
            )

    # -- messages ------------------------------------------------------------------------------
    def save_messages(
        self,
        messages: Sequence[object],
        *,
        thread_id: str,
        resource_id: str,
        created_at: Sequence[datetime | None] | None = None,
    ) -> list[StoredMessage]:
        check_id(thread_id, "thread_id")
        check_id(resource_id, "resource_id")  # required: saving checks ownership
        rows = message_rows(messages, created_at)
        with self._transaction(write=True) as conn:
            self._owned_thread(conn, thread_id, resource_id, lock=True)
            return self._save_rows(conn, rows, thread_id, resource_id)

    def _save_rows(
        self, conn: Connection, rows: list[MessageRow], thread_id: str, resource_id: str
    ) -> list[StoredMessage]:
        """Insert (or, by id, update) rows in an owned thread, in the caller's transaction.
        The owner's row is locked first: a resource's writers take turns, so its messages
        commit in ``seq`` order (observational memory's resource-scope cursor relies on it;
        SQLite has one writer anyway)."""
        if not rows:
            return []
        if self.dialect.row_lock:  # (SQLite's write transaction is the one lock already)
            self._run(
                conn, f"SELECT id FROM memory_resources WHERE id = ?{self.dialect.row_lock}",
                (resource_id,),
            )  # fmt: skip
        existing = self._existing(conn, [r.id for r in rows])
        check_conflicts(rows, existing, thread_id)
        has_results = any(isinstance(r.message, ToolMessage) for r in rows)
        known_calls = self._known_calls(conn, thread_id) if has_results else []
        last = self._run(
            conn, "SELECT MAX(created_at) FROM memory_messages WHERE thread_id = ?", (thread_id,)
        ).fetchone()[0]
        fresh = [r for r in rows if r.id not in existing and r.created_at is None]
        times = dict(
            zip(
                (r.id for r in fresh),
                next_timestamps(from_iso(last) if last else None, len(fresh)),
                strict=True,
            )
        )
        for row in rows:
            if row.id in existing:
                self._update_row(conn, row)
            else:
                self._run(
                    conn,
                    _INSERT_MESSAGE,
                    (
                        row.id, thread_id, resource_id, row.role, row.type, row.content,
                        row.text, call_ids_column(row), row.token_count,
                        self._time(row.created_at or times[row.id]),
                    ),
                )  # fmt: skip
        self._run(conn, _TOUCH_THREAD, (self._time(now_utc()), thread_id))
        report_orphans(orphan_tool_results([r.message for r in rows], known_calls), thread_id)
        return saved_messages(rows, existing, times, thread_id, resource_id)

    def save_import(self, threads: Sequence[ImportedThread]) -> list[StoredMessage]:
        checked = [(t, message_rows(t.messages, t.created_at)) for t in threads]
        for t in threads:
            check_id(t.thread_id, "thread_id")
            check_id(t.resource_id, "resource_id")
            check_title(t.title)
        saved: list[StoredMessage] = []
        with self._transaction(write=True) as conn:
            for t, rows in checked:
                row = self._run(
                    conn, f"SELECT {THREAD_COLUMNS} FROM memory_threads WHERE id = ?",
                    (t.thread_id,),
                ).fetchone()  # fmt: skip
                if row is None:
                    self._insert_thread(
                        conn, t.thread_id, t.resource_id, t.title, dumps_metadata(t.metadata),
                        created_at=t.thread_created_at,
                    )  # fmt: skip
                elif thread_from_row(row).resource_id != t.resource_id:
                    raise ResourceMismatchError.for_thread(t.thread_id, t.resource_id)
                saved += self._save_rows(conn, rows, t.thread_id, t.resource_id)
                if t.thread_updated_at is not None:  # as exported: a round trip changes nothing
                    self._run(
                        conn, "UPDATE memory_threads SET updated_at = ? WHERE id = ?",
                        (self._time(t.thread_updated_at), t.thread_id),
                    )  # fmt: skip
        return saved

    def list_messages(
        self, thread_id: str, *, last: int | None = None, resource_id: str | None = None
    ) -> list[StoredMessage]:
        if last is not None and (not isinstance(last, int) or isinstance(last, bool) or last < 0):
            raise InvalidMessageError(f"last must be a non-negative int or None, got {last!r}")
        check_id(thread_id, "thread_id")
        check_optional_id(resource_id, "resource_id")
        with self._transaction(write=False) as conn:
            self._owned_thread(conn, thread_id, resource_id)
            return self._thread_messages(conn, thread_id, last)

    def page_messages(
        self,
        thread_id: str,
        *,
        resource_id: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        descending: bool = False,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> tuple[list[StoredMessage], int]:
        check_id(thread_id, "thread_id")
        check_optional_id(resource_id, "resource_id")
        check_order("created_at", limit, offset)
        where, params = "thread_id = ?", [thread_id]
        for bound, op, name in ((since, ">=", "since"), (until, "<", "until")):
            moment = check_time(bound, name, ConfigurationError)
            if moment is not None:
                where += f" AND created_at {op} ?"
                params.append(self._time(moment))
        direction = "DESC" if descending else "ASC"
        with self._transaction(write=False) as conn:
            self._owned_thread(conn, thread_id, resource_id)
            (total,) = self._run(
                conn, f"SELECT count(*) FROM memory_messages WHERE {where}", params
            ).fetchone()
            rows = self._run(
                conn,
                f"SELECT {MESSAGE_COLUMNS} FROM memory_messages WHERE {where} "
                f"ORDER BY created_at {direction}, seq {direction} LIMIT ? OFFSET ?",
                [*params, self.dialect.no_limit if limit is None else limit, offset],
            ).fetchall()
        return [self._stored(r) for r in rows], int(total)

    def get_messages_by_id(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        check_optional_id(resource_id, "resource_id")
        found: list[StoredMessage] = []
        with self._transaction(write=False) as conn:
            for condition, params in self.dialect.ids_in("id", ids):
                # by primary key only: with "AND resource_id = ?" the planner may walk the
                # resource's index instead (46 ms at 100k messages); the owner is checked here
                statement = f"SELECT {MESSAGE_COLUMNS} FROM memory_messages WHERE {condition}"
                rows = self._run(conn, statement, params).fetchall()
                found += [self._stored(r) for r in rows if resource_id in (None, r[2])]
        return sorted(found, key=lambda s: (s.thread_id, s.created_at))

    def update_messages(
        self, messages: Sequence[object], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        check_optional_id(resource_id, "resource_id")
        if isinstance(messages, (str, bytes)):
            raise InvalidMessageError("update_messages needs a list of messages, not a string")
        for message in messages:
            if getattr(message, "id", None) is None:
                raise InvalidMessageError("update_messages needs messages that have an id")
        rows = message_rows(messages)
        with self._transaction(write=True) as conn:
            existing = self._existing(conn, [r.id for r in rows])
            check_owners([r.id for r in rows], existing, resource_id)
            for row in rows:
                self._update_row(conn, row)
            now = self._time(now_utc())
            for thread_id in sorted({existing[r.id][0] for r in rows}):
                self._run(conn, _TOUCH_THREAD, (now, thread_id))
        return self.get_messages_by_id([r.id for r in rows])

    def delete_messages(self, message_ids: Sequence[str], *, resource_id: str | None = None) -> int:
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        check_optional_id(resource_id, "resource_id")
        with self._transaction(write=True) as conn:
            existing = self._existing(conn, ids)
            check_owners(existing, existing, resource_id)
            for condition, params in self.dialect.ids_in("id", list(existing)):
                self._run(conn, f"DELETE FROM memory_messages WHERE {condition}", params)
        return len(existing)

    def move_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> list[StoredMessage]:
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        check_id(thread_id, "thread_id")
        check_id(resource_id, "resource_id")
        with self._transaction(write=True) as conn:
            self._owned_thread(conn, thread_id, resource_id, lock=True)
            existing = self._existing(conn, ids)
            check_owners(ids, existing, resource_id)
            for condition, params in self.dialect.ids_in("id", ids):
                self._run(
                    conn, f"UPDATE memory_messages SET thread_id = ? WHERE {condition}",
                    (thread_id, *params),
                )  # fmt: skip
            now = self._time(now_utc())
            for touched in sorted({thread_id, *(existing[i][0] for i in ids)}):
                self._run(conn, _TOUCH_THREAD, (now, touched))
        return self.get_messages_by_id(ids)

    # -- recall --------------------------------------------------------------------------------
    def search_text(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int = 10,
        thread_ids: Sequence[str] | None = None,
    ) -> list[tuple[str, str, float]]:
        check_id(resource_id, "resource_id")
        check_optional_id(thread_id, "thread_id")
        check_query(query)
        threads = None if thread_ids is None else check_ids(thread_ids, "thread_ids")
        if thread_id is not None:
            threads = [thread_id] if threads is None or thread_id in threads else []
        if threads is not None and not threads:
            return []
        return self._retried(
            lambda: self._search_text(query, resource_id, threads, limit), "searching text"
        )

    def _search_text(
        self, query: str, resource_id: str, threads: list[str] | None, limit: int
    ) -> list[tuple[str, str, float]]:
        with self._transaction(write=False) as conn:  # choosing the words and ranking: one read
            # a thread's matches are a part of its resource's: rank a deeper pool for it
            pool = limit if threads is None else 4 * limit  # (the dialect may deepen it)
            match = self._text_match(query, conn, resource_id, pool=pool)
            if match is None:
                return []
            where = " AND m.resource_id = ? AND m.role IN ('user', 'assistant')"
            params: list[Any] = [*match.params, resource_id]
            if threads is not None:
                where += f" AND m.thread_id IN ({', '.join('?' * len(threads))})"
                params.extend(threads)
            order = " ORDER BY score DESC LIMIT ?"
            rows = self._run(conn, match.statement + where + order, [*params, limit]).fetchall()
            if len(rows) < limit and match.unpooled is not None:  # the filters ate the pool:
                # any better match that passes them was outside it, so rank them all
                rows = self._run(conn, match.unpooled + where + order, [*params, limit]).fetchall()
        return [(r[0], r[1], float(r[2])) for r in rows]

    def message_windows(
        self, message_ids: Sequence[str], *, before: int, after: int, resource_id: str
    ) -> list[StoredMessage]:
        check_id(resource_id, "resource_id")
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        if not ids:
            return []
        params = [p for i in ids for p in (i, resource_id, before, i, resource_id, after + 1)]
        with self._transaction(write=False) as conn:
            rows = self._run(conn, _window_sql(len(ids)), params).fetchall()
        ordered = sorted({row[0]: row for row in rows}.values(), key=lambda r: (r[1], r[4], r[6]))
        return [self._stored(row[:6]) for row in ordered]  # by thread, then time and seq

    def unembedded(self, *, limit: int = 500) -> list[StoredMessage]:
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                f"SELECT {MESSAGE_COLUMNS} FROM memory_messages WHERE embedded = ? "
                "AND role IN ('user', 'assistant') ORDER BY seq LIMIT ?",
                (False, limit),
            ).fetchall()
        return [self._stored(r) for r in rows]

    def mark_embedded(self, message_ids: Sequence[str], *, embedded: bool = True) -> None:
        ids = check_ids(message_ids, "message_ids")
        with self._transaction(write=True) as conn:
            for condition, params in self.dialect.ids_in("id", ids):
                self._run(
                    conn,
                    f"UPDATE memory_messages SET embedded = ? WHERE {condition}",
                    [embedded, *params],
                )

    def embedded_ids(self, *, after: int = 0, limit: int = 1000) -> list[tuple[int, str, str]]:
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                "SELECT seq, id, resource_id FROM memory_messages WHERE embedded = ? AND seq > ? "
                "AND role IN ('user', 'assistant') ORDER BY seq LIMIT ?",
                (True, after, limit),
            ).fetchall()
        return [(int(r[0]), r[1], r[2]) for r in rows]

    # -- working memory ------------------------------------------------------------------------
    def _working_memory_target(
        self, conn: Connection, resource_id: str, thread_id: str | None
    ) -> tuple[str, str]:
        check_id(resource_id, "resource_id")
        if thread_id is not None:
            check_id(thread_id, "thread_id")
            self._owned_thread(conn, thread_id, resource_id)
            return "memory_threads", thread_id
        return "memory_resources", resource_id

    def get_working_memory(self, *, resource_id: str, thread_id: str | None = None) -> str | None:
        with self._transaction(write=False) as conn:
            table, key = self._working_memory_target(conn, resource_id, thread_id)
            row = self._run(
                conn, f"SELECT working_memory FROM {table} WHERE id = ?", (key,)
            ).fetchone()
        return row[0] if row else None

    def modify_working_memory(
        self,
        update: Callable[[str | None], str],
        *,
        resource_id: str,
        thread_id: str | None = None,
    ) -> str:
        with self._transaction(write=True) as conn:
            table, key = self._working_memory_target(conn, resource_id, thread_id)
            now = self._time(now_utc())
            self._run(conn, _INSERT_RESOURCE, (resource_id, now, now))
            row = self._run(
                conn,
                f"SELECT working_memory FROM {table} WHERE id = ?{self.dialect.row_lock}",
                (key,),
            ).fetchone()
            new = update(row[0] if row else None)
            self._run(
                conn,
                f"UPDATE {table} SET working_memory = ?, updated_at = ? WHERE id = ?",
                (new, now, key),
            )
            return new
