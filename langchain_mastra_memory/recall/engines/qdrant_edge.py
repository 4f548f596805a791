"""`QdrantEdgeVectorStore`: recall's vectors in Qdrant's own engine, embedded in the process.

qdrant-client's local mode (`QdrantVectorStore(folder)`) is a pure-Python stand-in that scans
numpy arrays (3 s a query at 100k messages); Qdrant Edge (``qdrant-edge-py``) is the Qdrant
engine itself (Rust, in-process, no server): the same segments, payload indexes and filtered
HNSW a Qdrant server runs. One shard per index (embedding model and dimension) in a folder,
``<folder>/lmm_<index name>/``, cosine distance. Points are as in `QdrantVectorStore`: one per
message piece, its id a UUID derived from the piece id, its payload ``vid``, ``message_id``,
``thread_id``, ``resource_id`` (a keyword index marked as the tenant), ``role`` and
``created_at`` (indexed); every query is filtered by resource inside the search.

Graphs are built per resource, as Qdrant's multitenancy guide advises (``m`` 0, ``payload_m``
32 on the tenant index): a resource over Qdrant's full-scan threshold (10 MB of vectors, ~6,500
pieces at 384 dimensions) gets its own graph, a smaller one is scanned exactly, and no graph
spans the shard. An embedded engine builds its graphs only when asked (`EdgeShard.optimize`,
which blocks): after writes have added `optimize_after` points since the last build, the
writer's next upsert runs it (the background writer, never a turn). Until then new points are
searched by a plain scan of their segment, exact. To import millions of pieces, give a large
`optimize_after` and call `optimize()` once at the end. Needs the ``qdrant`` extra.

Examples:
    >>> import tempfile
    >>> store = QdrantEdgeVectorStore(tempfile.mkdtemp())
    >>> store.upsert("demo", [VectorRecord("m1", [1.0, 0.0], "t1", "alice", "user", 0.0)])
    >>> [h.message_id for h in store.query("demo", [1.0, 0.1], top_k=3, resource_id="alice")]
    ['m1']
    >>> store.query("demo", [1.0, 0.1], top_k=3, resource_id="bob")
    []
    >>> store.close()
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError, VectorStoreError
from ...pools import in_io_pool, on_exit
from ...storage.records import TimeWindow
from ..vector import VectorHit, VectorRecord, piece_uuid
from .base import EngineStore, extra_missing
from .qdrant import INDEXED, first_pieces_of

OPTIMIZE_AFTER = 20_000  # points written since the last graph build before the next one
# pgvector's graph here (storage/postgres/pgvector.py), a wider beam: over 300k near-equal chat
# pieces in one resource, Qdrant's defaults (m 16, ef 100) found 0.687 of the true top 10; a
# resource's own graph (m 32, ef_construct 200) found 0.854 with a beam of 460, 0.909 with
# 1,000 and 0.966 with 2,000 (5.4 ms p50, pgvector's 0.987 7.0 ms)
HNSW_M, HNSW_EF_CONSTRUCT, HNSW_EF = 32, 200, 2000
FULL_SCAN_KB = 10_000  # a segment (or filtered part) under this is scanned: Qdrant's default


class _Shards:
    """The open shards of a folder, by collection name (the store's "client")."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.open: dict[str, Any] = {}

    def close(self) -> None:
        for shard in self.open.values():
            shard.close()
        self.open.clear()


class QdrantEdgeVectorStore(EngineStore):
    """Message vectors in Qdrant Edge, the Qdrant engine in this process (see the module doc).

    Every method has an ``a``-prefixed async twin (run in a worker thread).
    """

    engine = "Qdrant Edge"

    def __init__(
        self, path: str | Path, *, optimize_after: int = OPTIMIZE_AFTER, hnsw_ef: int = HNSW_EF
    ) -> None:
        try:
            import qdrant_edge
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise extra_missing("QdrantEdgeVectorStore", "qdrant") from exc
        self._edge = qdrant_edge
        if optimize_after < 1:
            msg = f"optimize_after must be at least 1 point, got {optimize_after}"
            raise ConfigurationError(msg)
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.optimize_after, self.hnsw_ef = folder, optimize_after, hnsw_ef
        self._unindexed: dict[str, int] = {}  # points written since the last graph build
        self._start(_Shards(folder), str(folder))
        on_exit(partial(_close, weakref.ref(self)))  # no engine thread left at finalisation

    def _shard(self, name: str) -> Any:
        shards: _Shards = self.client
        if name not in shards.open:
            shards.open[name] = self._call("load", self._edge.EdgeShard.load, str(self._at(name)))
        return shards.open[name]

    def _at(self, name: str) -> Path:
        return self.folder / name

    # -- the engine's collections --------------------------------------------------------------
    def _exists(self, name: str) -> bool:
        return (self._at(name) / "lmm.json").exists()

    def _dimension(self, name: str) -> int:
        return int(json.loads((self._at(name) / "lmm.json").read_text())["dimension"])

    def _create(self, name: str, dimension: int) -> None:
        edge = self._edge
        vectors = edge.EdgeVectorParams(size=dimension, distance=edge.Distance.Cosine)
        # Qdrant's multitenant layout: no graph over the whole shard (m 0: every search is
        # filtered by resource), one per resource big enough to need it (payload_m), none
        # per thread or time range (enable_hnsw off: those filters are scanned or walked
        # inside the resource's graph); a resource under the threshold is scanned, exactly
        graph = edge.HnswIndexConfig(
            m=0, payload_m=HNSW_M, ef_construct=HNSW_EF_CONSTRUCT, full_scan_threshold=FULL_SCAN_KB
        )
        shard = self._call(
            "create",
            edge.EdgeShard.create,
            str(self._at(name)),
            edge.EdgeConfig(vectors=vectors, hnsw_config=graph),
        )
        index = edge.UpdateOperation.create_field_index
        tenant = edge.KeywordIndexParams(is_tenant=True)
        self._call("index", shard.update, index("resource_id", tenant))
        for field in INDEXED:
            keyword = edge.KeywordIndexParams(enable_hnsw=False)
            self._call("index", shard.update, index(field, keyword))
        when = edge.FloatIndexParams(enable_hnsw=False)
        self._call("index", shard.update, index("created_at", when))
        self._call("flush", shard.flush)
        (self._at(name) / "lmm.json").write_text(json.dumps({"dimension": dimension}))
        self.client.open[name] = shard

    def _filter(
        self,
        resource_id: str | None,
        threads: frozenset[str] | None = None,
        message_ids: Sequence[str] = (),
        *,
        window: TimeWindow | None = None,
    ) -> Any:
        """The engine's filter: this resource, these threads, these messages, this
        creation-time window (each when given)."""
        edge = self._edge
        must: list[Any] = []
        if resource_id is not None:
            must.append(edge.FieldCondition(key="resource_id", match=edge.MatchValue(resource_id)))
        if threads is not None:
            must.append(edge.FieldCondition(key="thread_id", match=edge.MatchAny(sorted(threads))))
        if message_ids:
            match = edge.MatchAny(list(message_ids))
            must.append(edge.FieldCondition(key="message_id", match=match))
        if window is not None:
            span = edge.RangeFloat(gte=window.start, lt=window.end)
            must.append(edge.FieldCondition(key="created_at", range=span))
        return edge.Filter(must=must)

    def _delete(self, name: str, where: Any) -> None:
        shard = self._shard(name)
        self._call(
            "delete", shard.update, self._edge.UpdateOperation.delete_points_by_filter(where)
        )

    def _rows(self, name: str, where: Any) -> list[tuple[str, Sequence[float]]]:
        shard, rows, offset = self._shard(name), [], None
        while True:
            request = self._edge.ScrollRequest(
                filter=where, limit=1000, offset=offset, with_payload=True, with_vector=True
            )
            points, offset = self._call("scroll", shard.scroll, request)
            rows += [(p.payload["vid"], p.vector) for p in points]
            if offset is None:
                return rows

    # -- the vector-store interface --------------------------------------------------------------
    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vectors by piece, with the message's metadata; builds the
        graph once `optimize_after` points have come since the last build."""
        if not records:
            return
        name = self._collection(index_name, len(records[0].vector), create=True)
        assert name is not None
        shard, edge = self._shard(name), self._edge
        points = [
            edge.Point(piece_uuid(r.vector_id), [float(x) for x in r.vector], r.metadata())
            for r in records
        ]
        for start in range(0, len(points), 500):
            batch = edge.UpdateOperation.upsert_points(points[start : start + 500])
            self._call("upsert", shard.update, batch)
        self._unindexed[name] = self._unindexed.get(name, 0) + len(points)
        if self._unindexed[name] >= self.optimize_after:
            self.optimize(index_name)

    def optimize(self, index_name: str) -> bool:
        """Build the index's graph now (blocking; what upserts do every `optimize_after`
        points); True if the engine changed its segments."""
        name = self._existing(index_name)
        if name is None:
            return False
        self._unindexed[name] = 0
        shard = self._shard(name)
        try:  # outside the store's lock: searches go on while the engine builds (it is
            return bool(shard.optimize())  # safe across threads, unlike the stand-ins)
        except Exception as exc:
            raise VectorStoreError(f"{self.engine} at {self.where} (optimize): {exc}") from exc

    def query(
        self,
        index_name: str,
        vector: Sequence[float],
        *,
        top_k: int,
        resource_id: str,
        thread_id: str | None = None,
        thread_ids: Sequence[str] | None = None,
        window: TimeWindow | None = None,
    ) -> list[VectorHit]:
        """The `top_k` nearest pieces of `resource_id`'s messages (and `thread_id`'s, or those
        of `thread_ids`), filtered inside the search, one hit per piece."""
        target = self._searched(index_name, len(vector), top_k, thread_id, thread_ids)
        if target is None:
            return []
        name, threads = target
        edge = self._edge
        request = edge.QueryRequest(
            limit=top_k,
            query=edge.Query.Nearest([float(x) for x in vector]),
            filter=self._filter(resource_id, threads, window=window),
            with_payload=True,
            params=edge.SearchParams(hnsw_ef=max(self.hnsw_ef, top_k)),
        )
        found = self._call("query", self._shard(name).query, request)
        return [VectorHit(p.payload["message_id"], resource_id, float(p.score)) for p in found]

    def present(self, index_name: str, resource_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these messages have their (first) vector in `resource_id`'s part."""
        name = self._existing(index_name)
        if name is None or not message_ids:
            return set()
        ids = [piece_uuid(m) for m in message_ids]
        points = self._call(
            "retrieve", self._shard(name).retrieve, ids, with_payload=True, with_vector=False
        )
        return first_pieces_of(points, resource_id)

    def count(self, index_name: str, dimension: int, resource_id: str | None = None) -> int:
        """How many vectors (pieces) the index holds, for one resource or in all."""
        name = self._collection(index_name, dimension, create=False)
        if name is None:
            return 0
        request = self._edge.CountRequest(filter=self._filter(resource_id), exact=True)
        return int(self._call("count", self._shard(name).count, request))

    async def aoptimize(self, index_name: str) -> bool:
        """Async `optimize` (in a worker thread)."""
        return await in_io_pool(self.optimize, index_name)

    def flush(self) -> None:
        """Write every open shard's pending changes to disk."""
        for shard in list(self.client.open.values()):
            self._call("flush", shard.flush)

    async def aflush(self) -> None:
        """Async `flush` (in a worker thread)."""
        await in_io_pool(self.flush)


def _close(ref: weakref.ref[QdrantEdgeVectorStore]) -> None:
    store = ref()
    if store is not None:
        store.close()
