"""Mastra's tables and ours, kept in step inside each transaction (written once for both
engines: `sqlite` and `postgres` supply the change log, the table names and the time columns).

Mastra's rows are the memory both runtimes share; ours are an index of them (what our
algorithms search and window) plus what Mastra has no table for.

- **In** (`_read_in`): a write transaction begins by reading what Mastra changed since: threads
  whose ``updatedAt`` moved (Mastra bumps it on every save, edit and delete of a message), their
  rows compared by digest with what we last read or wrote; a changed row is decoded again
  (`content`), a vanished one takes its messages away. A read first checks, with one indexed
  query (`_probe`), whether anything changed at all.
- **Out** (`_write_out`): the engine's change log holds what the transaction changed in our
  tables; before it commits, the rows holding those messages are rendered again in Mastra's
  shape, the thread's ``updatedAt`` bumped, working memory written to Mastra's place.

A catch-up of many changes (a store Mastra filled for months, opened here the first time) runs
as several transactions of at most `CATCH_UP_ROWS` changed rows (a long thread over several),
each well under Mastra's 5 s busy timeout.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ...errors import MastraMemoryError
from ..records import MESSAGE_COLUMNS, from_iso, message_rows, now_utc
from ..sql.statements import INSERT_RESOURCE
from .content import decode_row, encode_row, group_rows
from .layout import after, from_js_time, js_time, json_object
from .observations import ObservationsSync

logger = logging.getLogger(__name__)
CATCH_UP_ROWS = 2000  # Mastra rows read in per transaction at most (a long catch-up: several)
MARGIN = timedelta(seconds=30)  # how far back of the newest seen ``updatedAt`` a look starts
WORKING_MEMORY = "workingMemory"  # a thread's working memory, in Mastra's thread metadata
OBSERVATIONS = "mastra_observational_memory"


class MastraStorage(ObservationsSync):
    """Memory on a Mastra store: Mastra's own tables, shared with a Mastra (TypeScript) agent.

    ``Memory(storage=MastraStorage("file:mastra.db"))`` continues the threads a Mastra agent
    keeps in that LibSQL file, and ``MastraStorage("postgresql://...", schema_name="mastra")``
    those of Mastra's ``PostgresStore``; turns saved here read in Mastra as its own (a user row
    and one assistant row each, tool calls and results as ``tool-invocation`` parts), working
    memory in Mastra's places. Everything else of ours (checkpoints, store items, observation
    groups, the search indexes) lives in ``memory_*`` tables beside Mastra's, which Mastra never
    reads. Mastra's tables are created as Mastra creates them where missing, never altered (an
    index on ``updatedAt`` is added beside). This class makes the engine's own:
    `MastraSQLiteStorage` for a file, `MastraPostgresStorage` for a DSN.

    Examples:
        >>> import tempfile, os
        >>> storage = MastraStorage(os.path.join(tempfile.mkdtemp(), "mastra.db"))
        >>> type(storage).__name__, storage.create_thread(thread_id="t1", resource_id="a").id
        ('MastraSQLiteStorage', 't1')
    """

    _engines: dict[str, type] = {}  # noqa: RUF012  ("sqlite", "postgres": each engine's class)
    engine = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.engine:
            MastraStorage._engines[cls.engine] = cls

    def __new__(cls, url: Any = "mastra.db", *args: Any, **options: Any) -> Any:
        if cls is MastraStorage:  # the engine's own class, by what `url` names (the package
            cls = MastraStorage._engines[
                "postgres" if is_dsn(str(url)) else "sqlite"
            ]  # loads both)
        return object.__new__(cls)

    # what the engine's side says
    mastra: str = ""  # the schema Mastra's tables are in, with its dot ("" : the file's own)
    mirrored_times = False  # PostgreSQL: each time column has a ``...Z`` timestamptz twin
    _seen_probe: tuple[Any, ...] | None = None  # Mastra's tables as last read in
    _caught_up = False  # this transaction read in everything Mastra changed

    # engine hooks -----------------------------------------------------------------------------
    def _changes(self, conn: Any) -> list[tuple[str, str, str | None, Any]]:
        """This transaction's changes to our tables (kind, id, thread id, message time), taken
        off the log."""
        raise NotImplementedError

    if TYPE_CHECKING:  # SQLStorage's, which follows this in the class's bases

        def _stored(self, row: Sequence[Any]) -> Any: ...
        def _transaction(self, *, write: bool, atomic: bool = True) -> Any: ...
        def _save_rows(
            self, conn: Any, rows: Any, thread_id: str, resource_id: str, *, touched: bool = False
        ) -> Any: ...

    def _t(self, table: str) -> str:
        """Mastra's `table`, qualified."""
        return f"{self.mastra}{table}"

    def _mastra_time(self, value: Any) -> str | None:
        """A time Mastra stored, as the text Mastra's JavaScript makes of it (NULL: None)."""
        if isinstance(value, datetime):
            return js_time(value if value.tzinfo else value.replace(tzinfo=timezone.utc))
        return None if value is None else str(value)

    def _time_param(self, text: str) -> Any:
        """A Mastra time as a query parameter (a naive UTC timestamp in PostgreSQL)."""
        if not self.mirrored_times:
            return text
        moment = from_js_time(text)
        return moment.replace(tzinfo=None) if moment is not None else None

    def _time_values(self, **texts: str) -> tuple[list[str], list[Any]]:
        """The columns and values that write these Mastra times (both twins in PostgreSQL)."""
        columns, values = [], []
        for name, text in texts.items():
            columns.append(f'"{name}"')
            values.append(self._time_param(text))
            if self.mirrored_times:
                columns.append(f'"{name}Z"')
                values.append(from_js_time(text))
        return columns, values

    def _upsert(
        self,
        conn: Any,
        table: str,
        values: dict[str, Any],
        times: dict[str, str],
        keep: Sequence[str] = (),
    ) -> None:
        """Insert or, by id, update a Mastra row (`keep`: times an update leaves as they are)."""
        cast = self.dialect.json_cast
        time_columns, time_values = self._time_values(**times)
        columns = [f'"{c}"' for c in values] + time_columns
        marks = ["?" + (cast if c == "metadata" else "") for c in values] + ["?"] * len(times) * (
            2 if self.mirrored_times else 1
        )
        kept = {f'"{k}"' for k in keep} | {f'"{k}Z"' for k in keep}
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c != '"id"' and c not in kept)
        self._run(
            conn,
            f"INSERT INTO {self._t(table)} ({', '.join(columns)}) VALUES ({', '.join(marks)}) "
            f"ON CONFLICT (id) DO UPDATE SET {updates}",
            [*values.values(), *time_values],
        )

    def catch_up(self) -> None:
        """Read in what Mastra changed since the last look (nothing when its tables show no
        change: one indexed query)."""
        with super()._transaction(write=False) as conn:  # type: ignore[misc]  # (the engine's)
            if self._probe(conn) == self._seen_probe:
                return
        while True:
            with self._transaction(write=True):  # (reads in, at most CATCH_UP_ROWS rows)
                pass
            if self._caught_up:
                return

    # -- in: Mastra's rows into ours ---------------------------------------------------------
    def _probe(self, conn: Any) -> tuple[Any, ...]:
        """What changes whenever Mastra (or we) change a thread, a message, a resource or an
        observation record: each table's count and newest ``updatedAt``."""
        tables = [self._t(t) for t in ("mastra_threads", "mastra_resources", OBSERVATIONS)]
        row = self._run(
            conn,
            "SELECT "
            + ", ".join(
                f'(SELECT count(*) FROM {t}), (SELECT max("updatedAt") FROM {t})' for t in tables
            ),
        ).fetchone()
        return tuple(
            int(value) if n % 2 == 0 else self._mastra_time(value) for n, value in enumerate(row)
        )

    def _read_in(self, conn: Any, limit: int | None = None) -> bool:
        """Read in up to `limit` changed rows (`CATCH_UP_ROWS`) and every changed resource;
        True when nothing is left."""
        limit = CATCH_UP_ROWS if limit is None else limit
        probe = self._probe(conn)
        if probe == self._seen_probe:
            return True
        stored = self._run(
            conn, "SELECT updated_at FROM memory_mastra_seen WHERE kind = 'probe' AND id = ''"
        ).fetchone()
        before = (*(json.loads(stored[0]) if stored else ()), *(0, None) * 3)[:6]
        threads = self._run(
            conn,
            'SELECT t.id, t."resourceId", t.title, t.metadata, t."createdAt", t."updatedAt" '
            f'FROM {self._t("mastra_threads")} t WHERE t."updatedAt" >= ? ORDER BY t."updatedAt"',
            (self._time_param(_since(before[1])),),
        ).fetchall()
        seen = self._seen_of(conn, "thread", [row[0] for row in threads])
        changed = [row for row in threads if seen.get(row[0]) != self._mastra_time(row[5])]
        done = True
        for row in changed:
            finished, used = self._thread_in(conn, row, limit)
            limit -= used
            if not finished or limit <= 0:
                done = finished and row is changed[-1]
                break
        if probe[0] < before[0] + len(changed):  # fewer than before plus the new: deletions
            self._deletions_in(conn)
        self._resources_in(conn, _since(before[3]))
        if done:  # (an observation record reads against every message it covers)
            self._observations_in(conn, _since(before[5]))
            self._record_probe(conn, probe)
        return done

    def _seen_of(self, conn: Any, kind: str, keys: Sequence[str]) -> dict[str, str]:
        """The ``updatedAt`` last seen of these threads or resources."""
        seen: dict[str, str] = {}
        for condition, params in self.dialect.ids_in("id", list(keys)):
            seen.update(
                self._run(
                    conn,
                    f"SELECT id, updated_at FROM memory_mastra_seen WHERE kind = ? AND {condition}",
                    [kind, *params],
                ).fetchall()
            )
        return seen

    def _record_probe(self, conn: Any, probe: tuple[Any, ...]) -> None:
        self._seen(conn, "probe", "", json.dumps(probe))
        self._seen_probe = probe

    def _thread_in(self, conn: Any, row: Sequence[Any], budget: int) -> tuple[bool, int]:
        """One thread as Mastra holds it now: the thread, then up to `budget` of its changed
        rows; whether it is all in (else the next transaction goes on: the rows read in keep
        their digests), and how many rows were read."""
        thread_id, resource_id, title, raw_metadata, created, updated = row
        metadata = json_object(raw_metadata)
        working_memory = metadata.pop(WORKING_MEMORY, None)
        made = self._time(_moment(created))
        cast = self.dialect.json_cast
        self._run(conn, INSERT_RESOURCE, (resource_id, made, made))
        self._run(
            conn,
            "INSERT INTO memory_threads (id, resource_id, title, metadata, working_memory, "
            f"created_at, updated_at) VALUES (?, ?, ?, ?{cast}, ?, ?, ?) ON CONFLICT (id) DO "
            "UPDATE SET resource_id = excluded.resource_id, title = excluded.title, "
            "metadata = excluded.metadata, working_memory = excluded.working_memory",
            (
                thread_id,
                resource_id,
                title or None,
                json.dumps(metadata),
                working_memory,
                made,
                self._time(_moment(updated)),
            ),
        )
        known = dict(
            self._run(
                conn,
                "SELECT row_id, digest FROM memory_mastra_rows WHERE thread_id = ?",
                (thread_id,),
            ).fetchall()
        )
        rows = self._run(
            conn,
            f'SELECT id, content, role, "createdAt", "resourceId" FROM '
            f'{self._t("mastra_messages")} WHERE thread_id = ? ORDER BY "createdAt", id',
            (thread_id,),
        ).fetchall()
        used = 0
        for row_id, content, role, row_created, owner in rows:
            text = self._mastra_time(row_created)
            digest = _digest(role, text, content)
            if known.pop(row_id, None) != digest:
                if used == budget:
                    return False, used
                self._row_in(
                    conn, thread_id, owner or resource_id, row_id, role, content, text, digest
                )
                used += 1
        for gone in known:  # rows Mastra deleted
            self._drop_row(conn, gone)
        self._seen(conn, "thread", thread_id, self._mastra_time(updated) or "")
        return True, used

    def _row_in(
        self,
        conn: Any,
        thread_id: str,
        resource_id: str,
        row_id: str,
        role: str,
        content: Any,
        created: str | None,
        digest: str,
    ) -> None:
        """A new or changed Mastra row as our messages (what it no longer holds removed). A row
        that cannot be stored here (its ids held by another thread of ours, a message refused)
        is warned about and passed over until it changes: one bad row never stops the rest."""
        messages = decode_row(row_id, role, content)
        ids = [str(m.id) for m in messages]
        self._run(conn, "SAVEPOINT mastra_row")
        try:
            held = self._held(conn, row_id)
            self._delete_messages(conn, [i for i in held if i not in ids])
            start = from_js_time(created) or now_utc()
            times = [start + timedelta(microseconds=i) for i in range(len(messages))]
            if messages:
                rows = message_rows(messages, times)
                self._save_rows(conn, rows, thread_id, resource_id, touched=True)
                for moment, message_id in zip(times, ids, strict=True):  # (an edited row's too)
                    self._run(
                        conn,
                        "UPDATE memory_messages SET created_at = ? WHERE id = ?",
                        (self._time(moment), message_id),
                    )
            self._members(conn, row_id, thread_id, ids)
        except MastraMemoryError as exc:
            self._run(conn, "ROLLBACK TO SAVEPOINT mastra_row")
            logger.warning(
                "Mastra's row %r of thread %r cannot be read in (%s); it is passed over until "
                "it changes",
                row_id,
                thread_id,
                exc,
            )
        self._run(conn, "RELEASE SAVEPOINT mastra_row")
        self._run(
            conn,
            "INSERT INTO memory_mastra_rows VALUES (?, ?, ?) ON CONFLICT (row_id) DO UPDATE SET "
            "thread_id = excluded.thread_id, digest = excluded.digest",
            (row_id, thread_id, digest),
        )

    def _held(self, conn: Any, row_id: str) -> list[str]:
        """The ids of our messages a Mastra row holds."""
        rows = self._run(
            conn, "SELECT message_id FROM memory_mastra_members WHERE row_id = ?", (row_id,)
        ).fetchall()
        return [message_id for (message_id,) in rows]

    def _drop_row(self, conn: Any, row_id: str) -> None:
        """A row Mastra deleted: its messages leave ours."""
        self._delete_messages(conn, self._held(conn, row_id))
        self._run(conn, "DELETE FROM memory_mastra_members WHERE row_id = ?", (row_id,))
        self._run(conn, "DELETE FROM memory_mastra_rows WHERE row_id = ?", (row_id,))

    def _delete_messages(self, conn: Any, ids: Sequence[str]) -> None:
        for condition, params in self.dialect.ids_in("id", list(ids)):
            self._run(conn, f"DELETE FROM memory_messages WHERE {condition}", params)

    def _deletions_in(self, conn: Any) -> None:
        """Threads Mastra deleted (with their messages): gone from ours too."""
        gone = self._run(
            conn,
            "SELECT s.id FROM memory_mastra_seen s WHERE s.kind = 'thread' AND NOT EXISTS "
            f"(SELECT 1 FROM {self._t('mastra_threads')} t WHERE t.id = s.id)",
        ).fetchall()
        for (thread_id,) in gone:
            rows = self._run(
                conn, "SELECT row_id FROM memory_mastra_rows WHERE thread_id = ?", (thread_id,)
            ).fetchall()
            for (row_id,) in rows:
                self._drop_row(conn, row_id)
            self._run(conn, "DELETE FROM memory_messages WHERE thread_id = ?", (thread_id,))
            self._run(conn, "DELETE FROM memory_threads WHERE id = ?", (thread_id,))
            self._unseen(conn, "thread", thread_id)

    def _resources_in(self, conn: Any, since: str) -> None:
        """Working memory Mastra wrote to a resource's row."""
        rows = self._run(
            conn,
            'SELECT id, "workingMemory", metadata, "createdAt", "updatedAt" '
            f'FROM {self._t("mastra_resources")} WHERE "updatedAt" >= ?',
            (self._time_param(since),),
        ).fetchall()
        seen = self._seen_of(conn, "resource", [row[0] for row in rows])
        cast = self.dialect.json_cast
        for resource_id, working_memory, raw_metadata, created, updated in rows:
            if seen.get(resource_id) == self._mastra_time(updated):
                continue
            made = self._time(_moment(created))
            self._run(conn, INSERT_RESOURCE, (resource_id, made, made))
            self._run(
                conn,
                f"UPDATE memory_resources SET working_memory = ?, metadata = ?{cast} WHERE id = ?",
                (working_memory, json.dumps(json_object(raw_metadata)), resource_id),
            )
            self._seen(conn, "resource", resource_id, self._mastra_time(updated) or "")

    def _seen(self, conn: Any, kind: str, key: str, updated: str) -> None:
        self._run(
            conn,
            "INSERT INTO memory_mastra_seen VALUES (?, ?, ?) "
            "ON CONFLICT (kind, id) DO UPDATE SET updated_at = excluded.updated_at",
            (kind, key, updated),
        )

    def _unseen(self, conn: Any, kind: str, key: str) -> None:
        self._run(conn, "DELETE FROM memory_mastra_seen WHERE kind = ? AND id = ?", (kind, key))

    def _members(self, conn: Any, row_id: str, thread_id: str, ids: Sequence[str]) -> None:
        for message_id in ids:
            self._run(
                conn,
                "INSERT INTO memory_mastra_members VALUES (?, ?, ?) ON CONFLICT (message_id) "
                "DO UPDATE SET row_id = excluded.row_id, thread_id = excluded.thread_id",
                (message_id, row_id, thread_id),
            )

    # -- out: our changes into Mastra's rows --------------------------------------------------
    def _write_out(self, conn: Any) -> None:
        """What this transaction changed in our tables, written to Mastra's."""
        changes = self._changes(conn)
        if not changes:
            return
        touched: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        resources: set[str] = set()
        scopes: set[str] = set()
        for kind, key, thread_id, at in changes:
            if kind == "resource":
                resources.add(key)
            elif kind == "observations":
                scopes.add(key)
            elif kind == "message" and thread_id is not None:
                touched[thread_id].append((key, at))
            elif thread_id is not None:
                touched.setdefault(thread_id, [])
        stamp = js_time(now_utc())
        for resource_id in sorted(resources):
            self._resource_out(conn, resource_id, stamp)
        for thread_id, messages in touched.items():
            self._thread_out(conn, thread_id, messages, stamp)
        for key in sorted(scopes):  # (after the rows its messages are in)
            self._observations_out(conn, key, stamp)
        if self._caught_up:
            self._record_probe(conn, self._probe(conn))

    def _resource_out(self, conn: Any, resource_id: str, stamp: str) -> None:
        ours = self._run(
            conn,
            "SELECT working_memory, metadata, created_at FROM memory_resources WHERE id = ?",
            (resource_id,),
        ).fetchone()
        table = self._t("mastra_resources")
        if ours is None:  # erased
            self._run(conn, f"DELETE FROM {table} WHERE id = ?", (resource_id,))
            self._unseen(conn, "resource", resource_id)
            return
        working_memory, metadata, created = ours
        exists = self._run(conn, f"SELECT 1 FROM {table} WHERE id = ?", (resource_id,)).fetchone()
        if working_memory is None and exists is None:  # Mastra makes the row with the memory
            return
        self._upsert(
            conn,
            "mastra_resources",
            {"id": resource_id, "workingMemory": working_memory, "metadata": _json_text(metadata)},
            {"createdAt": js_time(from_iso(created)), "updatedAt": stamp},
            keep=("createdAt",),
        )
        self._seen(conn, "resource", resource_id, stamp)

    def _thread_out(
        self, conn: Any, thread_id: str, messages: Sequence[tuple[str, Any]], stamp: str
    ) -> None:
        ours = self._run(
            conn,
            "SELECT resource_id, title, metadata, working_memory, created_at "
            "FROM memory_threads WHERE id = ?",
            (thread_id,),
        ).fetchone()
        if ours is None:  # deleted: its rows and its thread go from Mastra's tables too
            self._run(
                conn, f"DELETE FROM {self._t('mastra_messages')} WHERE thread_id = ?", (thread_id,)
            )
            self._run(conn, f"DELETE FROM {self._t('mastra_threads')} WHERE id = ?", (thread_id,))
            for table in ("memory_mastra_rows", "memory_mastra_members"):
                self._run(conn, f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
            self._unseen(conn, "thread", thread_id)
            return
        resource_id, title, raw_metadata, working_memory, created = ours
        metadata = json.loads(_json_text(raw_metadata))
        if working_memory is not None:
            metadata[WORKING_MEMORY] = working_memory
        self._upsert(
            conn,
            "mastra_threads",
            {
                "id": thread_id,
                "resourceId": resource_id,
                "title": title or "",
                "metadata": json.dumps(metadata, ensure_ascii=False),
            },
            {"createdAt": js_time(from_iso(created)), "updatedAt": stamp},
            keep=("createdAt",),
        )
        self._seen(conn, "thread", thread_id, stamp)
        if messages:
            self._rows_out(conn, thread_id, messages)

    def _rows_out(self, conn: Any, thread_id: str, changed: Sequence[tuple[str, Any]]) -> None:
        """Render again the rows holding `changed` messages: from the user (or system) message
        that begins the earliest one's row to the end of the thread."""
        times = [from_iso(at) for _, at in changed if at is not None]
        window_sql = f"SELECT {MESSAGE_COLUMNS} FROM memory_messages WHERE thread_id = ?"
        params: list[Any] = [thread_id]
        if times:
            start = self._run(
                conn,
                "SELECT max(created_at) FROM memory_messages WHERE thread_id = ? "
                "AND created_at <= ? AND role IN ('user', 'system')",
                (thread_id, self._time(min(times))),
            ).fetchone()[0]
            if start is not None:
                window_sql += " AND created_at >= ?"
                params.append(start)
        window = [
            self._stored(row)
            for row in self._run(conn, window_sql + " ORDER BY created_at, seq", params).fetchall()
        ]
        ids = [str(s.message.id) for s in window] + [message_id for message_id, _ in changed]
        old: dict[str, str] = {}
        for condition, chunk in self.dialect.ids_in("message_id", ids):
            old.update(
                self._run(
                    conn,
                    f"SELECT message_id, row_id FROM memory_mastra_members WHERE {condition}",
                    chunk,
                ).fetchall()
            )
        old_rows = set(old.values())
        digests = dict(
            self._run(
                conn,
                "SELECT row_id, digest FROM memory_mastra_rows WHERE thread_id = ?",
                (thread_id,),
            ).fetchall()
        )
        # the newest row before the window: the thread's rows in time order end with the ones
        # the window renders again, so it is among the last of them (times may have been
        # moved a millisecond or more past a neighbour's: never compare with ours)
        tail = self._run(
            conn,
            f'SELECT id, "createdAt" FROM {self._t("mastra_messages")} WHERE thread_id = ? '
            'ORDER BY "createdAt" DESC LIMIT ?',
            (thread_id, len(old_rows) + 1),
        ).fetchall()
        previous = max(
            (self._mastra_time(at) or "" for row_id, at in tail if row_id not in old_rows),
            default=None,
        )
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
                self._upsert(
                    conn,
                    "mastra_messages",
                    {
                        "id": row_id,
                        "thread_id": thread_id,
                        "content": text,
                        "role": row.role,
                        "type": "v2",
                        "resourceId": head.resource_id,
                    },
                    {"createdAt": created},
                )
                self._run(
                    conn,
                    "INSERT INTO memory_mastra_rows VALUES (?, ?, ?) ON CONFLICT (row_id) DO "
                    "UPDATE SET thread_id = excluded.thread_id, digest = excluded.digest",
                    (row_id, thread_id, digest),
                )
            self._members(conn, row_id, thread_id, row.message_ids)
        for stale in old_rows - used:
            held = self._run(
                conn,
                "SELECT count(*) FROM memory_mastra_members m JOIN memory_messages o "
                "ON o.id = m.message_id WHERE m.row_id = ? AND o.thread_id != ?",
                (stale, thread_id),
            ).fetchone()[0]
            if held:  # its messages moved to another thread, which writes it
                continue
            self._run(conn, f"DELETE FROM {self._t('mastra_messages')} WHERE id = ?", (stale,))
            self._run(conn, "DELETE FROM memory_mastra_rows WHERE row_id = ?", (stale,))
            self._run(conn, "DELETE FROM memory_mastra_members WHERE row_id = ?", (stale,))
        gone = [message_id for message_id, _ in changed if message_id not in by_id]
        for condition, chunk in self.dialect.ids_in("message_id", gone):
            self._run(
                conn,
                f"DELETE FROM memory_mastra_members WHERE {condition} AND message_id NOT IN "
                "(SELECT id FROM memory_messages)",
                chunk,
            )


def is_dsn(url: str) -> bool:
    """Whether `url` names a PostgreSQL server (a URI or libpq's key=value form)."""
    return url.startswith(("postgresql://", "postgres://")) or "host=" in url or "dbname=" in url


def _since(newest: str | None) -> str:
    """Where a look for changed rows starts: `MARGIN` before the newest time seen."""
    moment = from_js_time(newest) if newest else None
    return js_time(moment - MARGIN) if moment is not None else "1970-01-01T00:00:00.000Z"


def _moment(value: Any) -> datetime:
    """A time Mastra stored (text or a naive UTC timestamp), as an aware datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return from_js_time(value) or now_utc()


def _json_text(value: Any) -> str:
    """A JSON column of ours as text (PostgreSQL hands back the object)."""
    if value is None:
        return "{}"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _digest(role: str, created: str | None, content: Any) -> str:
    """A row as it stands (role, time as Mastra's text, content): what tells a changed row."""
    if isinstance(content, (bytes, bytearray)):
        content = bytes(content).decode("utf-8", "replace")
    return hashlib.sha1(f"{role}\0{created}\0{content}".encode()).hexdigest()
