"""The working-memory room of `SQLStorage`: read, and the read-modify-write under a row
lock."""

from __future__ import annotations

from collections.abc import Callable

from ..records import (
    now_utc,
)
from ..validation import (
    check_id,
)
from .statements import (
    INSERT_RESOURCE,
    Connection,
    SQLRoom,
)


class WorkingMemoryTable(SQLRoom):
    """A room of `SQLStorage` (see `SQLRoom`)."""

    # -- working memory ------------------------------------------------------------------------
    def _working_memory_target(
        self, conn: Connection, resource_id: str, thread_id: str | None
    ) -> tuple[str, str]:
        check_id(resource_id, "resource_id")
        if thread_id is not None:
            check_id(thread_id, "thread_id")
            self._check_thread(conn, thread_id, resource_id)
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
            self._run(conn, INSERT_RESOURCE, (resource_id, now, now))
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
