"""`PostgresStorage`: threads, messages and resources in PostgreSQL, for many app processes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

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
from ..messages import (
    message_from_json,
    message_to_json,
    new_message_id,
    orphan_tool_results,
)
from ..thread import Thread
from .base import UNSET, MemoryStorage, report_orphans
from .postgres_schema import MIGRATIONS, SCHEMA_TABLE
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
    message_rows,
    next_timestamps,
    now_utc,
    query_words,
    saved_messages,
    stored_message,
    thread_from_row,
)

_THREAD_COLUMNS = "id, resource_id, title, metadata, created_at, updated_at"
_MESSAGE_COLUMNS = "id, thread_id, resource_id, content, created_at, token_count"
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresStorage(MemoryStorage):
    """Threads, messages and resources in PostgreSQL (psycopg 3 with a connection pool).

    Every write is one transaction; writers of the same thread (or working memory) are
    serialized by a row lock, so several app processes can share the database. `schema` puts
    the tables in their own PostgreSQL schema (created if needed). Needs the ``postgres`` extra.

    Example (needs a server)::

        storage = PostgresStorage("postgresql://user:pass@db:5432/app")
        memory = Memory(storage=storage)
    """

    def __init__(self, conninfo: str, *, schema: str = "public", max_connections: int = 8) -> None:
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
        self.schema = schema
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max_connections,
            kwargs={"options": f"-c search_path={schema} -c timezone=UTC"},
            open=False,
        )
        try:
            self._pool.open(wait=True, timeout=30)
        except Exception as exc:
            raise StorageError(f"cannot connect to PostgreSQL: {exc}") from exc
        self.setup()

    def __repr__(self) -> str:
        return f"PostgresStorage(schema={self.schema!r})"

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        import psycopg

        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except psycopg.OperationalError as exc:
            raise StorageError(f"PostgreSQL is unavailable: {exc}") from exc

    def setup(self) -> None:
        """Create or migrate the schema (safe to call twice, and from several processes)."""
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('langchain_mastra_memory'))")
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER NOT NULL)")
            row = conn.execute(f"SELECT version FROM {SCHEMA_TABLE}").fetchone()
            version = row[0] if row else 0
            if version > len(MIGRATIONS):
                msg = (
                    f"schema {self.schema!r} has memory schema version {version}, newer than this "
                    f"package knows ({len(MIGRATIONS)}); upgrade langchain-mastra-memory."
                )
                raise SchemaVersionError(msg)
            for script in MIGRATIONS[version:]:
                conn.execute(script)
            if row is None:
                conn.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (%s)", (len(MIGRATIONS),))
            elif version < len(MIGRATIONS):
                conn.execute(f"UPDATE {SCHEMA_TABLE} SET version = %s", (len(MIGRATIONS),))

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()

    def drop_schema(self) -> None:
        """Drop the schema and everything in it (for tests and teardown; not `public`)."""
        if self.schema == "public":
            raise ConfigurationError("refusing to drop the public schema")
        with self._tx() as conn:
            conn.execute(f'DROP SCHEMA "{self.schema}" CASCADE')

    # -- threads -------------------------------------------------------------------------------
    _thread = staticmethod(thread_from_row)

    def _owned_thread(
        self, conn: Any, thread_id: str, resource_id: str | None, *, lock: bool = False
    ) -> Thread:
        sql = f"SELECT {_THREAD_COLUMNS} FROM memory_threads WHERE id = %s"
        row = conn.execute(sql + (" FOR UPDATE" if lock else ""), (thread_id,)).fetchone()
        if row is None:
            raise ThreadNotFoundError(f"no thread {thread_id!r}; create it with create_thread()")
        thread = self._thread(row)
        if resource_id is not None and thread.resource_id != resource_id:
            msg = f"thread {thread_id!r} belongs to another resource than {resource_id!r}"
            raise ResourceMismatchError(msg)
        return thread

    def _insert_thread(
        self, conn: Any, thread_id: str, resource_id: str, title: str | None, metadata_json: str
    ) -> Thread:
        now = now_utc()
        conn.execute(
            "INSERT INTO memory_resources (id, created_at, updated_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (id) DO NOTHING",
            (resource_id, now, now),
        )
        inserted = conn.execute(
            f"INSERT INTO memory_threads ({_THREAD_COLUMNS}) "
            "VALUES (%s, %s, %s, %s::jsonb, %s, %s) "
            "ON CONFLICT (id) DO NOTHING RETURNING id",
            (thread_id, resource_id, title, metadata_json, now, now),
        ).fetchone()
        if inserted is None:
            raise ThreadExistsError(f"a thread {thread_id!r} already exists")
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
        with self._tx() as conn:
            return self._insert_thread(conn, thread_id, resource_id, title, metadata_json)

    def get_thread(self, thread_id: str) -> Thread | None:
        with self._tx() as conn:
            row = conn.execute(
                f"SELECT {_THREAD_COLUMNS} FROM memory_threads WHERE id = %s", (thread_id,)
            ).fetchone()
        return self._thread(row) if row else None

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
            where.append("resource_id = %s")
            params.append(resource_id)
        for key, value in check_metadata_filter(metadata):
            where.append("metadata -> %s = %s::jsonb")
            params += [key, value]
        sql = f"SELECT {_THREAD_COLUMNS} FROM memory_threads"
        if where:
            sql += " WHERE " + " AND ".join(where)
        direction = "DESC" if descending else "ASC"
        sql += f" ORDER BY {order_by} {direction}, id {direction} LIMIT %s OFFSET %s"
        params += [limit, offset]
        with self._tx() as conn:
            return [self._thread(r) for r in conn.execute(sql, params).fetchall()]

    def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, Any] | None = None,
        resource_id: str | None = None,
    ) -> Thread:
        dumps_metadata(metadata)
        with self._tx() as conn:
            thread = self._owned_thread(conn, thread_id, resource_id, lock=True)
            merged = {**thread.metadata, **(metadata or {})}
            new_title = thread.title if title is UNSET else title
            conn.execute(
                "UPDATE memory_threads SET title = %s, metadata = %s::jsonb, updated_at = %s "
                "WHERE id = %s",
                (new_title, dumps_metadata(merged), now_utc(), thread_id),
            )
            return self._owned_thread(conn, thread_id, None)

    def delete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        with self._tx() as conn:
            try:
                self._owned_thread(conn, thread_id, resource_id, lock=True)
            except ThreadNotFoundError:
                return False
            conn.execute("DELETE FROM memory_threads WHERE id = %s", (thread_id,))
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
        with self._tx() as conn:
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
            copied = []
            for stored in self._thread_messages(conn, thread_id, None):
                message = stored.message.model_copy(update={"id": new_message_id()})
                conn.execute(
                    "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, "
                    "text, tool_call_ids, token_count, created_at) "
                    "SELECT %s, %s, resource_id, role, type, %s, text, tool_call_ids, token_count, "
                    "created_at FROM memory_messages WHERE id = %s",
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
    @staticmethod
    def _stored(row: Sequence[Any]) -> StoredMessage:
        _id, thread_id, resource_id, content, created_at, tokens = row
        return stored_message(
            message_from_json(content), thread_id, resource_id, created_at, tokens
        )

    def _thread_messages(self, conn: Any, thread_id: str, last: int | None) -> list[StoredMessage]:
        if last is None:
            sql = (
                f"SELECT {_MESSAGE_COLUMNS} FROM memory_messages WHERE thread_id = %s "
                "ORDER BY created_at, seq"
            )
            params: tuple[Any, ...] = (thread_id,)
        else:
            sql = (
                f"SELECT {_MESSAGE_COLUMNS} FROM (SELECT {_MESSAGE_COLUMNS}, seq "
                "FROM memory_messages "
                "WHERE thread_id = %s ORDER BY created_at DESC, seq DESC LIMIT %s) newest "
                "ORDER BY created_at, seq"
            )
            params = (thread_id, last)
        return [self._stored(r) for r in conn.execute(sql, params).fetchall()]

    @staticmethod
    def _existing(conn: Any, ids: Sequence[str]) -> dict[str, tuple[str, str, datetime]]:
        rows = conn.execute(
            "SELECT id, thread_id, resource_id, created_at FROM memory_messages WHERE id = ANY(%s)",
            (list(ids),),
        ).fetchall()
        return {r[0]: (r[1], r[2], r[3]) for r in rows}

    def save_messages(
        self,
        messages: Sequence[object],
        *,
        thread_id: str,
        resource_id: str,
        created_at: Sequence[datetime | None] | None = None,
    ) -> list[StoredMessage]:
        rows = message_rows(messages, created_at)
        with self._tx() as conn:
            self._owned_thread(conn, thread_id, resource_id, lock=True)  # serializes writers
            if not rows:
                return []
            existing = self._existing(conn, [r.id for r in rows])
            check_conflicts(rows, existing, thread_id)
            known_calls = (
                [
                    call_id
                    for (ids,) in conn.execute(
                        "SELECT tool_call_ids FROM memory_messages "
                        "WHERE thread_id = %s AND tool_call_ids IS NOT NULL",
                        (thread_id,),
                    ).fetchall()
                    for call_id in ids.split(" ")
                ]
                if any(isinstance(r.message, ToolMessage) for r in rows)
                else []
            )  # earlier calls matter only to tool results
            last = conn.execute(
                "SELECT MAX(created_at) FROM memory_messages WHERE thread_id = %s", (thread_id,)
            ).fetchone()[0]
            fresh = [r for r in rows if r.id not in existing and r.created_at is None]
            times = dict(zip((r.id for r in fresh), next_timestamps(last, len(fresh)), strict=True))
            for row in rows:
                if row.id in existing:
                    self._update_row(conn, row)
                else:
                    conn.execute(
                        "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, "
                        "content, text, tool_call_ids, token_count, created_at) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        (
                            row.id, thread_id, resource_id, row.role, row.type, row.content,
                            row.text, call_ids_column(row), row.token_count,
                            row.created_at or times[row.id],
                        ),
                    )  # fmt: skip
            conn.execute(
                "UPDATE memory_threads SET updated_at = %s WHERE id = %s", (now_utc(), thread_id)
            )
        report_orphans(orphan_tool_results([r.message for r in rows], known_calls), thread_id)
        return saved_messages(rows, existing, times, thread_id, resource_id)

    @staticmethod
    def _update_row(conn: Any, row: MessageRow) -> None:
        conn.execute(
            "UPDATE memory_messages SET role = %s, type = %s, content = %s, text = %s, "
            "tool_call_ids = %s, token_count = %s, embedded = FALSE WHERE id = %s",
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
        with self._tx() as conn:
            self._owned_thread(conn, thread_id, resource_id)
            return self._thread_messages(conn, thread_id, last)

    def get_messages_by_id(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        sql = f"SELECT {_MESSAGE_COLUMNS} FROM memory_messages WHERE id = ANY(%s)"
        params: list[Any] = [list(dict.fromkeys(message_ids))]
        if resource_id is not None:
            sql += " AND resource_id = %s"
            params.append(resource_id)
        with self._tx() as conn:
            found = [self._stored(r) for r in conn.execute(sql, params).fetchall()]
        return sorted(found, key=lambda s: (s.thread_id, s.created_at))

    def update_messages(
        self, messages: Sequence[object], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        for message in messages:
            if getattr(message, "id", None) is None:
                raise InvalidMessageError("update_messages needs messages that have an id")
        rows = message_rows(messages)
        with self._tx() as conn:
            existing = self._existing(conn, [r.id for r in rows])
            check_owners([r.id for r in rows], existing, resource_id)
            for row in rows:
                self._update_row(conn, row)
            conn.execute(
                "UPDATE memory_threads SET updated_at = %s WHERE id = ANY(%s)",
                (now_utc(), list({existing[r.id][0] for r in rows})),
            )
        return self.get_messages_by_id([r.id for r in rows])

    def delete_messages(self, message_ids: Sequence[str], *, resource_id: str | None = None) -> int:
        ids = list(dict.fromkeys(message_ids))
        with self._tx() as conn:
            existing = self._existing(conn, ids)
            check_owners(existing, existing, resource_id)
            conn.execute("DELETE FROM memory_messages WHERE id = ANY(%s)", (list(existing),))
        return len(existing)

    # -- recall --------------------------------------------------------------------------------
    def search_text(
        self, query: str, *, resource_id: str, thread_id: str | None = None, limit: int = 10
    ) -> list[tuple[str, str, float]]:
        words = query_words(query)
        if not words:
            return []
        sql = (
            "SELECT id, thread_id, ts_rank(tsv, q) AS score "
            "FROM memory_messages, to_tsquery('english', %s) q "
            "WHERE tsv @@ q AND resource_id = %s AND role IN ('user', 'assistant')"
        )
        params: list[Any] = [" | ".join(words), resource_id]
        if thread_id is not None:
            sql += " AND thread_id = %s"
            params.append(thread_id)
        sql += " ORDER BY score DESC LIMIT %s"
        params.append(limit)
        with self._tx() as conn:
            return [(r[0], r[1], float(r[2])) for r in conn.execute(sql, params).fetchall()]

    def message_windows(
        self, message_ids: Sequence[str], *, before: int, after: int, resource_id: str
    ) -> list[StoredMessage]:
        seen: dict[str, StoredMessage] = {}
        with self._tx() as conn:
            for message_id in dict.fromkeys(message_ids):
                anchor = conn.execute(
                    "SELECT thread_id, created_at, seq FROM memory_messages "
                    "WHERE id = %s AND resource_id = %s",
                    (message_id, resource_id),
                ).fetchone()
                if anchor is None:
                    continue
                thread_id, created_at, seq = anchor
                rows = conn.execute(
                    f"(SELECT {_MESSAGE_COLUMNS} FROM memory_messages WHERE thread_id = %s "
                    "AND (created_at, seq) < (%s, %s) ORDER BY created_at DESC, seq DESC LIMIT %s) "
                    f"UNION ALL (SELECT {_MESSAGE_COLUMNS} FROM memory_messages "
                    "WHERE thread_id = %s "
                    "AND (created_at, seq) >= (%s, %s) ORDER BY created_at, seq LIMIT %s)",
                    (thread_id, created_at, seq, before, thread_id, created_at, seq, after + 1),
                ).fetchall()
                for row in rows:
                    if row[0] not in seen:
                        seen[row[0]] = self._stored(row)
        return sorted(seen.values(), key=lambda s: (s.thread_id, s.created_at))

    def unembedded(self, *, limit: int = 500) -> list[StoredMessage]:
        with self._tx() as conn:
            rows = conn.execute(
                f"SELECT {_MESSAGE_COLUMNS} FROM memory_messages WHERE NOT embedded "
                "AND role IN ('user', 'assistant') ORDER BY seq LIMIT %s",
                (limit,),
            ).fetchall()
        return [self._stored(r) for r in rows]

    def mark_embedded(self, message_ids: Sequence[str]) -> None:
        with self._tx() as conn:
            conn.execute(
                "UPDATE memory_messages SET embedded = TRUE WHERE id = ANY(%s)",
                (list(message_ids),),
            )

    # -- working memory ------------------------------------------------------------------------
    def _working_memory_target(
        self, conn: Any, resource_id: str, thread_id: str | None
    ) -> tuple[str, str]:
        check_id(resource_id, "resource_id")
        if thread_id is not None:
            self._owned_thread(conn, thread_id, resource_id)
            return "memory_threads", thread_id
        return "memory_resources", resource_id

    def get_working_memory(self, *, resource_id: str, thread_id: str | None = None) -> str | None:
        with self._tx() as conn:
            table, key = self._working_memory_target(conn, resource_id, thread_id)
            row = conn.execute(
                f"SELECT working_memory FROM {table} WHERE id = %s", (key,)
            ).fetchone()
        return row[0] if row else None

    def modify_working_memory(
        self,
        update: Callable[[str | None], str],
        *,
        resource_id: str,
        thread_id: str | None = None,
    ) -> str:
        with self._tx() as conn:
            table, key = self._working_memory_target(conn, resource_id, thread_id)
            now = now_utc()
            conn.execute(
                "INSERT INTO memory_resources (id, created_at, updated_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING",
                (resource_id, now, now),
            )
            row = conn.execute(
                f"SELECT working_memory FROM {table} WHERE id = %s FOR UPDATE", (key,)
            ).fetchone()
            new = update(row[0] if row else None)
            conn.execute(
                f"UPDATE {table} SET working_memory = %s, updated_at = %s WHERE id = %s",
                (new, now, key),
            )
            return new
