"""`QdrantVectorStore`: recall's vectors in Qdrant, embedded (local mode) or a server/cluster.

One collection per index (embedding model and dimension), ``lmm_<index name>``, cosine
distance. Each point is one piece of a message: its id a UUID derived from the piece id
(``message id`` or ``message id#n``), its payload ``vid`` (that piece id), ``message_id``,
``thread_id``, ``resource_id`` (a tenant index: Qdrant keeps each resource's points together),
``role`` and ``created_at`` (indexed). Every query is filtered by resource *inside* the
search (and by thread, or a set of threads, when asked): never a post-filter, so a small
resource or a selective filter still fills ``top_k``.

The same code talks to qdrant-client's local mode (``QdrantVectorStore(":memory:")`` or a
folder, no server: numpy scans, for tests and small apps) and to a Qdrant server or cluster
(``QdrantVectorStore(url="http://qdrant:6333", api_key=...)``). Needs the ``qdrant`` extra.

Examples:
    >>> store = QdrantVectorStore(":memory:")
    >>> store.upsert("demo", [VectorRecord("m1", [1.0, 0.0], "t1", "alice", "user", 0.0)])
    >>> [h.message_id for h in store.query("demo", [1.0, 0.1], top_k=3, resource_id="alice")]
    ['m1']
    >>> store.query("demo", [1.0, 0.1], top_k=3, resource_id="bob")
    []
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...storage.records import TimeWindow
from ..vector import DEFAULT_TIMEOUT, VectorHit, VectorRecord, piece_uuid
from .base import EngineStore, extra_missing, one_place

INDEXED = ("message_id", "thread_id")  # keyword payload indexes besides the tenant's


def first_pieces_of(points: Sequence[Any], resource_id: str) -> set[str]:
    """The messages of `resource_id` whose first piece is among `points` (retrieved by id)."""
    return {
        p.payload["message_id"]
        for p in points
        if p.payload.get("resource_id") == resource_id and "#" not in p.payload["vid"]
    }


class QdrantVectorStore(EngineStore):
    """Message vectors in Qdrant (see the module doc). `location`: ``":memory:"`` or a folder
    (local mode); or `url` (and `api_key`) for a server or cluster; or a ready `client`.

    Every method has an ``a``-prefixed async twin (run in a worker thread).
    """

    engine = "Qdrant"

    def __init__(
        self,
        location: str | Path | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            from qdrant_client import QdrantClient
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise extra_missing("QdrantVectorStore", "qdrant") from exc
        one_place(
            "Qdrant",
            "a location (':memory:' or a folder: local mode)",
            "url= (a server or cluster)",
            location,
            url,
            client,
        )
        if client is None and url is not None:
            client = QdrantClient(url=url, api_key=api_key, timeout=int(timeout))
        elif client is None and str(location) == ":memory:":
            client = QdrantClient(location=":memory:")
        elif client is None:
            client = QdrantClient(path=str(location))
        self._start(client, url or str(location or "client"))
        self.local = location is not None  # local mode: payload indexes have no effect there

    # -- the engine's collections --------------------------------------------------------------
    def _exists(self, name: str) -> bool:
        return bool(self._call("exists", self.client.collection_exists, name))

    def _dimension(self, name: str) -> int:
        info = self._call("info", self.client.get_collection, name)
        return int(info.config.params.vectors.size)

    def _create(self, name: str, dimension: int) -> None:
        from qdrant_client import models

        params = models.VectorParams(size=dimension, distance=models.Distance.COSINE)
        self._call("create", self.client.create_collection, name, vectors_config=params)
        if not self.local:
            self._index_payload(name)

    def _index_payload(self, name: str) -> None:
        """The resource as the tenant (points kept together per resource), and the fields
        searches filter on."""
        from qdrant_client import models

        tenant = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
        create = self.client.create_payload_index
        self._call("index", create, name, "resource_id", field_schema=tenant)
        for field in INDEXED:
            self._call("index", create, name, field, field_schema=models.PayloadSchemaType.KEYWORD)
        self._call("index", create, name, "created_at", field_schema=models.PayloadSchemaType.FLOAT)

    def _filter(
        self,
        resource_id: str | None,
        threads: frozenset[str] | None = None,
        message_ids: Sequence[str] = (),
        *,
        window: TimeWindow | None = None,
    ) -> Any:
        """Qdrant's filter: this resource, these threads, these messages, this creation-time
        window (each when given; ``created_at`` has a payload index)."""
        from qdrant_client import models

        def field(key: str, match: Any) -> Any:
            return models.FieldCondition(key=key, match=match)

        must: list[Any] = []
        if resource_id is not None:
            must.append(field("resource_id", models.MatchValue(value=resource_id)))
        if threads is not None:
            must.append(field("thread_id", models.MatchAny(any=sorted(threads))))
        if message_ids:
            must.append(field("message_id", models.MatchAny(any=list(message_ids))))
        if window is not None:
            span = models.Range(gte=window.start, lt=window.end)
            must.append(models.FieldCondition(key="created_at", range=span))
        return models.Filter(must=must)

    def _delete(self, name: str, where: Any) -> None:
        from qdrant_client import models

        selector = models.FilterSelector(filter=where)
        self._call("delete", self.client.delete, name, points_selector=selector)

    def _rows(self, name: str, where: Any) -> list[tuple[str, Sequence[float]]]:
        rows: list[tuple[str, Sequence[float]]] = []
        offset = None
        while True:
            points, offset = self._call(
                "scroll",
                self.client.scroll,
                name,
                scroll_filter=where,
                limit=1000,
                offset=offset,
                with_payload=["vid"],
                with_vectors=True,
            )
            rows += [(p.payload["vid"], p.vector) for p in points]
            if offset is None:
                return rows

    # -- the vector-store interface --------------------------------------------------------------
    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vectors by piece, with the message's metadata."""
        from qdrant_client import models

        if not records:
            return
        name = self._collection(index_name, len(records[0].vector), create=True)
        points = [
            models.PointStruct(
                id=piece_uuid(r.vector_id),
                vector=[float(x) for x in r.vector],
                payload=r.metadata(),
            )
            for r in records
        ]
        for start in range(0, len(points), 500):
            self._call("upsert", self.client.upsert, name, points=points[start : start + 500])

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
        found = self._call(
            "query",
            self.client.query_points,
            name,
            query=[float(x) for x in vector],
            query_filter=self._filter(resource_id, threads, window=window),
            limit=top_k,
            with_payload=["message_id"],
        )
        return [
            VectorHit(p.payload["message_id"], resource_id, float(p.score)) for p in found.points
        ]

    def present(self, index_name: str, resource_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these messages have their (first) vector in `resource_id`'s part."""
        name = self._existing(index_name)
        if name is None or not message_ids:
            return set()
        ids = [piece_uuid(m) for m in message_ids]
        points = self._call("retrieve", self.client.retrieve, name, ids=ids, with_payload=True)
        return first_pieces_of(points, resource_id)

    def count(self, index_name: str, dimension: int, resource_id: str | None = None) -> int:
        """How many vectors (pieces) the index holds, for one resource or in all."""
        name = self._collection(index_name, dimension, create=False)
        if name is None:
            return 0
        found = self._call(
            "count", self.client.count, name, count_filter=self._filter(resource_id), exact=True
        )
        return int(found.count)
