"""The messages room of `SQLStorage`: save (strictly increasing times, ownership and id
conflicts checked), import, list, page, read by id, update, delete and move messages.

**Withheld ids**: ids of messages a read-only turn left in a graph's state. A read-only call
(``memory_options={"read_only": True}``, or a read-only memory) saves nothing of its turn, but
its messages stay in the graph's state (a checkpoint, an agent's state), and the next writable
turn would find them there as new. Their ids are kept here, per thread, so no later turn ever
stores them. Only ids are kept (no content), with the owner: a thread's ids go with the thread
(delete, transfer) and with the resource (`delete_resource`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import ToolMessage

from ...errors import ConfigurationError, InvalidMessageError, ResourceMismatchError
from ...messages import orphan_tool_results
from ..base import report_orphans
from ..records import (
    MESSAGE_COLUMNS,
    ImportedThread,
    MessageRow,
    StoredMessage,
    check_conflicts,
    check_owners,
    dumps_metadata,
    from_iso,
    message_rows,
    next_timestamps,
    now_utc,
    saved_messages,
    thread_from_row,
)
from ..validation import (
    check_id,
    check_ids,
    check_optional_id,
    check_order,
    check_time,
    check_title,
    is_count,
)
from .statements import (
    INSERT_MESSAGE,
    THREAD_COLUMNS,
    TOUCH_THREAD,
    Connection,
    SQLRoom,
    check_thread_owner,
    row_values,
)


class MessageTable(SQLRoom):
    """A room of `SQLStorage` (see `SQLRoom`)."""

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
            owner = self._run(  # locks the thread, checks its owner and touches it: one trip
                conn, TOUCH_THREAD + " RETURNING resource_id", (self._time(now_utc()), thread_id)
            ).fetchone()
            check_thread_owner(thread_id, resource_id, owner and owner[0])
            return self._save_rows(conn, rows, thread_id, resource_id, touched=True)

    def _save_rows(
        self,
        conn: Connection,
        rows: list[MessageRow],
        thread_id: str,
        resource_id: str,
        *,
        touched: bool = False,
    ) -> list[StoredMessage]:
        """Insert (or, by id, update) rows in an owned thread, in the caller's transaction.
        The owner's row is locked first: a resource's writers take turns, so its messages
        commit in ``seq`` order (observational memory's resource-scope cursor relies on it;
        SQLite has one writer anyway)."""
        if not rows:
            return []
        last, existing = self._last_and_existing(conn, thread_id, resource_id, [r.id for r in rows])
        check_conflicts(rows, existing, thread_id)
        has_results = any(isinstance(r.message, ToolMessage) for r in rows)
        known_calls = self._known_calls(conn, thread_id) if has_results else []
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
                    INSERT_MESSAGE,
                    (
                        row.id,
                        thread_id,
                        resource_id,
                        *row_values(row),
                        self._time(row.created_at or times[row.id]),
                    ),
                )
        if not touched:
            self._run(conn, TOUCH_THREAD, (self._time(now_utc()), thread_id))
        report_orphans(orphan_tool_results([r.message for r in rows], known_calls), thread_id)
        return saved_messages(rows, existing, times, thread_id, resource_id)

    def _last_and_existing(
        self, conn: Connection, thread_id: str, resource_id: str, ids: list[str]
    ) -> tuple[Any, dict[str, tuple[str, str, datetime]]]:
        """The thread's newest ``created_at`` and which of `ids` are stored (`_existing`), the
        owner's row locked first (SQLite's write transaction is the one lock already): one
        statement when the ids fit one condition."""
        locked = (
            "SELECT (SELECT MAX(created_at) FROM memory_messages WHERE thread_id = ?) AS last "
            f"FROM memory_resources WHERE id = ?{self.dialect.row_lock}"
        )
        pieces = list(self.dialect.ids_in("m.id", ids))
        if len(pieces) != 1:
            last = self._run(conn, locked, (thread_id, resource_id)).fetchone()[0]
            return last, self._existing(conn, ids)
        condition, params = pieces[0]
        rows = self._run(
            conn,
            f"SELECT r.last, m.id, m.thread_id, m.resource_id, m.created_at FROM ({locked}) AS r "
            f"LEFT JOIN memory_messages m ON {condition}",
            (thread_id, resource_id, *params),
        ).fetchall()
        found = {
            id_: (owner_thread, owner, from_iso(created_at))
            for _, id_, owner_thread, owner, created_at in rows
            if id_ is not None
        }
        last = rows[0][0]
        return last, found

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
                    conn,
                    f"SELECT {THREAD_COLUMNS} FROM memory_threads WHERE id = ?",
                    (t.thread_id,),
                ).fetchone()
                if row is None:
                    self._insert_thread(
                        conn,
                        t.thread_id,
                        t.resource_id,
                        t.title,
                        dumps_metadata(t.metadata),
                        created_at=t.thread_created_at,
                    )
                elif thread_from_row(row).resource_id != t.resource_id:
                    raise ResourceMismatchError.for_thread(t.thread_id, t.resource_id)
                saved += self._save_rows(conn, rows, t.thread_id, t.resource_id)
                if t.thread_updated_at is not None:  # as exported: a round trip changes nothing
                    self._run(
                        conn,
                        "UPDATE memory_threads SET updated_at = ? WHERE id = ?",
                        (self._time(t.thread_updated_at), t.thread_id),
                    )
        return saved

    def list_messages(
        self, thread_id: str, *, last: int | None = None, resource_id: str | None = None
    ) -> list[StoredMessage]:
        if last is not None and not is_count(last):
            raise InvalidMessageError(f"last must be a non-negative int or None, got {last!r}")
        check_id(thread_id, "thread_id")
        check_optional_id(resource_id, "resource_id")
        with self._transaction(write=False) as conn:
            self._check_thread(conn, thread_id, resource_id)
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
            self._check_thread(conn, thread_id, resource_id)
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
                self._run(conn, TOUCH_THREAD, (now, thread_id))
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
            self._check_thread(conn, thread_id, resource_id, lock=True)
            existing = self._existing(conn, ids)
            check_owners(ids, existing, resource_id)
            for condition, params in self.dialect.ids_in("id", ids):
                self._run(
                    conn,
                    f"UPDATE memory_messages SET thread_id = ? WHERE {condition}",
                    (thread_id, *params),
                )
            now = self._time(now_utc())
            for touched in sorted({thread_id, *(existing[i][0] for i in ids)}):
                self._run(conn, TOUCH_THREAD, (now, touched))
        return self.get_messages_by_id(ids)

    def withhold_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> None:
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        check_id(thread_id, "thread_id")
        check_id(resource_id, "resource_id")
        if not ids:
            return
        with self._transaction(write=True) as conn:
            for message_id in ids:
                self._run(
                    conn,
                    "INSERT INTO memory_withheld_messages (thread_id, message_id, resource_id) "
                    "VALUES (?, ?, ?) ON CONFLICT (thread_id, message_id) DO NOTHING",
                    (thread_id, message_id, resource_id),
                )

    def withheld_ids(self, message_ids: Sequence[str], *, thread_id: str) -> set[str]:
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        check_id(thread_id, "thread_id")
        found: set[str] = set()
        if not ids:
            return found
        with self._transaction(write=False) as conn:
            for condition, params in self.dialect.ids_in("message_id", ids):
                rows = self._run(
                    conn,
                    f"SELECT message_id FROM memory_withheld_messages "
                    f"WHERE thread_id = ? AND {condition}",
                    [thread_id, *params],
                ).fetchall()
                found.update(str(r[0]) for r in rows)
        return found
