"""`memory.store()`'s item vectors in pgvector: one row per indexed text, HNSW for cosine.

Beside ``memory_store_items`` (which keeps the float32 vectors too, as every backend does), a
table per embedding dimension, ``memory_store_vectors_<dim>``: ``(namespace, key, n)`` and the
``halfvec``. Rows are written in the item's own transaction, so they never disagree with it; a
search reads the nearest rows under the namespace prefix (a ``"C"``-collated range), exactly
for a small prefix, through the graph with an iterative scan for a big one, and recall joins
the live items, so an expired or deleted item is never returned. The table is made (and filled
from the items already stored) the first time a vector of its dimension is written, if the
server has pgvector; without it, `nearest_items` stays the exact scan.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..records import Namespace
from .pgvector import (
    EXACT_LIMIT,
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    PgVectorFeatures,
    nearest_rows,
    pgvector_features,
    scan_exactly,
    vector_literal,
)


class ItemVectors:
    """pgvector tables of one `PostgresStorage`'s items (see the module doc)."""

    def __init__(self) -> None:
        self.extension: str | bool | None = False  # False: not looked up yet; None: absent
        self.features = PgVectorFeatures((0, 8))  # read with the extension
        self.tables: set[int] = set()
        self._lock = threading.Lock()

    def _pgvector(self, conn: Any) -> str | None:
        if self.extension is False:
            row = conn.execute(
                "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                "ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
            ).fetchone()
            if row is None:
                try:
                    with conn.transaction():  # a savepoint: refused without the privilege
                        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
                    row = ("public",)
                except Exception:
                    row = (None,)
            self.extension = row[0]
            if row[0] is not None:  # its version, and the tables an earlier process made
                self.features = pgvector_features(conn) or self.features
                self.tables |= {
                    int(name.rsplit("_", 1)[1])
                    for (name,) in conn.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                        "AND tablename LIKE 'memory\\_store\\_vectors\\_%%'"
                    ).fetchall()
                }
        return self.extension or None  # type: ignore[return-value]

    @property
    def kind(self) -> str:
        """The stored type: ``halfvec`` where pgvector has it (0.7), else ``vector``."""
        return "halfvec" if self.features.halfvec else "vector"

    def _table(self, conn: Any, dimension: int, *, create: bool) -> str | None:
        schema = self._pgvector(conn)
        if schema is None:
            return None
        table = f"memory_store_vectors_{int(dimension)}"
        if dimension in self.tables:
            return table
        exists = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None
        if not exists and not create:
            return None
        if not exists:
            with self._lock:
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (table,))
                conn.execute(
                    f'CREATE TABLE IF NOT EXISTS {table} (namespace TEXT COLLATE "C" NOT NULL, '
                    f'key TEXT NOT NULL, n INTEGER NOT NULL, embedding "{schema}".{self.kind}'
                    f"({int(dimension)}) NOT NULL, PRIMARY KEY (namespace, key, n))"
                )
                conn.execute(
                    f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw "
                    f'(embedding "{schema}".{self.kind}_cosine_ops) '
                    f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
                )
                for namespace, key, blob in conn.execute(  # items stored before the table
                    "SELECT namespace, key, vectors FROM memory_store_items "
                    "WHERE vectors IS NOT NULL AND length(vectors) %% %s = 0",
                    (4 * int(dimension),),
                ).fetchall():
                    rows = np.frombuffer(bytes(blob), dtype=np.float32).reshape(-1, dimension)
                    self._insert(conn, table, schema, (namespace, key), rows)
        self.tables.add(dimension)
        return table

    def _insert(
        self, conn: Any, table: str, schema: str, where: tuple[str, str], rows: np.ndarray
    ) -> None:
        with conn.cursor() as cursor:
            cursor.executemany(
                f'INSERT INTO {table} VALUES (%s, %s, %s, %s::"{schema}".{self.kind})',
                [(*where, n, vector_literal(row)) for n, row in enumerate(rows)],
            )

    def write(self, conn: Any, where: tuple[str, str], vectors: np.ndarray | None) -> None:
        """Replace an item's rows (in its own transaction); `vectors` None: it is gone or not
        indexed."""
        if self._pgvector(conn) is None:
            return
        for dimension in sorted(self.tables):
            conn.execute(
                f"DELETE FROM memory_store_vectors_{dimension} WHERE namespace = %s AND key = %s",
                where,
            )
        if vectors is None or not vectors.size:
            return
        rows = np.asarray(vectors, dtype=np.float32)
        rows = rows.reshape(-1, rows.shape[-1]) if rows.ndim > 1 else rows.reshape(1, -1)
        new = rows.shape[1] not in self.tables
        table = self._table(conn, rows.shape[1], create=True)
        if table is None:
            return
        if new:  # made just now, and filled from the items: this one's rows are in already
            conn.execute(f"DELETE FROM {table} WHERE namespace = %s AND key = %s", where)
        self._insert(conn, table, str(self.extension), where, rows)

    def nearest(
        self, conn: Any, prefix: Namespace, vector: Sequence[float], limit: int
    ) -> list[tuple[Namespace, str, float]] | None:
        """Best-first (namespace, key, cosine) of live items under `prefix`; None without a
        table for this dimension (the caller scans exactly)."""
        table = self._table(conn, len(vector), create=False)
        if table is None:
            return None
        schema = self.extension
        if prefix:
            head = ".".join(prefix)
            where = "(v.namespace = %s OR (v.namespace >= %s AND v.namespace < %s))"
            params: list[Any] = [head, head + ".", head + "/"]
        else:
            where, params = "TRUE", []
        distance = f'v.embedding OPERATOR("{schema}".<=>) %s::"{schema}".{self.kind}({len(vector)})'
        pieces = 4 * limit  # several texts per item may be among the nearest
        iterative = self.features.iterative_scan
        rows = nearest_rows(
            conn,
            lambda nearest: conn.execute(
                f"WITH found AS MATERIALIZED ({nearest}) SELECT f.namespace, f.key, "
                "min(f.d) AS d FROM found f JOIN memory_store_items i ON i.namespace = "
                "f.namespace AND i.key = f.key AND (i.expires_at IS NULL OR i.expires_at > %s) "
                "GROUP BY f.namespace, f.key ORDER BY d LIMIT %s",
                (vector_literal(vector), *params, pieces, time.time(), limit),
            ).fetchall(),
            wanted=limit,
            exact=scan_exactly(
                conn,
                table=table,
                source=f"{table} v",
                where=where,
                params=params,
                beam=pieces,
                exact_limit=EXACT_LIMIT,
                iterative=iterative,
            ),
            iterative=iterative,
            source=f"{table} v",
            columns="v.namespace, v.key",
            distance=distance,
            where=where,
            beam=pieces,
        )
        return [(tuple(ns.split(".")), key, 1.0 - float(d)) for ns, key, d in rows]
