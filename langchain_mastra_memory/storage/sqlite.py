"""`SQLiteStorage`: the embedded default backend (one file, WAL, no server)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import ToolMessage

from ..errors import (
    InvalidMessageError,
    ResourceMismatchError,
    SchemaVersionError,
    StorageError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from ..messages import (
    message_from_json,
    message_to_json,
    new_message_id,
    orphan_tool_results,
)
from ..thread import Thread
from .base import UNSET, MemoryStorage, report_orphans
from .records import (
    MessageRow,
    StoredMessage,
    call_ids_column,
    check_conflicts,
    check_id,
    check_metadata_filter,
    check_order,
    check_owners,
    dumps_metadata,
    from_iso,
    fts_query,
    message_rows,
    next_timestamps,
    now_utc,
    saved_messages,
    stored_message,
    thread_from_row,
    to_iso,
)
from .sqlite_schema import MIGRATIONS, SCHEMA_TABLE

_CHUNK = 500
_MESSAGE_COLUMNS = "id, thread_id, resource_id, content, created_at, token_count"
_BY_IDS = "SELECT {columns} FROM memory_messages WHERE id IN ({marks})"
_INSERT_RESOURCE = (
    "INSERT OR IGNORE INTO memory_resources (id, created_at, updated_at) VALUES (?, ?, ?)"
)


def _statements(script: str) -> Iterator[str]:
    """Split a migration into complete statements (trigger bodies hold semicolons too)."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class SQLiteStorage(MemoryStorage):
    """Threads, messages and resources in one SQLite file (or ``":memory:"``).

    The file is opened in WAL mode with a busy timeout and foreign keys on, so several processes
    can share it; every write is one ``BEGIN IMMEDIATE`` transaction. The schema is created or
    migrated forward on first use; a file written by a newer version raises `SchemaVersionError`.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> storage = SQLiteStorage(":memory:")
        >>> _ = storage.create_thread(thread_id="t1", resource_id="alice")
        >>> [m.message.content for m in storage.save_messages(
        ...     [HumanMessage("hi")], thread_id="t1", resource_id="alice")]
        ['hi']
    """

    def __init__(self, path: str | Path = "memory.db", *, busy_timeout: float = 30.0) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            raise StorageError(
                f"{self.path!r} cannot be opened as a SQLite database: {exc}"
            ) from exc
        self.setup()

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"

    # -- plumbing ------------------------------------------------------------------------------
    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise StorageError(f"{self.path!r}: cannot start a write: {exc}") from exc
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def setup(self) -> None:
        """Create or migrate the schema (safe to call twice)."""
        try:
            with self._write() as conn:
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER NOT NULL)"
                )
                row = conn.execute(f"SELECT version FROM {SCHEMA_TABLE}").fetchone()
                version = row[0] if row else 0
                if version > len(MIGRATIONS):
                    msg = (
                        f"{self.path!r} has memory schema version {version}, newer than this "
                        f"package knows ({len(MIGRATIONS)}); upgrade langchain-mastra-memory."
                    )
                    raise SchemaVersionError(msg)
                for script in MIGRATIONS[version:]:
                    for statement in _statements(script):
                        conn.execute(statement)
                if row is None:
                    conn.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (?)", (len(MIGRATIONS),))
                elif version < len(MIGRATIONS):
                    conn.execute(f"UPDATE {SCHEMA_TABLE} SET version = ?", (len(MIGRATIONS),))
        except sqlite3.DatabaseError as exc:
            msg = f"{self.path!r} is not a usable SQLite database: {exc}"
            raise StorageError(msg) from exc

    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        return int(self._read(f"SELECT version FROM {SCHEMA_TABLE}")[0][0])

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    # -- threads -------------------------------------------------------------------------------
    _thread = staticmethod(thread_from_row)

    _THREAD_COLUMNS = "id, resource_id, title, metadata, created_at, updated_at"

    def _owned_thread(
        self, conn: sqlite3.Connection, thread_id: str, resource_id: str | None
    ) -> Thread:
        row = conn.execute(
            f"SELECT {self._THREAD_COLUMNS} FROM memory_threads WHERE id = ?", (thread_id,)
        ).fetchone()
        if row is None:
            raise ThreadNotFoundError(f"no thread {thread_id!r}; create it with create_thread()")
        thread = self._thread(row)
        if resource_id is not None and thread.resource_id != resource_id:
            msg = f"thread {thread_id!r} belongs to another resource than {resource_id!r}"
            raise ResourceMismatchError(msg)
        return thread

    def _insert_thread(
        self,
        conn: sqlite3.Connection,
        thread_id: str,
        resource_id: str,
        title: str | None,
        metadata_json: str,
    ) -> Thread:
        if conn.execute("SELECT 1 FROM memory_threads WHERE id = ?", (thread_id,)).fetchone():
            raise ThreadExistsError(f"a thread {thread_id!r} already exists")
        now = to_iso(now_utc())
        conn.execute(
            _INSERT_RESOURCE,
            (resource_id, now, now),
        )
        conn.execute(
            f"INSERT INTO memory_threads ({self._THREAD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (thread_id, resource_id, title, metadata_json, now, now),
        )
        return self._owned_thread(conn, thread_id, None)

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
        metadata_json = dumps_metadata(metadata)
        with self._write() as conn:
            return self._insert_thread(conn, thread_id, resource_id, title, metadata_json)

    def get_thread(self, thread_id: str) -> Thread | None:
        rows = self._read(
            f"SELECT {self._THREAD_COLUMNS} FROM memory_threads WHERE id = ?", (thread_id,)
        )
        return self._thread(rows[0]) if rows else None

    def list_threads(
        self,
        *,
        resource_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        order_by: str = "updated_at",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Thread]:
        check_order(order_by, limit, offset)
        where: list[str] = []
        params: list[Any] = []
        if resource_id is not None:
            where.append("resource_id = ?")
            params.append(resource_id)
        for key, value in check_metadata_filter(metadata):
            where.append("json_extract(metadata, ?) IS json_extract(?, '$')")
            params += [f'$."{key}"', value]
        sql = f"SELECT {self._THREAD_COLUMNS} FROM memory_threads"
        if where:
            sql += " WHERE " + " AND ".join(where)
        direction = "DESC" if descending else "ASC"
        sql += f" ORDER BY {order_by} {direction}, id {direction} LIMIT ? OFFSET ?"
        params += [-1 if limit is None else limit, offset]
        return [self._thread(r) for r in self._read(sql, params)]

    def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, Any] | None = None,
        resource_id: str | None = None,
    ) -> Thread:
        dumps_metadata(metadata)
        with self._write() as conn:
            thread = self._owned_thread(conn, thread_id, resource_id)
            merged = {**thread.metadata, **(metadata or {})}
            new_title = thread.title if title is UNSET else title
            conn.execute(
                "UPDATE memory_threads SET title = ?, metadata = ?, updated_at = ? WHERE id = ?",
                (new_title, dumps_metadata(merged), to_iso(now_utc()), thread_id),
            )
            return self._owned_thread(conn, thread_id, None)

    def delete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        with self._write() as conn:
            try:
                self._owned_thread(conn, thread_id, resource_id)
            except ThreadNotFoundError:
                return False
            conn.execute("DELETE FROM memory_threads WHERE id = ?", (thread_id,))
            return True

    def clone_thread(
        self,
        thread_id: str,
        *,
        new_thread_id: str,
        resource_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[Thread, list[StoredMessage]]:
        check_id(new_thread_id, "new_thread_id")
        with self._write() as conn:
            source = self._owned_thread(conn, thread_id, resource_id)
            merged = {
                **source.metadata,
                **(metadata or {}),
                "clone": {"source_thread_id": thread_id, "cloned_at": to_iso(now_utc())},
            }
            clone = self._insert_thread(
                conn,
                new_thread_id,
                source.resource_id,
                title if title is not None else source.title,
                dumps_metadata(merged),
            )
            copied = []
            for stored in self._thread_messages(conn, thread_id, None):
                message = stored.message.model_copy(update={"id": new_message_id()})
                conn.execute(
                    "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, "
                    "text, tool_call_ids, token_count, created_at) "
                    "SELECT ?, ?, resource_id, role, type, ?, text, tool_call_ids, token_count, "
                    "created_at FROM memory_messages WHERE id = ?",
                    (message.id, new_thread_id, message_to_json(message), stored.message.id),
                )
                copied.append(
                    StoredMessage(
                        message,
                        new_thread_id,
                        source.resource_id,
                        stored.created_at,
                        stored.token_count,
                    )
                )
            return clone, copied

    # -- messages ------------------------------------------------------------------------------
    def _thread_messages(
        self, conn: sqlite3.Connection, thread_id: str, last: int | None
    ) -> list[StoredMessage]:
        if last is None:
            sql = (
                f"SELECT {_MESSAGE_COLUMNS} FROM memory_messages WHERE thread_id = ? "
                "ORDER BY created_at, seq"
            )
            params: tuple[Any, ...] = (thread_id,)
        else:
            sql = (
                f"SELECT {_MESSAGE_COLUMNS} FROM (SELECT {_MESSAGE_COLUMNS}, seq "
                "FROM memory_messages "
                "WHERE thread_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?) "
                "ORDER BY created_at, seq"
            )
            params = (thread_id, last)
        return [self._stored(row) for row in conn.execute(sql, params)]

    @staticmethod
    def _stored(row: tuple[Any, ...]) -> StoredMessage:
        _id, thread_id, resource_id, content, created_at, tokens = row
        return stored_message(
            message_from_json(content), thread_id, resource_id, created_at, tokens
        )

    def _existing(
        self, conn: sqlite3.Connection, ids: Sequence[str]
    ) -> dict[str, tuple[str, str, datetime]]:
        """Stored ids among `ids`, with their thread, resource and creation time."""
        found: dict[str, tuple[str, str, datetime]] = {}
        for chunk in _chunks(ids):
            for id_, thread_id, resource_id, created_at in conn.execute(
                _BY_IDS.format(
                    columns="id, thread_id, resource_id, created_at", marks=_marks(len(chunk))
                ),
                chunk,
            ):
                found[id_] = (thread_id, resource_id, from_iso(created_at))
        return found

    def save_messages(
        self,
        messages: Sequence[object],
        *,
        thread_id: str,
        resource_id: str,
        created_at: Sequence[datetime | None] | None = None,
    ) -> list[StoredMessage]:
        rows = message_rows(messages, created_at)
        if not rows:
            self._owned_thread(self._conn, thread_id, resource_id)
            return []
        with self._write() as conn:
            self._owned_thread(conn, thread_id, resource_id)
            existing = self._existing(conn, [r.id for r in rows])
            check_conflicts(rows, existing, thread_id)
            known_calls = (
                [
                    call_id
                    for (ids,) in conn.execute(
                        "SELECT tool_call_ids FROM memory_messages "
                        "WHERE thread_id = ? AND tool_call_ids IS NOT NULL",
                        (thread_id,),
                    )
                    for call_id in ids.split(" ")
                ]
                if any(isinstance(r.message, ToolMessage) for r in rows)
                else []
            )  # earlier calls matter only to tool results
            last = conn.execute(
                "SELECT MAX(created_at) FROM memory_messages WHERE thread_id = ?", (thread_id,)
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
                    conn.execute(
                        "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, "
                        "content, text, tool_call_ids, token_count, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            row.id, thread_id, resource_id, row.role, row.type, row.content,
                            row.text, call_ids_column(row), row.token_count,
                            to_iso(row.created_at or times[row.id]),
                        ),
                    )  # fmt: skip
            conn.execute(
                "UPDATE memory_threads SET updated_at = ? WHERE id = ?",
                (to_iso(now_utc()), thread_id),
            )
        report_orphans(orphan_tool_results([r.message for r in rows], known_calls), thread_id)
        return saved_messages(rows, existing, times, thread_id, resource_id)

    @staticmethod
    def _update_row(conn: sqlite3.Connection, row: MessageRow) -> None:
        conn.execute(
            "UPDATE memory_messages SET role = ?, type = ?, content = ?, text = ?, "
            "tool_call_ids = ?, token_count = ?, embedded = 0 WHERE id = ?",
            (
                row.role,
                row.type,
                row.content,
                row.text,
                call_ids_column(row),
                row.token_count,
                row.id,
            ),
        )

    def list_messages(
        self, thread_id: str, *, last: int | None = None, resource_id: str | None = None
    ) -> list[StoredMessage]:
        if last is not None and (not isinstance(last, int) or isinstance(last, bool) or last < 0):
            raise InvalidMessageError(f"last must be a non-negative int or None, got {last!r}")
        with self._lock:
            self._owned_thread(self._conn, thread_id, resource_id)
            return self._thread_messages(self._conn, thread_id, last)

    def get_messages_by_id(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        ids = list(dict.fromkeys(message_ids))
        found: list[StoredMessage] = []
        with self._lock:
            for chunk in _chunks(ids):
                sql = _BY_IDS.format(columns=_MESSAGE_COLUMNS, marks=_marks(len(chunk)))
                params: list[Any] = list(chunk)
                if resource_id is not None:
                    sql += " AND resource_id = ?"
                    params.append(resource_id)
                found += [self._stored(r) for r in self._conn.execute(sql, params)]
        return sorted(found, key=lambda s: (s.thread_id, s.created_at))

    def update_messages(
        self, messages: Sequence[object], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        for message in messages:
            if getattr(message, "id", None) is None:
                raise InvalidMessageError("update_messages needs messages that have an id")
        rows = message_rows(messages)
        with self._write() as conn:
            existing = self._existing(conn, [r.id for r in rows])
            check_owners([r.id for r in rows], existing, resource_id)
            now = to_iso(now_utc())
            for row in rows:
                self._update_row(conn, row)
            for thread_id in {existing[r.id][0] for r in rows}:
                conn.execute(
                    "UPDATE memory_threads SET updated_at = ? WHERE id = ?", (now, thread_id)
                )
        return self.get_messages_by_id([r.id for r in rows])

    def delete_messages(self, message_ids: Sequence[str], *, resource_id: str | None = None) -> int:
        ids = list(dict.fromkeys(message_ids))
        with self._write() as conn:
            existing = self._existing(conn, ids)
            check_owners(existing, existing, resource_id)
            for chunk in _chunks(list(existing)):
                conn.execute(
                    f"DELETE FROM memory_messages WHERE id IN ({_marks(len(chunk))})", chunk
                )
        return len(existing)

    # -- recall --------------------------------------------------------------------------------
    def search_text(
        self, query: str, *, resource_id: str, thread_id: str | None = None, limit: int = 10
    ) -> list[tuple[str, str, float]]:
        match = fts_query(query)
        if not match:
            return []
        sql = (
            "SELECT m.id, m.thread_id, -bm25(memory_messages_fts) AS score "
            "FROM memory_messages_fts JOIN memory_messages m ON m.seq = memory_messages_fts.rowid "
            "WHERE memory_messages_fts MATCH ? AND m.resource_id = ? "
            "AND m.role IN ('user', 'assistant')"
        )
        params: list[Any] = [match, resource_id]
        if thread_id is not None:
            sql += " AND m.thread_id = ?"
            params.append(thread_id)
        sql += " ORDER BY score DESC LIMIT ?"
        params.append(limit)
        return [(r[0], r[1], float(r[2])) for r in self._read(sql, params)]

    def message_windows(
        self, message_ids: Sequence[str], *, before: int, after: int, resource_id: str
    ) -> list[StoredMessage]:
        seen: dict[str, StoredMessage] = {}
        with self._lock:
            for message_id in dict.fromkeys(message_ids):
                anchor = self._conn.execute(
                    "SELECT thread_id, created_at, seq FROM memory_messages "
                    "WHERE id = ? AND resource_id = ?",
                    (message_id, resource_id),
                ).fetchone()
                if anchor is None:
                    continue
                thread_id, created_at, seq = anchor
                rows = self._conn.execute(
                    f"SELECT {_MESSAGE_COLUMNS} FROM (SELECT {_MESSAGE_COLUMNS}, seq "
                    "FROM memory_messages "
                    "WHERE thread_id = ? AND (created_at, seq) < (?, ?) "
                    "ORDER BY created_at DESC, seq DESC LIMIT ?) "
                    f"UNION ALL SELECT {_MESSAGE_COLUMNS} FROM (SELECT {_MESSAGE_COLUMNS}, seq "
                    "FROM memory_messages WHERE thread_id = ? AND (created_at, seq) >= (?, ?) "
                    "ORDER BY created_at, seq LIMIT ?)",
                    (thread_id, created_at, seq, before, thread_id, created_at, seq, after + 1),
                ).fetchall()
                for row in rows:
                    if row[0] not in seen:
                        seen[row[0]] = self._stored(row)
        return sorted(seen.values(), key=lambda s: (s.thread_id, s.created_at))

    def unembedded(self, *, limit: int = 500) -> list[StoredMessage]:
        rows = self._read(
            f"SELECT {_MESSAGE_COLUMNS} FROM memory_messages WHERE embedded = 0 "
            "AND role IN ('user', 'assistant') ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [self._stored(r) for r in rows]

    def mark_embedded(self, message_ids: Sequence[str]) -> None:
        with self._write() as conn:
            for chunk in _chunks(list(message_ids)):
                conn.execute(
                    f"UPDATE memory_messages SET embedded = 1 WHERE id IN ({_marks(len(chunk))})",
                    chunk,
                )

    # -- working memory ------------------------------------------------------------------------
    def _working_memory_target(
        self, conn: sqlite3.Connection, resource_id: str, thread_id: str | None
    ) -> tuple[str, str]:
        check_id(resource_id, "resource_id")
        if thread_id is not None:
            self._owned_thread(conn, thread_id, resource_id)
            return "memory_threads", thread_id
        return "memory_resources", resource_id

    def get_working_memory(self, *, resource_id: str, thread_id: str | None = None) -> str | None:
        with self._lock:
            table, key = self._working_memory_target(self._conn, resource_id, thread_id)
            row = self._conn.execute(
                f"SELECT working_memory FROM {table} WHERE id = ?", (key,)
            ).fetchone()
        return row[0] if row else None

    def modify_working_memory(
        self,
        update: Callable[[str | None], str],
        *,
        resource_id: str,
        thread_id: str | None = None,
    ) -> str:
        with self._write() as conn:
            table, key = self._working_memory_target(conn, resource_id, thread_id)
            now = to_iso(now_utc())
            conn.execute(
                _INSERT_RESOURCE,
                (resource_id, now, now),
            )
            row = conn.execute(
                f"SELECT working_memory FROM {table} WHERE id = ?", (key,)
            ).fetchone()
            new = update(row[0] if row else None)
            conn.execute(
                f"UPDATE {table} SET working_memory = ?, updated_at = ? WHERE id = ?",
                (new, now, key),
            )
            return new
