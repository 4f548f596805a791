"""The checkpoint-list room of `SQLStorage`: a graph's message lists, each value stored once.

`MemoryCheckpointer` stores a checkpoint's ``messages`` list here instead of in the wrapped
saver (which keeps a small reference, `integrations.checkpointer.channel`). Two tables, keyed by
thread (they go with it):

- ``memory_checkpoint_values``: each distinct value once (the saver's own serialization, keyed
  by a digest of it), with the id of the message it is, so retention can blank it
  (``value`` NULL: pruned, and skipped by every list that held it);
- ``memory_checkpoint_lists``: per checkpoint that changed the list, the list as its base's
  first ``keep`` keys and then ``tail``; a row with no base is a whole list (a snapshot), so a
  read follows a chain of at most `SNAPSHOT_EVERY` rows.

A list is read in one transaction: its chain (a recursive query), then the values not already
known. Writes are idempotent (a put retried, a second process writing the same value).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from ..records import CheckpointList, CheckpointValue, Thread, now_utc, thread_from_row
from ..validation import check_id
from .statements import THREAD_COLUMNS, Connection, SQLRoom, check_thread_owner

SNAPSHOT_EVERY = 32  # a list row with this many rows below it is written whole
KEY_SEP = " "  # keys are digests in URL-safe base64: no spaces

CHAIN = """
    WITH RECURSIVE chain(checkpoint_id, base_id, keep, tail, depth, n) AS (
        SELECT checkpoint_id, base_id, keep, tail, depth, 0 FROM memory_checkpoint_lists
        WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?
        UNION ALL
        SELECT l.checkpoint_id, l.base_id, l.keep, l.tail, l.depth, c.n + 1
        FROM memory_checkpoint_lists l JOIN chain c ON l.checkpoint_id = c.base_id
        WHERE l.thread_id = ? AND l.checkpoint_ns = ? AND c.n < ?
    )
    SELECT base_id, keep, tail, depth FROM chain ORDER BY n DESC
"""


ONE_STATEMENT_READ = CHAIN.replace(
    "SELECT base_id, keep, tail, depth FROM chain ORDER BY n DESC",
    ", lists AS (SELECT array_agg(base_id ORDER BY n DESC) AS bases, "
    "array_agg(keep ORDER BY n DESC) AS keeps, array_agg(tail ORDER BY n DESC) AS tails, "
    "array_agg(depth ORDER BY n DESC) AS depths FROM chain), "
    "wanted AS (SELECT array_agg(key) AS keys, array_agg(message_id) AS message_ids, "
    "array_agg(type) AS kinds, array_agg(value) AS data FROM memory_checkpoint_values "
    "WHERE thread_id = ? AND key IN (SELECT unnest(string_to_array(tail, ' ')) FROM chain) "
    "AND NOT key = ANY(?::text[])) "
    f"SELECT {', '.join('t.' + c.strip() for c in THREAD_COLUMNS.split(','))}, lists.*, wanted.* "
    "FROM lists CROSS JOIN wanted LEFT JOIN memory_threads t ON t.id = ?",
)
"""`read_thread_and_checkpoint_list` on PostgreSQL: the thread, the chain and its values as
one row of arrays."""
ListRead = tuple[list[str], int, dict[str, CheckpointValue]]  # keys, depth, values read


def split_keys(tail: str) -> list[str]:
    return tail.split(KEY_SEP) if tail else []


def _joined(rows: Iterable[tuple[int, str]]) -> list[str]:
    """The keys of a chain's ``(keep, tail)`` rows, oldest (the snapshot) first."""
    keys: list[str] = []
    for keep, tail in rows:
        keys = keys[:keep] + split_keys(tail)
    return keys


