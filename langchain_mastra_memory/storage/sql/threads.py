"""The threads room of `SQLStorage`: create, read, list, page, archive, update, delete,
clone and transfer threads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...errors import (
    ConfigurationError,
    ThreadNotFoundError,
)
from ...messages import carried_id, message_to_json, new_message_id
from ..base import UNSET
from ..records import (
    MessageFilter,
    ResourceSummary,
    StoredMessage,
    Thread,
    check_metadata_filter,
    dumps_metadata,
    from_iso,
    now_utc,
    scope_key,
    thread_from_row,
)
from ..validation import (
    check_id,
    check_ids,
    check_optional_id,
    check_order,
    check_title,
    is_count,
)
from .statements import (
    CLONE_MESSAGE,
    INSERT_RESOURCE,
    THREAD_COLUMNS,
    SQLRoom,
)


class ThreadTable(SQLRoom):
    """A room of `SQLStorage` (see `SQLRoom`)."""

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
        if not (is_count(offset) and is_count(limit, at_least=1)):
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
                    conn,
                    "UPDATE memory_threads SET archived_at = ? WHERE id = ?",
                    (moment, thread_id),
                )
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
            self._run(
                conn, "DELETE FROM memory_withheld_messages WHERE thread_id = ?", (thread_id,)
            )
            key = scope_key("thread", resource_id="", thread_id=thread_id)
            self._delete_observations(conn, key)  # a later owner of the id starts with no log
            # the owner's resource-scoped log forgets what this thread said (by provenance)
            owner_key = scope_key("resource", resource_id=thread.resource_id, thread_id=None)
            self._forget_observed(conn, owner_key, said)
            return True

    def delete_resource(self, resource_id: str) -> bool:
        check_id(resource_id, "resource_id")
        with self._transaction(write=True) as conn:
            threads = [
                str(r[0])
                for r in self._run(
                    conn, "SELECT id FROM memory_threads WHERE resource_id = ?", (resource_id,)
                ).fetchall()
            ]
            known = self._run(
                conn, "SELECT 1 FROM memory_resources WHERE id = ?", (resource_id,)
            ).fetchone()
            for thread_id in threads:  # messages cascade; each thread's log goes too
                self._run(conn, "DELETE FROM memory_threads WHERE id = ?", (thread_id,))
                self._delete_observations(
                    conn, scope_key("thread", resource_id="", thread_id=thread_id)
                )
            self._run(conn, "DELETE FROM memory_messages WHERE resource_id = ?", (resource_id,))
            self._delete_observations(
                conn, scope_key("resource", resource_id=resource_id, thread_id=None)
            )
            for table in ("memory_observation_groups", "memory_extracted_values"):
                self._run(conn, f"DELETE FROM {table} WHERE resource_id = ?", (resource_id,))
            self._run(
                conn, "DELETE FROM memory_withheld_messages WHERE resource_id = ?", (resource_id,)
            )
            self._run(conn, "DELETE FROM memory_resources WHERE id = ?", (resource_id,))
            return bool(threads) or known is not None

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
        carry_ids: bool = False,
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
                conn,
                new_thread_id,
                source.resource_id,
                title if title is not None else source.title,
                dumps_metadata(merged),
            )
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
                copy_id = (
                    carried_id(new_thread_id, str(stored.message.id))
                    if carry_ids
                    else new_message_id()
                )
                message = stored.message.model_copy(update={"id": copy_id})
                self._run(
                    conn,
                    CLONE_MESSAGE,
                    (message.id, new_thread_id, message_to_json(message), stored.message.id),
                )
                copied.append(
                    replace(
                        stored,
                        message=message,
                        thread_id=new_thread_id,
                        copied_from=stored.message.id,
                    )
                )
                copies[str(stored.message.id)] = str(message.id)
            seqs = dict(  # each original's seq and its copy's (the observation log's cursors)
                self._run(
                    conn,
                    "SELECT id, seq FROM memory_messages WHERE thread_id IN (?, ?)",
                    (thread_id, new_thread_id),
                ).fetchall()
            )
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
                self._run(conn, INSERT_RESOURCE, (to_resource_id, now, now))
                for table, column in (
                    ("memory_threads", "id"),
                    ("memory_messages", "thread_id"),  # keyword owner tokens follow (the
                    # generated tsv in PostgreSQL, a trigger on the FTS table in SQLite)
                    ("memory_observation_groups", "scope_key"),
                    ("memory_extracted_values", "scope_key"),
                    ("memory_withheld_messages", "thread_id"),
                ):
                    key = (
                        scope_key("thread", resource_id="", thread_id=thread_id)
                        if column == "scope_key"
                        else thread_id
                    )
                    self._run(
                        conn,
                        f"UPDATE {table} SET resource_id = ? WHERE {column} = ?",
                        (to_resource_id, key),
                    )
            return (
                self._owned_thread(conn, thread_id, None),
                self._thread_messages(conn, thread_id, None),
            )
