"""LangGraph store items in the SQL backends: the rows behind `memory.store()`.

An item is a JSON object under a namespace (a tuple of labels, kept joined by ``"."``, which
LangGraph forbids inside a label) and a key, with the float32 vectors of its indexed fields and
an optional time to live. A namespace prefix is a range scan: ``("a", "b")`` holds ``a.b``
itself and everything from ``a.b.`` up to (not including) ``a.b/`` (``/`` sorts right after
``.``), bytewise in both engines. Expired items are invisible at once and deleted by the next
write. Written once over the `Dialect`, like the rest of `SQLStorage`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..records import ItemWrite, Namespace, StoredItem, from_iso, now_utc
from .statements import SQLRoom

_COLUMNS = "namespace, key, value, vectors, created_at, updated_at, ttl_minutes"
_LIVE = "(expires_at IS NULL OR expires_at > ?)"
_DELETE = "DELETE FROM memory_store_items WHERE namespace = ? AND key = ?"
_UPSERT = (
    "INSERT INTO memory_store_items (namespace, key, value, vectors, created_at, updated_at, "
    "ttl_minutes, expires_at) VALUES (?, ?, ?{json}, ?, ?, ?, ?, ?) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, "
    "vectors = excluded.vectors, updated_at = excluded.updated_at, "
    "ttl_minutes = excluded.ttl_minutes, expires_at = excluded.expires_at"
)


def joined(namespace: Namespace) -> str:
    return ".".join(namespace)


def _prefix_condition(prefix: Namespace) -> tuple[str, list[Any]]:
    if not prefix:
        return "1 = 1", []
    head = joined(prefix)
    return "(namespace = ? OR (namespace >= ? AND namespace < ?))", [head, head + ".", head + "/"]


class ItemTable(SQLRoom):
    """The item algorithms: a room of `SQLStorage` (see `SQLRoom`)."""

    def _item(self, row: Sequence[Any]) -> StoredItem:
        namespace, key, value, vectors, created_at, updated_at, _ttl = row
        if vectors is not None:
            vectors = np.frombuffer(bytes(vectors), dtype=np.float32)
        return StoredItem(
            namespace=tuple(namespace.split(".")) if namespace else (),
            key=key,
            value=json.loads(value) if isinstance(value, str) else value,
            vectors=vectors,
            created_at=from_iso(created_at),
            updated_at=from_iso(updated_at),
        )

    def put_items(self, writes: Sequence[ItemWrite]) -> None:
        """Apply puts and deletes in one transaction (and delete what has expired).

        Rows are written in (namespace, key) order, so two writers of the same keys lock them
        in the same order; a transaction still chosen as a deadlock victim is run again
        (`_retried`)."""
        ordered = sorted(writes, key=lambda w: (joined(w.namespace), w.key))
        self._retried(lambda: self._put_items(ordered), "writing store items")

    def _put_items(self, writes: Sequence[ItemWrite]) -> None:
        now, clock = self._time(now_utc()), time.time()
        with self._transaction(write=True) as conn:
            self._run(conn, "DELETE FROM memory_store_items WHERE expires_at <= ?", (clock,))
            for write in writes:
                where = (joined(write.namespace), write.key)
                if write.value is None:
                    self._run(conn, _DELETE, where)
                    self._index_item(conn, where, None)
                    continue
                blob = None if write.vectors is None else write.vectors.astype(np.float32).tobytes()
                ttl = write.ttl_minutes
                expires = None if ttl is None else clock + ttl * 60
                self._run(
                    conn,
                    _UPSERT.format(json=self.dialect.json_cast),
                    (*where, json.dumps(write.value), blob, now, now, ttl, expires),
                )
                self._index_item(conn, where, write.vectors)

    def delete_items_labelled(self, label: str) -> int:
        """Delete every item (expired ones too) whose namespace has `label` as one of its
        labels (a resource's items, by LangGraph's convention: ``("memories", user_id)``);
        how many went."""
        like = label.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        with self._transaction(write=True) as conn:
            rows = self._run(
                conn,
                "SELECT namespace, key FROM memory_store_items WHERE namespace = ? "
                "OR namespace LIKE ? ESCAPE '\\' OR namespace LIKE ? ESCAPE '\\' "
                "OR namespace LIKE ? ESCAPE '\\'",
                (label, f"{like}.%", f"%.{like}", f"%.{like}.%"),
            ).fetchall()
            for namespace, key in rows:
                self._run(conn, _DELETE, (namespace, key))
                self._index_item(conn, (namespace, key), None)
        return len(rows)

    def _index_item(self, conn: Any, where: tuple[str, str], vectors: np.ndarray | None) -> None:
        """Keep an engine's own vector index of items in step (none here: scanned exactly)."""

    def nearest_items(
        self, prefix: Namespace, vector: Sequence[float], *, limit: int
    ) -> list[tuple[Namespace, str, float]]:
        """The `limit` live items under `prefix` nearest `vector`: (namespace, key, cosine of
        the best indexed text), best first; items not indexed (or by another embedder's
        dimension) are left out. Here an exact scan of the prefix's vectors alone."""
        query = np.asarray(vector, dtype=np.float32)
        query /= np.linalg.norm(query) or 1.0
        condition, params = _prefix_condition(prefix)
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                "SELECT namespace, key, vectors FROM memory_store_items "
                f"WHERE {condition} AND {_LIVE} AND vectors IS NOT NULL",
                (*params, time.time()),
            ).fetchall()
        scored: list[tuple[Namespace, str, float]] = []
        for namespace, key, blob in rows:
            found = np.frombuffer(bytes(blob), dtype=np.float32)
            if not found.size or found.size % query.size:
                continue
            found = found.reshape(-1, query.size)
            norms = np.linalg.norm(found, axis=1)
            best = float(np.max(found @ query / np.where(norms == 0, 1.0, norms)))
            scored.append((tuple(namespace.split(".")), key, best))
        scored.sort(key=lambda s: -s[2])
        return scored[:limit]

    def get_items(
        self, refs: Sequence[tuple[Namespace, str]], *, refresh_ttl: bool = True
    ) -> list[StoredItem | None]:
        """The live item at each (namespace, key), or None; reading restarts a TTL."""
        clock = time.time()
        found: list[StoredItem | None] = []
        with self._transaction(write=refresh_ttl) as conn:
            for namespace, key in refs:
                where = (joined(namespace), key)
                row = self._run(
                    conn,
                    f"SELECT {_COLUMNS} FROM memory_store_items "
                    f"WHERE namespace = ? AND key = ? AND {_LIVE}",
                    (*where, clock),
                ).fetchone()
                found.append(None if row is None else self._item(row))
                if row is not None and refresh_ttl and row[6] is not None:
                    self._run(
                        conn,
                        "UPDATE memory_store_items SET expires_at = ? "
                        "WHERE namespace = ? AND key = ?",
                        (clock + row[6] * 60, *where),
                    )
        return found

    def search_items(
        self,
        prefix: Namespace,
        *,
        limit: int | None = None,
        offset: int = 0,
        refresh_ttl: bool = False,
    ) -> list[StoredItem]:
        """Live items under `prefix`, most recently updated first (`limit` None: all)."""
        clock = time.time()
        condition, params = _prefix_condition(prefix)
        with self._transaction(write=refresh_ttl) as conn:
            rows = self._run(
                conn,
                f"SELECT {_COLUMNS} FROM memory_store_items WHERE {condition} AND {_LIVE} "
                "ORDER BY updated_at DESC, namespace, key LIMIT ? OFFSET ?",
                (*params, clock, self.dialect.no_limit if limit is None else limit, offset),
            ).fetchall()
            if refresh_ttl:
                for row in rows:
                    if row[6] is not None:
                        self._run(
                            conn,
                            "UPDATE memory_store_items SET expires_at = ? "
                            "WHERE namespace = ? AND key = ?",
                            (clock + row[6] * 60, row[0], row[1]),
                        )
        return [self._item(row) for row in rows]

    def item_namespaces(self) -> list[Namespace]:
        """Every namespace holding a live item."""
        with self._transaction(write=False) as conn:
            rows = self._run(
                conn,
                f"SELECT DISTINCT namespace FROM memory_store_items WHERE {_LIVE} "
                "ORDER BY namespace",
                (time.time(),),
            ).fetchall()
        return [tuple(row[0].split(".")) for row in rows]

    def working_memories(
        self, resource_id: str | None = None
    ) -> list[tuple[str, str | None, str, datetime]]:
        """``(resource_id, thread_id or None, text, updated_at)`` of every stored working
        memory (one resource's when given), resource-scoped ones first."""
        only = " AND resource_id = ?" if resource_id is not None else ""
        mine = " AND id = ?" if resource_id is not None else ""
        params = (resource_id,) if resource_id is not None else ()
        with self._transaction(write=False) as conn:
            resources = self._run(
                conn,
                "SELECT id, working_memory, updated_at FROM memory_resources "
                f"WHERE working_memory IS NOT NULL{mine} ORDER BY id",
                params,
            ).fetchall()
            threads = self._run(
                conn,
                "SELECT resource_id, id, working_memory, updated_at FROM memory_threads "
                f"WHERE working_memory IS NOT NULL{only} ORDER BY resource_id, id",
                params,
            ).fetchall()
        return [(r, None, text, from_iso(at)) for r, text, at in resources] + [
            (r, t, text, from_iso(at)) for r, t, text, at in threads
        ]