class CheckpointListTable(SQLRoom):
    """A room of `SQLStorage` (see `SQLRoom`)."""

    def save_checkpoint_list(
        self,
        entry: CheckpointList,
        values: Sequence[CheckpointValue] = (),
        *,
        resource_id: str | None = None,
    ) -> None:
        """Store the list `entry` and its new `values` (those already stored are left as they
        are). With `resource_id`, only in a thread it owns (else `ResourceMismatchError` or
        `ThreadNotFoundError`, nothing written). Two statements, each standing on its own: the
        list first (a reader reaches it only once the saver has the checkpoint naming it,
        after both), then the values; a retry writes the same."""
        check_id(entry.thread_id, "thread_id")
        now = self._time(now_utc())
        owned = "" if resource_id is None else " AND resource_id = ?"
        with self._transaction(write=True, atomic=False) as conn:
            written = self._run(
                conn,
                "INSERT INTO memory_checkpoint_lists (thread_id, checkpoint_ns, checkpoint_id, "
                "base_id, keep, tail, depth) SELECT ?, ?, ?, ?, ?, ?, ? "
                f"WHERE EXISTS (SELECT 1 FROM memory_threads WHERE id = ?{owned}) "
                "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET "
                "base_id = excluded.base_id, keep = excluded.keep, tail = excluded.tail, "
                "depth = excluded.depth RETURNING 1",
                (
                    entry.thread_id,
                    entry.checkpoint_ns,
                    entry.checkpoint_id,
                    entry.base_id,
                    entry.keep,
                    KEY_SEP.join(entry.tail),
                    entry.depth,
                    entry.thread_id,
                    *(() if resource_id is None else (resource_id,)),
                ),
            ).fetchone()
            if written is None:  # not that owner's thread (or no such thread): why, and stop
                owner = self._run(
                    conn, "SELECT resource_id FROM memory_threads WHERE id = ?", (entry.thread_id,)
                ).fetchone()
                check_thread_owner(entry.thread_id, resource_id, owner and owner[0])
                check_thread_owner(entry.thread_id, resource_id, None)
            if values:
                rows = ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(values))
                self._run(
                    conn,
                    "INSERT INTO memory_checkpoint_values (thread_id, key, message_id, type, "
                    f"value, created_at) VALUES {rows} ON CONFLICT (thread_id, key) DO NOTHING",
                    [
                        item
                        for v in values
                        for item in (entry.thread_id, v.key, v.message_id, v.type, v.data, now)
                    ],
                )

    def read_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] | None = None,
    ) -> ListRead | None:
        """The keys of the list stored for a checkpoint, its depth (rows below it), and the
        values of its keys not in `known` (a pruned one with ``data`` None; ``known=None``:
        no values); None when no list is stored for it."""
        check_id(thread_id, "thread_id")
        with self._transaction(write=False) as conn:
            return self._read_list(conn, thread_id, checkpoint_ns, checkpoint_id, known)

    def read_thread_and_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] = (),
    ) -> tuple[Thread | None, ListRead | None]:
        """The thread as it is now (None: no such thread) and `read_checkpoint_list`, read
        together: a checkpoint read checks its owner in the same trip (on PostgreSQL one
        statement; SQLite reads its file in one transaction)."""
        check_id(thread_id, "thread_id")
        with self._transaction(write=False) as conn:
            if not self.dialect.one_statement_lists:
                row = self._run(
                    conn, f"SELECT {THREAD_COLUMNS} FROM memory_threads WHERE id = ?", (thread_id,)
                ).fetchone()
                read = self._read_list(conn, thread_id, checkpoint_ns, checkpoint_id, known)
                return (thread_from_row(row) if row else None), read
            row = self._run(
                conn,
                ONE_STATEMENT_READ,
                (
                    thread_id,
                    checkpoint_ns,
                    checkpoint_id,
                    thread_id,
                    checkpoint_ns,
                    SNAPSHOT_EVERY * 4,
                    thread_id,
                    list(known),
                    thread_id,
                ),
            ).fetchone()
        width = len(THREAD_COLUMNS.split(","))
        thread = thread_from_row(row[:width]) if row[0] is not None else None
        bases, keeps, tails, depths, keys, message_ids, kinds, data = row[width:]
        if not bases or bases[0] is not None:  # none, or a chain whose snapshot is gone
            return thread, None
        values = {
            key: CheckpointValue(key, message_id, kind, _bytes(value))
            for key, message_id, kind, value in zip(
                keys or [], message_ids or [], kinds or [], data or [], strict=True
            )
        }
        return thread, (_joined(zip(keeps, tails, strict=True)), int(depths[-1]), values)

    def _read_list(
        self,
        conn: Connection,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        known: Collection[str] | None,
    ) -> ListRead | None:
        rows = self._run(
            conn,
            CHAIN,
            (thread_id, checkpoint_ns, checkpoint_id, thread_id, checkpoint_ns, SNAPSHOT_EVERY * 4),
        ).fetchall()
        if not rows or rows[0][0] is not None:  # none, or a chain whose snapshot is gone
            return None
        keys = _joined((keep, tail) for _base, keep, tail, _depth in rows)
        depth = int(rows[-1][3])
        if known is None:
            return keys, depth, {}
        wanted = [key for key in dict.fromkeys(keys) if key not in known]
        found: dict[str, CheckpointValue] = {}
        for condition, params in self.dialect.ids_in("key", wanted):
            for key, message_id, kind, data in self._run(
                conn,
                "SELECT key, message_id, type, value FROM memory_checkpoint_values "
                f"WHERE thread_id = ? AND {condition}",
                [thread_id, *params],
            ).fetchall():
                found[key] = CheckpointValue(key, message_id, kind, _bytes(data))
        return keys, depth, found

    def copy_checkpoint_lists(self, source_thread_id: str, target_thread_id: str) -> None:
        """Give `target_thread_id` the lists and values of `source_thread_id` (a thread copy
        whose checkpoints keep their ids)."""
        check_id(source_thread_id, "thread_id")
        check_id(target_thread_id, "thread_id")
        with self._transaction(write=True) as conn:
            self._run(
                conn,
                "INSERT INTO memory_checkpoint_values (thread_id, key, message_id, type, value, "
                "created_at) SELECT ?, key, message_id, type, value, created_at "
                "FROM memory_checkpoint_values WHERE thread_id = ? "
                "ON CONFLICT (thread_id, key) DO NOTHING",
                (target_thread_id, source_thread_id),
            )
            self._run(
                conn,
                "INSERT INTO memory_checkpoint_lists (thread_id, checkpoint_ns, checkpoint_id, "
                "base_id, keep, tail, depth) SELECT ?, checkpoint_ns, checkpoint_id, base_id, "
                "keep, tail, depth FROM memory_checkpoint_lists WHERE thread_id = ? "
                "ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO NOTHING",
                (target_thread_id, source_thread_id),
            )

    def blank_checkpoint_values(self, thread_id: str, message_ids: Sequence[str]) -> int:
        """Blank the stored values of these messages in the thread's lists (retention: the
        lists that held them read on without them); how many were blanked."""
        check_id(thread_id, "thread_id")
        count = 0
        with self._transaction(write=True) as conn:
            for condition, params in self.dialect.ids_in("message_id", list(message_ids)):
                cursor = self._run(
                    conn,
                    "UPDATE memory_checkpoint_values SET value = NULL, type = NULL "
                    f"WHERE thread_id = ? AND value IS NOT NULL AND {condition}",
                    [thread_id, *params],
                )
                count += max(getattr(cursor, "rowcount", 0) or 0, 0)
        return count

    def sweep_checkpoint_lists(
        self,
        thread_id: str,
        keep: Collection[tuple[str, str]],
        doomed: Collection[tuple[str, str]] | None = None,
    ) -> int:
        """Delete the thread's list rows that no checkpoint in `keep` ((namespace, id) of the
        rows the kept checkpoints name) reaches, and the values no remaining row holds; how
        many rows went. Run after checkpoints were pruned; with `doomed` (the pruned
        checkpoints), only their rows may go (a turn's new row, written meanwhile, stays)."""
        check_id(thread_id, "thread_id")
        with self._transaction(write=True) as conn:
            rows = self._run(
                conn,
                "SELECT checkpoint_ns, checkpoint_id, base_id, keep, tail "
                "FROM memory_checkpoint_lists WHERE thread_id = ?",
                (thread_id,),
            ).fetchall()
            by_id = {(ns, cid): (base, keep_, tail) for ns, cid, base, keep_, tail in rows}
            if doomed:  # a kept list built on pruned ones becomes whole, so they can go
                for start in keep:
                    chain = _chain(by_id, start)
                    if any(node in doomed for node in chain[1:]):
                        whole = _keys(by_id, chain)
                        by_id[start] = (None, 0, KEY_SEP.join(whole))
                        self._run(
                            conn,
                            "UPDATE memory_checkpoint_lists SET base_id = NULL, keep = 0, "
                            "tail = ?, depth = 0 WHERE thread_id = ? AND checkpoint_ns = ? "
                            "AND checkpoint_id = ?",
                            (by_id[start][2], thread_id, *start),
                        )
            reached = {node for start in keep for node in _chain(by_id, start)}
            gone = [
                node for node in by_id if node not in reached and (doomed is None or node in doomed)
            ]
            for ns, cid in gone:
                self._run(
                    conn,
                    "DELETE FROM memory_checkpoint_lists "
                    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                    (thread_id, ns, cid),
                )
            if gone:
                used = {
                    key for node in by_id if node not in gone for key in split_keys(by_id[node][2])
                }
                stored = [
                    str(r[0])
                    for r in self._run(
                        conn,
                        "SELECT key FROM memory_checkpoint_values WHERE thread_id = ?",
                        (thread_id,),
                    ).fetchall()
                ]
                unused = [key for key in stored if key not in used]
                for condition, params in self.dialect.ids_in("key", unused):
                    self._run(
                        conn,
                        f"DELETE FROM memory_checkpoint_values WHERE thread_id = ? AND {condition}",
                        [thread_id, *params],
                    )
        return len(gone)


Rows = dict[tuple[str, str], tuple[str | None, int, str]]  # (ns, id) -> base, keep, tail


def _chain(by_id: Rows, start: tuple[str, str]) -> list[tuple[str, str]]:
    """`start` and the rows it builds on, newest first (as far as they are stored)."""
    chain: list[tuple[str, str]] = []
    node: tuple[str, str] | None = start
    while node is not None and node in by_id and node not in chain:
        chain.append(node)
        base = by_id[node][0]
        node = (node[0], base) if base is not None else None
    return chain


def _keys(by_id: Rows, chain: list[tuple[str, str]]) -> list[str]:
    """The whole key list of `chain`'s first row."""
    keys: list[str] = []
    for node in reversed(chain):
        _base, keep, tail = by_id[node]
        keys = keys[:keep] + split_keys(tail)
    return keys


def _bytes(data: object) -> bytes | None:
    if data is None:
        return None
    assert isinstance(data, (bytes, bytearray, memoryview)), type(data)  # sqlite / psycopg
    return bytes(data)
