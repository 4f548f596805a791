"""The search room of `SQLStorage`: keyword search, neighbour windows and the embedding
backlog."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..records import (
    MESSAGE_COLUMNS,
    Neighbour,
    StoredMessage,
    TimeWindow,
)
from ..validation import (
    check_id,
    check_ids,
    check_optional_id,
    check_query,
)
from .statements import (
    SQLRoom,
    lateral_window_sql,
    window_sql,
)

NEIGHBOUR_COLUMNS = "id, thread_id, type, text, created_at"


class SearchTable(SQLRoom):
    """A room of `SQLStorage` (see `SQLRoom`)."""

    # -- recall --------------------------------------------------------------------------------
    def search_text(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int = 10,
        thread_ids: Sequence[str] | None = None,
        window: TimeWindow | None = None,
    ) -> list[tuple[str, str, float]]:
        check_id(resource_id, "resource_id")
        check_optional_id(thread_id, "thread_id")
        check_query(query)
        threads = None if thread_ids is None else check_ids(thread_ids, "thread_ids")
        if thread_id is not None:
            threads = [thread_id] if threads is None or thread_id in threads else []
        if threads is not None and not threads:
            return []
        found: list[tuple[str, str, float]] = self._retried(
            lambda: self._search_text(query, resource_id, threads, limit, window), "searching text"
        )
        return found

    def _search_text(
        self,
        query: str,
        resource_id: str,
        threads: list[str] | None,
        limit: int,
        window: TimeWindow | None,
    ) -> list[tuple[str, str, float]]:
        with self._transaction(write=False) as conn:  # choosing the words and ranking: one read
            # a thread's (or a window's) matches are a part of its resource's: rank a deeper
            # pool for it (the dialect may deepen it)
            pool = limit if threads is None and window is None else 4 * limit
            match = self._text_match(query, conn, resource_id, pool=pool)
            if match is None:
                return []
            where = " AND m.resource_id = ? AND m.role IN ('user', 'assistant')"
            params: list[Any] = [*match.params, resource_id]
            if threads is not None:
                where += f" AND m.thread_id IN ({', '.join('?' * len(threads))})"
                params.extend(threads)
            if window is not None and window.since is not None:
                where += " AND m.created_at >= ?"
                params.append(self._time(window.since))
            if window is not None and window.until is not None:
                where += " AND m.created_at < ?"
                params.append(self._time(window.until))
            order = " ORDER BY score DESC LIMIT ?"
            rows = self._run(conn, match.statement + where + order, [*params, limit]).fetchall()
            if len(rows) < limit and match.unpooled is not None:  # the filters ate the pool:
                # any better match that passes them was outside it, so rank them all
                rows = self._run(conn, match.unpooled + where + order, [*params, limit]).fetchall()
        return [(r[0], r[1], float(r[2])) for r in rows]

    def _windows(
        self, conn: Any, ids: list[str], resource_id: str, before: int, after: int, columns: str
    ) -> list[Any]:
        """Each hit's neighbour window (`window_sql`'s rows): one statement, bound by an
        array where the engine has them (`lateral_window_sql`)."""
        if self.dialect.lateral_windows:
            params: list[Any] = [ids, resource_id, before, after]
            return self._run(conn, lateral_window_sql(columns), params).fetchall()
        params = [p for i in ids for p in (i, resource_id, before, i, resource_id, after)]
        return self._run(conn, window_sql(len(ids), columns), params).fetchall()

    def message_windows(
        self, message_ids: Sequence[str], *, before: int, after: int, resource_id: str
    ) -> list[StoredMessage]:
        check_id(resource_id, "resource_id")
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        if not ids:
            return []
        with self._transaction(write=False) as conn:
            rows = self._windows(conn, ids, resource_id, before, after + 1, MESSAGE_COLUMNS)
        ordered = sorted({row[0]: row for row in rows}.values(), key=lambda r: (r[1], r[4], r[6]))
        return [self._stored(row[:6]) for row in ordered]  # by thread, then time and seq

    def message_neighbours(
        self, message_ids: Sequence[str], *, resource_id: str
    ) -> list[Neighbour]:
        check_id(resource_id, "resource_id")
        ids = list(dict.fromkeys(check_ids(message_ids, "message_ids")))
        if not ids:
            return []
        with self._transaction(write=False) as conn:  # (no content read, no message built)
            rows = self._windows(conn, ids, resource_id, 1, 2, NEIGHBOUR_COLUMNS)
        ordered = sorted({row[0]: row for row in rows}.values(), key=lambda r: (r[1], r[4], r[5]))
        return [Neighbour(*row[:4]) for row in ordered]  # by thread, then time and seq

    def unembedded(self, *, limit: int = 500) -> list[StoredMessage]:
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                f"SELECT {MESSAGE_COLUMNS} FROM memory_messages WHERE embedded = ? "
                "AND role IN ('user', 'assistant') ORDER BY seq LIMIT ?",
                (False, limit),
            ).fetchall()
        return [self._stored(r) for r in rows]

    def count_unembedded(self) -> int:
        with self._transaction(write=False) as conn:
            (count,) = self._run(
                conn,
                "SELECT count(*) FROM memory_messages WHERE embedded = ? "
                "AND role IN ('user', 'assistant')",
                (False,),
            ).fetchone()
        return int(count)

    def mark_embedded(self, message_ids: Sequence[str], *, embedded: bool = True) -> None:
        ids = check_ids(message_ids, "message_ids")
        with self._transaction(write=True, atomic=False) as conn:  # each chunk stands alone
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
