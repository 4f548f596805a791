"""`MilvusVectorStore`: recall's vectors in Milvus: Milvus Lite (a local file), a standalone
server or a distributed cluster, through pymilvus's `MilvusClient`.

One collection per index (embedding model and dimension), ``lmm_<index name>``, cosine metric.
Each row is one piece of a message: primary key the piece id (``message id`` or ``message
id#n``), ``message_id``, ``thread_id``, ``role``, ``created_at``, and ``resource_id`` as the
collection's **partition key** (Milvus's multi-tenant design: each resource's rows hash to
their partition and a search filtered by it reads only that one). Every search is filtered by
resource (and thread, or a set of threads) inside Milvus's search, never after it.

``MilvusVectorStore("./memory_vectors.db")`` is Milvus Lite (the ``milvus`` extra: pure Python
over FAISS, no server; for tests and small apps); ``MilvusVectorStore(uri="http://milvus:19530",
token=...)`` a server or cluster, with the same code.

The vector index (`index_type`, set when a collection is made): ``AUTOINDEX`` on a server (its
own tuned index), ``FLAT`` (an exact scan) in Milvus Lite, whose AUTOINDEX and HNSW found
0.82–0.94 of the true top 10 on real chat text (300,011 LoCoMo pieces in one resource, whatever
``nprobe`` or ``ef`` the search passed; FLAT 1.00, 2026-11-25): Lite holds what a scan serves.

Examples:
    >>> import tempfile
    >>> store = MilvusVectorStore(tempfile.mkdtemp() + "/vectors.db")
    >>> store.upsert("demo", [VectorRecord("m1", [1.0, 0.0], "t1", "alice", "user", 0.0)])
    >>> [h.message_id for h in store.query("demo", [1.0, 0.1], top_k=3, resource_id="alice")]
    ['m1']
    >>> store.query("demo", [1.0, 0.1], top_k=3, resource_id="bob")
    []
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError
from ...storage.records import TimeWindow
from ..vector import VectorHit, VectorRecord
from .base import BATCH, EngineStore, extra_missing, one_place

MAX_ID = 512  # VARCHAR length of the id fields


def literal(value: str) -> str:
    """A string as a Milvus filter literal (quoted and escaped)."""
    return json.dumps(value)


def one_of(field: str, values: Sequence[str]) -> str:
    return f"{field} in [{', '.join(map(literal, values))}]"


# a turn reads its own writes: a server's default ("Bounded") may not show a write to the
# next search; "Strong" waits for every write before it (Milvus Lite is strong anyway)
CONSISTENCY = "Strong"


class MilvusVectorStore(EngineStore):
    """Message vectors in Milvus (see the module doc). `location`: a Milvus Lite file; or
    `uri` (and `token`) for a server or cluster; or a ready `client` (a `MilvusClient`).
    `index_type`: the vector index of collections it makes (default ``FLAT`` in Milvus Lite,
    ``AUTOINDEX`` on a server).

    Every method has an ``a``-prefixed async twin (run in a worker thread).
    """

    engine = "Milvus"

    def __init__(
        self,
        location: str | Path | None = None,
        *,
        uri: str | None = None,
        token: str | None = None,
        client: Any = None,
        index_type: str | None = None,
    ) -> None:
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise extra_missing("MilvusVectorStore", "milvus") from exc
        one_place(
            "Milvus", "a Milvus Lite file", "uri= (a server or cluster)", location, uri, client
        )
        connect = None
        if client is None and uri is not None:  # a server: connected on first use
            connect = functools.partial(MilvusClient, uri=uri, token=token or "")
        elif client is None:
            client = MilvusClient(str(location))
        self.index_type = index_type or ("FLAT" if location is not None else "AUTOINDEX")
        self._version: tuple[int, int] | None = None
        self._start(client, uri or str(location or "client"), connect)

    # -- the engine's collections --------------------------------------------------------------
    def _exists(self, name: str) -> bool:
        return bool(self._call("exists", self.client.has_collection, name))

    def _open(self, name: str) -> None:
        """Load a collection found on disk or on the server (after a restart it is released:
        no search, get or query until it is loaded)."""
        self._call("load", self.client.load_collection, name)

    def _dimension(self, name: str) -> int:
        described = self._call("describe", self.client.describe_collection, name)
        field = next(f for f in described["fields"] if f["name"] == "vector")
        return int(field["params"]["dim"])

    def _create(self, name: str, dimension: int) -> None:
        from pymilvus import DataType

        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=MAX_ID + 16)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
        for field in ("message_id", "thread_id"):
            schema.add_field(field, DataType.VARCHAR, max_length=MAX_ID)
        schema.add_field("resource_id", DataType.VARCHAR, max_length=MAX_ID, is_partition_key=True)
        schema.add_field("role", DataType.VARCHAR, max_length=32)
        schema.add_field("created_at", DataType.DOUBLE)
        index = self.client.prepare_index_params()
        index.add_index(field_name="vector", index_type=self.index_type, metric_type="COSINE")
        scalar = self._scalar_index()
        for field in ("message_id", "thread_id"):
            index.add_index(field_name=field, index_type=scalar)
        self._call(
            "create",
            self.client.create_collection,
            name,
            schema=schema,
            index_params=index,
            consistency_level=CONSISTENCY,
        )

    def _scalar_index(self) -> str:
        """The string index the server has: INVERTED from Milvus 2.4, Trie on 2.3 (which
        refuses INVERTED)."""
        return "Trie" if self._release() < (2, 4) else "INVERTED"

    def _release(self) -> tuple[int, int]:
        """The server's (major, minor), asked once; Milvus Lite, which may not say, reads as
        current. A server before 2.3 is refused by name (the adapter works on 2.3 to 2.6)."""
        if self._version is None:
            try:
                version = str(self._call("version", self.client.get_server_version))
            except Exception:
                version = ""
            found = re.match(r"v?(\d+)\.(\d+)", version)
            self._version = (int(found[1]), int(found[2])) if found else (9, 9)
            if self._version < (2, 3):
                msg = f"Milvus {version} is too old for MilvusVectorStore: it works on 2.3 to 2.6"
                raise ConfigurationError(msg)
        return self._version

    def _filter(
        self,
        resource_id: str | None,
        threads: frozenset[str] | None = None,
        message_ids: Sequence[str] = (),
        *,
        window: TimeWindow | None = None,
    ) -> str:
        """Milvus's filter expression: this resource, these threads, these messages, this
        creation-time window."""
        parts = []
        if resource_id is not None:
            parts.append(f"resource_id == {literal(resource_id)}")
        if threads is not None:
            parts.append(one_of("thread_id", sorted(threads)))
        if message_ids:
            parts.append(one_of("message_id", list(message_ids)))
        if window is not None and window.start is not None:
            parts.append(f"created_at >= {window.start!r}")
        if window is not None and window.end is not None:
            parts.append(f"created_at < {window.end!r}")
        return " and ".join(parts)

    def _delete(self, name: str, where: Any) -> None:
        self._call("delete", self.client.delete, name, filter=where)

    def _rows(self, name: str, where: Any) -> list[tuple[str, Sequence[float]]]:
        found = self._call(
            "query",
            self.client.query,
            name,
            filter=where,
            consistency_level=CONSISTENCY,
            output_fields=["pk", "vector"],
        )
        return [(row["pk"], row["vector"]) for row in found]

    # -- the vector-store interface --------------------------------------------------------------
    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vectors by piece, with the message's metadata."""
        if not records:
            return
        name = self._collection(index_name, len(records[0].vector), create=True)
        rows = [
            {
                "pk": r.vector_id,
                "vector": [float(x) for x in r.vector],
                **{k: v for k, v in r.metadata().items() if k != "vid"},
            }  # (the pk is the vid)
            for r in records
        ]
        for start in range(0, len(rows), BATCH):
            batch = rows[start : start + BATCH]
            if self._release() < (2, 4):  # 2.3's upsert misroutes partition-key rows (a
                # filter on the key then misses them): delete by key, then insert
                self._call("delete", self.client.delete, name, ids=[r["pk"] for r in batch])
                self._call("insert", self.client.insert, name, data=batch)
            else:
                self._call("upsert", self.client.upsert, name, data=batch)

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
            "search",
            self.client.search,
            name,
            data=[[float(x) for x in vector]],
            consistency_level=CONSISTENCY,
            limit=top_k,
            filter=self._filter(resource_id, threads, window=window),
            output_fields=["message_id"],
        )
        return [
            VectorHit(hit["entity"]["message_id"], resource_id, float(hit["distance"]))
            for hit in found[0]
        ]

    def present(self, index_name: str, resource_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these messages have their (first) vector in `resource_id`'s part."""
        name = self._existing(index_name)
        if name is None or not message_ids:
            return set()
        rows = self._call(
            "get", self.client.get, name, ids=list(message_ids), output_fields=["resource_id"]
        )
        return {row["pk"] for row in rows if row["resource_id"] == resource_id}

    def count(self, index_name: str, dimension: int, resource_id: str | None = None) -> int:
        """How many vectors (pieces) the index holds, for one resource or in all."""
        name = self._collection(index_name, dimension, create=False)
        if name is None:
            return 0
        found = self._call(
            "count",
            self.client.query,
            name,
            filter=self._filter(resource_id),
            consistency_level=CONSISTENCY,
            output_fields=["count(*)"],
        )
        return int(found[0]["count(*)"])
