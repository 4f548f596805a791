"""`MastraStorage`: memory on the tables a Mastra (TypeScript) agent stores its memory in.

One SQLite file (Mastra's ``LibSQLStore`` URL: ``"mastra.db"`` or ``"file:mastra.db"``) holds
Mastra's tables, which both runtimes read and write, and ours beside them, which Mastra never
reads. Mastra's rows are the memory both share: threads, messages, working memory. Ours are
what our algorithms search and window (the keyword index, the vector backlog, token counts, the
messages one by one as LangChain holds them) plus what Mastra has no table for (checkpoints,
store items, observation groups): an index of Mastra's rows, kept in step both ways in the
transaction that reads or writes.

- **In**: a write transaction begins by reading what Mastra changed since (threads whose
  ``updatedAt`` moved: Mastra bumps it on every save, edit and delete of a message), and a
  read first checks, with one indexed query, whether anything did; a changed Mastra row is
  decoded (`content`) into our messages, a vanished one takes its messages away.
- **Out**: triggers on this connection only (temporary: nothing of them is in the file) note
  what a transaction changes in our tables; before it commits, the rows holding those messages
  are written again in Mastra's shape, the thread's ``updatedAt`` bumped, the working memory
  written to Mastra's place (a resource's row; a thread's ``metadata.workingMemory``).

Both happen inside the one transaction, so the two sides never disagree on disk. A catch-up of
many changes (a store Mastra filled for months, opened here for the first time) runs as several
transactions of at most `CATCH_UP_THREADS` threads, each well under Mastra's 5 s busy timeout.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "mastra.db")
    >>> storage = MastraStorage(f"file:{path}")
    >>> _ = storage.create_thread(thread_id="t1", resource_id="alice")
    >>> _ = storage.save_messages([HumanMessage("hi", id="m1")], thread_id="t1",
    ...                           resource_id="alice")
    >>> import sqlite3
    >>> sqlite3.connect(path).execute(
    ...     'SELECT id, role, content FROM mastra_messages').fetchall()
    [('m1', 'user', '{"format":2,"parts":[{"type":"text","text":"hi"}],"content":"hi"}')]
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..records import MESSAGE_COLUMNS, from_iso, message_rows, now_utc, to_iso
from ..sql.statements import INSERT_RESOURCE
from ..sqlite.backend import SQLiteStorage, _statements
from .content import decode_row, encode_row, group_rows
from .layout import (
    CHANGE_LOG,
    MASTRA_TABLES,
    SYNC_TABLES,
    after,
    from_js_time,
    js_time,
    json_object,
)

CATCH_UP_THREADS = 200  # threads read in per transaction (a long catch-up: several)
MARGIN = timedelta(seconds=30)  # how far back of the newest seen ``updatedAt`` a look starts
WORKING_MEMORY = "workingMemory"  # a thread's working memory, in Mastra's thread metadata


def sqlite_path(url: str | Path) -> str:
    """The file a LibSQL URL names (``file:mastra.db``, ``file:///abs/mastra.db``, or a
    path)."""
    text = str(url)
    if text.startswith("file:"):
        text = text[len("file:") :]
        if text.startswith("//"):
            text = text[2:]
        text = text.split("?", 1)[0]
    return text


class MastraStorage(SQLiteStorage):
    """Memory on a Mastra store: Mastra's own tables, shared with a Mastra (TypeScript) agent.

    ``Memory(storage=MastraStorage("file:mastra.db"))`` continues the threads a Mastra agent
    keeps in that file and writes turns Mastra's next ``agent.generate`` reads as its own: each
    turn a user row and one assistant row, tool calls and results as ``tool-invocation``
    parts; working memory in Mastra's places. Everything else of ours (checkpoints, store
    items, observation groups, the search indexes) lives in ``memory_*`` tables beside Mastra's
    in the same file, which Mastra never reads. Mastra's tables are created (as Mastra creates
    them) when the file has none, never altered: an index on ``updatedAt`` is added beside.

    Examples:
        >>> import tempfile, os
        >>> storage = MastraStorage(os.path.join(tempfile.mkdtemp(), "mastra.db"))
        >>> storage.create_thread(thread_id="t1", resource_id="alice").resource_id
        'alice'
    """

    def __init__(self, url: str | Path = "mastra.db", *, busy_timeout: float = 30.0) -> None:
        self.url = str(url)
        self._ready = False  # until the tables and the change log exist: plain SQLite
        self._seen_probe: tuple[Any, ...] | None = None  # Mastra's tables as last read in
        self._caught_up = False  # this transaction read in everything Mastra changed
        super().__init__(sqlite_path(url), busy_timeout=busy_timeout)

    def __repr__(self) -> str:
        return f"MastraStorage({self.url!r})"

    def setup(self) -> None:
        """Our schema, Mastra's tables where missing, the change log; then read in."""
        super().setup()
        with super()._transaction(write=True) as conn:
            for statement in _statements(MASTRA_TABLES + SYNC_TABLES):
                conn.execute(statement)
        self._log_changes(self._conn)
        self._ready = True
        self.catch_up()

    @staticmethod
    def _log_changes(conn: sqlite3.Connection) -> None:
        for statement in _statements(CHANGE_LOG):
            conn.execute(statement)

    # -- transactions ------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, *, write: bool, atomic: bool = True) -> Iterator[sqlite3.Connection]:
        """`SQLiteStorage._transaction`, with Mastra's changes read in first and ours written
        out before it commits."""
        if not self._ready:
            with super()._transaction(write=write, atomic=atomic) as conn:
                yield conn
            return
        borrowed = getattr(self._local, "borrowed", None)
        inside = borrowed is not None or getattr(self._local, "writing", False)
        if not write:
            if not inside:
                self.catch_up()
            with super()._transaction(write=False) as conn:
                yield conn
            return
        if borrowed is not None:  # in another connection's transaction: log there too
            self._log_changes(borrowed)
            with super()._transaction(write=True, atomic=atomic) as conn:
                yield conn
                self._write_out(conn)
            return
        with super()._transaction(write=True, atomic=atomic) as conn:
            self._caught_up = self._read_in(conn, CATCH_UP_THREADS)
            conn.execute("DELETE FROM temp.mastra_changes")  # (what reading in wrote)
            yield conn
            self._write_out(conn)

    def catch_up(self) -> None:
        """Read in what Mastra changed since the last look (nothing when its tables show no
        change: one indexed query)."""
        with super()._transaction(write=False) as conn:
            if self._probe(conn) == self._seen_probe:
                return
        while True:
            with self._transaction(write=True):
                pass
            if self._caught_up:
                return

    @staticmethod
    def _probe(conn: sqlite3.Connection) -> tuple[Any, ...]:
        """What changes whenever Mastra (or we) change a thread, a message or a resource."""
        row = conn.execute(
            'SELECT (SELECT count(*) FROM mastra_threads), (SELECT max("updatedAt") FROM '
            'mastra_threads), (SELECT count(*) FROM mastra_resources), (SELECT max("updatedAt") '
            "FROM mastra_resources)"
        ).fetchone()
        return tuple(row)

    # -- in: Mastra's rows into ours ---------------------------------------------------------
    def _read_in(self, conn: sqlite3.Connection, limit: int) -> bool:
        """Read in up to `limit` changed threads (and every changed resource); True when
        nothing is left."""
        probe = self._probe(conn)
        if probe == self._seen_probe:
            return True
        stored = conn.execute(
            "SELECT updated_at FROM memory_mastra_seen WHERE kind = 'probe' AND id = ''"
        ).fetchone()
        before = tuple(json.loads(stored[0])) if stored else (0, None, 0, None)
        threads = conn.execute(
            'SELECT t.id, t."resourceId", t.title, t.metadata, t."createdAt", t."updatedAt" '
            "FROM mastra_threads t LEFT JOIN memory_mastra_seen s "
            "ON s.kind = 'thread' AND s.id = t.id "
            'WHERE t."updatedAt" >= ? AND (s.updated_at IS NULL OR s.updated_at != t."updatedAt")'
            ' ORDER BY t."updatedAt" LIMIT ?',
            (_since(before[1]), limit + 1),
        ).fetchall()
        for row in threads[:limit]:
            self._thread_in(conn, row)
        if probe[0] < before[0] + len(threads):  # fewer than before plus the new: deletions
            self._deletions_in(conn)
        self._resources_in(conn, _since(before[3]))
        done = len(threads) <= limit
        if done:
            self._record_probe(conn, probe)
        return done

    def _record_probe(self, conn: sqlite3.Connection, probe: tuple[Any, ...]) -> None:
        conn.execute(
            "INSERT INTO memory_mastra_seen VALUES ('probe', '', ?) "
            "ON CONFLICT (kind, id) DO UPDATE SET updated_at = excluded.updated_at",
            (json.dumps(probe),),
        )
        self._seen_probe = probe

    def _thread_in(self, conn: sqlite3.Connection, row: Sequence[Any]) -> None:
        """One thread as Mastra holds it now: the thread, then its changed rows."""
        thread_id, resource_id, title, raw_metadata, created, updated = row
        metadata = json_object(raw_metadata)
        working_memory = metadata.pop(WORKING_MEMORY, None)
        made = to_iso(from_js_time(created) or now_utc())
        conn.execute(INSERT_RESOURCE, (resource_id, made, made))
        conn.execute(
            "INSERT INTO memory_threads (id, resource_id, title, metadata, working_memory, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "resource_id = excluded.resource_id, title = excluded.title, "
            "metadata = excluded.metadata, working_memory = excluded.working_memory",
            (
                thread_id,
                resource_id,
                title or None,
                json.dumps(metadata),
                working_memory,
                made,
                to_iso(from_js_time(updated) or now_utc()),
            ),
        )
        known = dict(
            conn.execute(
                "SELECT row_id, digest FROM memory_mastra_rows WHERE thread_id = ?", (thread_id,)
            ).fetchall()
        )
        rows = conn.execute(
            'SELECT id, content, role, "createdAt", "resourceId" FROM mastra_messages '
            'WHERE thread_id = ? ORDER BY "createdAt", id',
            (thread_id,),
        ).fetchall()
        for row_id, content, role, row_created, owner in rows:
            digest = _digest(role, row_created, content)
            if known.pop(row_id, None) != digest:
                self._row_in(
                    conn,
                    thread_id,
                    owner or resource_id,
                    row_id,
                    role,
                    content,
                    row_created,
                    digest,
                )
        for gone in known:  # rows Mastra deleted
            self._drop_row(conn, gone)
        self._seen(conn, "thread", thread_id, updated)

    def _row_in(
        self,
        conn: sqlite3.Connection,
        thread_id: str,
        resource_id: str,
        row_id: str,
        role: str,
        content: Any,
        created: Any,
        digest: str,
    ) -> None:
        """A new or changed Mastra row as our messages (what it no longer holds removed)."""
        messages = decode_row(row_id, role, content)
        ids = [str(m.id) for m in messages]
        held = [
            message_id
            for (message_id,) in conn.execute(
                "SELECT message_id FROM memory_mastra_members WHERE row_id = ?", (row_id,)
            ).fetchall()
        ]
        self._delete_messages(conn, [i for i in held if i not in ids])
        start = from_js_time(created) or now_utc()
        times = [start + timedelta(microseconds=i) for i in range(len(messages))]
        if messages:
            rows = message_rows(messages, times)
            self._save_rows(conn, rows, thread_id, resource_id, touched=True)
            conn.executemany(
                "UPDATE memory_messages SET created_at = ? WHERE id = ?",
                [(to_iso(moment), i) for moment, i in zip(times, ids, strict=True)],
            )
        self._members(conn, row_id, thread_id, ids)
        conn.execute(
            "INSERT INTO memory_mastra_rows VALUES (?, ?, ?) ON CONFLICT (row_id) DO UPDATE SET "
            "thread_id = excluded.thread_id, digest = excluded.digest",
            (row_id, thread_id, digest),
        )

    def _drop_row(self, conn: sqlite3.Connection, row_id: str) -> None:
        """A row Mastra deleted: its messages leave ours."""
        held = [
            message_id
            for (message_id,) in conn.execute(
                "SELECT message_id FROM memory_mastra_members WHERE row_id = ?", (row_id,)
            ).fetchall()
        ]
        self._delete_messages(conn, held)
        conn.execute("DELETE FROM memory_mastra_members WHERE row_id = ?", (row_id,))
        conn.execute("DELETE FROM memory_mastra_rows WHERE row_id = ?", (row_id,))

    def _delete_messages(self, conn: sqlite3.Connection, ids: Sequence[str]) -> None:
        for condition, params in self.dialect.ids_in("id", list(ids)):
            conn.execute(f"DELETE FROM memory_messages WHERE {condition}", params)

    def _deletions_in(self, conn: sqlite3.Connection) -> None:
        """Threads Mastra deleted (with their messages): gone from ours too."""
        gone = conn.execute(
            "SELECT s.id FROM memory_mastra_seen s WHERE s.kind = 'thread' AND NOT EXISTS "
            "(SELECT 1 FROM mastra_threads t WHERE t.id = s.id)"
        ).fetchall()
        for (thread_id,) in gone:
            for (row_id,) in conn.execute(
                "SELECT row_id FROM memory_mastra_rows WHERE thread_id = ?", (thread_id,)
            ).fetchall():
                self._drop_row(conn, row_id)
            conn.execute("DELETE FROM memory_messages WHERE thread_id = ?", (thread_id,))
            conn.execute("DELETE FROM memory_threads WHERE id = ?", (thread_id,))
            conn.execute(
                "DELETE FROM memory_mastra_seen WHERE kind = 'thread' AND id = ?", (thread_id,)
            )

    def _resources_in(self, conn: sqlite3.Connection, since: str) -> None:
        """Working memory Mastra wrote to a resource's row."""
        changed = conn.execute(
            'SELECT r.id, r."workingMemory", r.metadata, r."createdAt", r."updatedAt" '
            "FROM mastra_resources r LEFT JOIN memory_mastra_seen s "
            "ON s.kind = 'resource' AND s.id = r.id "
            'WHERE r."updatedAt" >= ? AND (s.updated_at IS NULL OR s.updated_at != r."updatedAt")',
            (since,),
        ).fetchall()
        for resource_id, working_memory, raw_metadata, created, updated in changed:
            made = to_iso(from_js_time(created) or now_utc())
            conn.execute(INSERT_RESOURCE, (resource_id, made, made))
            conn.execute(
                "UPDATE memory_resources SET working_memory = ?, metadata = ? WHERE id = ?",
                (working_memory, json.dumps(json_object(raw_metadata)), resource_id),
            )
            self._seen(conn, "resource", resource_id, updated)

    @staticmethod
    def _seen(conn: sqlite3.Connection, kind: str, key: str, updated: str) -> None:
        conn.execute(
            "INSERT INTO memory_mastra_seen VALUES (?, ?, ?) "
            "ON CONFLICT (kind, id) DO UPDATE SET updated_at = excluded.updated_at",
            (kind, key, updated),
        )

    @staticmethod
    def _members(conn: sqlite3.Connection, row_id: str, thread_id: str, ids: Sequence[str]) -> None:
        conn.executemany(
            "INSERT INTO memory_mastra_members VALUES (?, ?, ?) ON CONFLICT (message_id) "
            "DO UPDATE SET row_id = excluded.row_id, thread_id = excluded.thread_id",
            [(message_id, row_id, thread_id) for message_id in ids],
        )

    # -- out: our changes into Mastra's rows --------------------------------------------------
    def _write_out(self, conn: sqlite3.Connection) -> None:
        """What this transaction changed in our tables, written to Mastra's."""
        changes = conn.execute("SELECT kind, id, thread_id, at FROM temp.mastra_changes").fetchall()
        conn.execute("DELETE FROM temp.mastra_changes")
        if not changes:
            return
        touched: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
        resources: set[str] = set()
        for kind, key, thread_id, at in changes:
            if kind == "resource":
                resources.add(key)
            elif kind == "message":
                touched[thread_id].append((key, at))
            else:
                touched.setdefault(thread_id, [])
        stamp = js_time(now_utc())
        for resource_id in sorted(resources):
            self._resource_out(conn, resource_id, stamp)
        for thread_id, messages in touched.items():
            self._thread_out(conn, thread_id, messages, stamp)
        if self._caught_up:
            self._record_probe(conn, self._probe(conn))

    def _resource_out(self, conn: sqlite3.Connection, resource_id: str, stamp: str) -> None:
        ours = conn.execute(
            "SELECT working_memory, metadata, created_at FROM memory_resources WHERE id = ?",
            (resource_id,),
        ).fetchone()
        if ours is None:  # erased
            conn.execute("DELETE FROM mastra_resources WHERE id = ?", (resource_id,))
            conn.execute(
                "DELETE FROM memory_mastra_seen WHERE kind = 'resource' AND id = ?", (resource_id,)
            )
            return
        working_memory, metadata, created = ours
        exists = conn.execute(
            "SELECT 1 FROM mastra_resources WHERE id = ?", (resource_id,)
        ).fetchone()
        if working_memory is None and exists is None:  # Mastra makes the row with the memory
            return
        conn.execute(
            'INSERT INTO mastra_resources (id, "workingMemory", metadata, "createdAt", '
            '"updatedAt") VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET '
            '"workingMemory" = excluded."workingMemory", metadata = excluded.metadata, '
            '"updatedAt" = excluded."updatedAt"',
            (resource_id, working_memory, metadata or "{}", js_time(from_iso(created)), stamp),
        )
        self._seen(conn, "resource", resource_id, stamp)

    def _thread_out(
        self,
        conn: sqlite3.Connection,
        thread_id: str,
        messages: Sequence[tuple[str, str | None]],
        stamp: str,
    ) -> None:
        ours = conn.execute(
            "SELECT resource_id, title, metadata, working_memory, created_at "
            "FROM memory_threads WHERE id = ?",
            (thread_id,),
        ).fetchone()
        if ours is None:  # deleted: its rows and its thread go from Mastra's tables too
            conn.execute("DELETE FROM mastra_messages WHERE thread_id = ?", (thread_id,))
            conn.execute("DELETE FROM mastra_threads WHERE id = ?", (thread_id,))
            conn.execute("DELETE FROM memory_mastra_rows WHERE thread_id = ?", (thread_id,))
            conn.execute("DELETE FROM memory_mastra_members WHERE thread_id = ?", (thread_id,))
            conn.execute(
                "DELETE FROM memory_mastra_seen WHERE kind = 'thread' AND id = ?", (thread_id,)
            )
            return
        resource_id, title, metadata_json, working_memory, created = ours
        metadata = json.loads(metadata_json or "{}")
        if working_memory is not None:
            metadata[WORKING_MEMORY] = working_memory
        conn.execute(
            'INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", '
            '"updatedAt") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET '
            '"resourceId" = excluded."resourceId", title = excluded.title, '
            'metadata = excluded.metadata, "updatedAt" = excluded."updatedAt"',
            (
                thread_id,
                resource_id,
                title or "",
                json.dumps(metadata, ensure_ascii=False),
                js_time(from_iso(created)),
                stamp,
            ),
        )
        self._seen(conn, "thread", thread_id, stamp)
        if messages:
            self._rows_out(conn, thread_id, messages)

    def _rows_out(
        self, conn: sqlite3.Connection, thread_id: str, changed: Sequence[tuple[str, str | None]]
    ) -> None:
        """Render again the rows holding `changed` messages: from the user (or system) message
        that begins the earliest one's row to the end of the thread."""
        earliest = min((at for _, at in changed if at), default=None)
        start = None
        if earliest is not None:
            start = conn.execute(
                "SELECT max(created_at) FROM memory_messages WHERE thread_id = ? "
                "AND created_at <= ? AND role IN ('user', 'system')",
                (thread_id, earliest),
            ).fetchone()[0]
        window = [
            self._stored(row)
            for row in conn.execute(
                f"SELECT {MESSAGE_COLUMNS} FROM memory_messages WHERE thread_id = ? "
                "AND created_at >= ? ORDER BY created_at, seq",
                (thread_id, start or ""),
            ).fetchall()
        ]
        ids = [str(s.message.id) for s in window] + [message_id for message_id, _ in changed]
        old: dict[str, str] = {}
        for condition, params in self.dialect.ids_in("message_id", ids):
            old.update(
                conn.execute(
                    f"SELECT message_id, row_id FROM memory_mastra_members WHERE {condition}",
                    params,
                ).fetchall()
            )
        old_rows = set(old.values())
        digests = dict(
            conn.execute(
                "SELECT row_id, digest FROM memory_mastra_rows WHERE thread_id = ?", (thread_id,)
            ).fetchall()
        )
        # the newest row before the window: the thread's rows in time order end with the ones
        # the window renders again, so it is among the last of them (times may have been
        # moved a millisecond or more past a neighbour's: never compare with ours)
        tail = conn.execute(
            'SELECT id, "createdAt" FROM mastra_messages WHERE thread_id = ? '
            'ORDER BY "createdAt" DESC LIMIT ?',
            (thread_id, len(old_rows) + 1),
        ).fetchall()
        previous = max((at for row_id, at in tail if row_id not in old_rows), default=None)
        by_id = {str(s.message.id): s for s in window}
        used: set[str] = set()
        for group in group_rows([s.message for s in window]):
            candidates = [old[str(m.id)] for m in group if str(m.id) in old]
            row_id = next((c for c in candidates if c not in used), str(group[0].id))
            used.add(row_id)
            row = encode_row(group, row_id)
            head = by_id[str(group[0].id)]
            created = after(previous, head.created_at)
            previous = created
            text = row.text()
            digest = _digest(row.role, created, text)
            if digests.get(row_id) != digest:
                conn.execute(
                    'INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", '
                    '"resourceId") VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET '
                    "thread_id = excluded.thread_id, content = excluded.content, "
                    "role = excluded.role, type = excluded.type, "
                    '"createdAt" = excluded."createdAt", "resourceId" = excluded."resourceId"',
                    (row_id, thread_id, text, row.role, "v2", created, head.resource_id),
                )
                conn.execute(
                    "INSERT INTO memory_mastra_rows VALUES (?, ?, ?) ON CONFLICT (row_id) DO "
                    "UPDATE SET thread_id = excluded.thread_id, digest = excluded.digest",
                    (row_id, thread_id, digest),
                )
            self._members(conn, row_id, thread_id, row.message_ids)
        for stale in old_rows - used:
            held = conn.execute(
                "SELECT count(*) FROM memory_mastra_members m JOIN memory_messages o "
                "ON o.id = m.message_id WHERE m.row_id = ? AND o.thread_id != ?",
                (stale, thread_id),
            ).fetchone()[0]
            if held:  # its messages moved to another thread, which writes it
                continue
            conn.execute("DELETE FROM mastra_messages WHERE id = ?", (stale,))
            conn.execute("DELETE FROM memory_mastra_rows WHERE row_id = ?", (stale,))
            conn.execute("DELETE FROM memory_mastra_members WHERE row_id = ?", (stale,))
        gone = [message_id for message_id, _ in changed if message_id not in by_id]
        for condition, params in self.dialect.ids_in("message_id", gone):
            conn.execute(
                f"DELETE FROM memory_mastra_members WHERE {condition} AND message_id NOT IN "
                "(SELECT id FROM memory_messages)",
                params,
            )


def _since(newest: str | None) -> str:
    """Where a look for changed rows starts: `MARGIN` before the newest time seen."""
    moment = from_js_time(newest) if newest else None
    return js_time(moment - MARGIN) if moment is not None else ""


def _digest(role: str, created: Any, content: Any) -> str:
    """A row as it stands (role, time, content): what tells a changed row."""
    if isinstance(content, (bytes, bytearray)):
        content = bytes(content).decode("utf-8", "replace")
    return hashlib.sha1(f"{role}\0{created}\0{content}".encode()).hexdigest()
