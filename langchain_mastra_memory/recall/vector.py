"""`ChromaVectorStore`: message embeddings in Chroma (embedded, in memory, or a server).

One collection per embedding model and dimension (``memory_messages_<model>_<dim>``, or the
``index_name`` given), cosine space. Each vector's id is the message id and its metadata is
``message_id, thread_id, resource_id, role, created_at``; the text lives in storage. Filtering by
resource and thread happens inside Chroma's query (``where``), never after fetching.

Example:
    >>> store = ChromaVectorStore()  # in memory
    >>> store.upsert("demo", [VectorRecord("m1", [1.0, 0.0], "t1", "alice", "user", 0.0)])
    >>> [h.message_id for h in store.query("demo", [1.0, 0.1], top_k=3, resource_id="alice")]
    ['m1']
    >>> store.query("demo", [1.0, 0.1], top_k=3, resource_id="bob")
    []
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables.config import run_in_executor

from ..errors import ConfigurationError, VectorStoreError

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@dataclass(frozen=True)
class VectorRecord:
    """The embedding of one piece of a message, and the metadata stored beside it."""

    message_id: str
    vector: Sequence[float]
    thread_id: str
    resource_id: str
    role: str
    created_at: float  # seconds since the epoch
    piece: int = 0  # which piece (sentence) of the message; 0 is stored under the message id

    @property
    def vector_id(self) -> str:
        return self.message_id if self.piece == 0 else f"{self.message_id}#{self.piece}"


@dataclass(frozen=True)
class VectorHit:
    """A search result: cosine similarity in [-1, 1] (1 is identical)."""

    message_id: str
    thread_id: str
    resource_id: str
    score: float


def index_name_for(model: str, dimension: int) -> str:
    """The default collection name for an embedding model and dimension."""
    slug = re.sub(r"[^a-zA-Z0-9]+", "_", model).strip("_").lower() or "model"
    return f"memory_messages_{slug}_{dimension}"[:500]


def _check_name(name: str) -> str:
    if not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]", name):
        msg = f"index_name must be 3-512 characters of letters, digits, '.', '_', '-', got {name!r}"
        raise ConfigurationError(msg)
    return name


class ChromaVectorStore:
    """Message vectors in Chroma: ``path`` for an embedded ``PersistentClient``, nothing for an
    in-memory client, or ``client=chromadb.HttpClient(...)`` for a Chroma server.

    Every method has an ``a``-prefixed async twin (run in a worker thread).
    """

    def __init__(self, path: str | Path | None = None, *, client: Any = None) -> None:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        try:
            if client is not None:
                self.client = client
            elif path is not None:
                self.client = chromadb.PersistentClient(path=str(path), settings=settings)
            else:
                self.client = chromadb.EphemeralClient(settings=settings)
        except Exception as exc:
            raise VectorStoreError(f"cannot open Chroma: {exc}") from exc
        self.path = None if path is None else str(path)
        # Chroma's in-memory clients share one process-wide system: give each store its own
        # namespace so two in-memory stores never see each other's vectors.
        in_memory = client is None and path is None
        self._namespace = f"e{uuid.uuid4().hex[:12]}_" if in_memory else ""
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str) -> ChromaVectorStore:
        """Connect to a Chroma server (``http://host:port``); `VectorStoreError` if it is down."""
        import chromadb
        from chromadb.config import Settings

        match = re.fullmatch(r"(https?)://([^:/]+)(?::(\d+))?/?", url)
        if not match:
            raise ConfigurationError(f"not a Chroma server URL: {url!r}")
        scheme, host, port = match.groups()
        try:
            client = chromadb.HttpClient(
                host=host,
                port=int(port or 8000),
                ssl=scheme == "https",
                settings=Settings(anonymized_telemetry=False),
            )
        except Exception as exc:
            raise VectorStoreError(f"the Chroma server at {url} is not reachable: {exc}") from exc
        return cls(client=client)

    def __repr__(self) -> str:
        return f"ChromaVectorStore(path={self.path!r})"

    def collection(self, name: str, dimension: int) -> Any:
        """Get or create a cosine collection; a collection of another dimension is an error."""
        key = f"{name}/{dimension}"
        cached = self._collections.get(key)
        if cached is not None:
            return cached
        with self._lock:
            try:
                col = self.client.get_or_create_collection(
                    self._namespace + _check_name(name),
                    metadata={"hnsw:space": "cosine", "dimension": dimension},
                    embedding_function=None,
                )
            except ConfigurationError:
                raise
            except Exception as exc:
                raise VectorStoreError(f"Chroma is unavailable: {exc}") from exc
            stored = (col.metadata or {}).get("dimension")
            if stored is not None and int(stored) != dimension:
                msg = (
                    f"vector collection {name!r} holds {stored}-dimensional vectors but the "
                    f"embedder makes {dimension}: use another index_name, or the same embedder"
                )
                raise VectorStoreError(msg)
            self._collections[key] = col
            return col

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            if "dimension" in str(exc):
                raise VectorStoreError(f"{what}: {exc}") from exc
            raise VectorStoreError(f"Chroma is unavailable ({what}): {exc}") from exc

    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vectors by piece (the first under the message id)."""
        if not records:
            return
        col = self.collection(index_name, len(records[0].vector))
        self._call(
            "upsert",
            col.upsert,
            ids=[r.vector_id for r in records],
            embeddings=[list(map(float, r.vector)) for r in records],
            metadatas=[
                {
                    "message_id": r.message_id,
                    "thread_id": r.thread_id,
                    "resource_id": r.resource_id,
                    "role": r.role,
                    "created_at": r.created_at,
                }
                for r in records
            ],
        )

    def query(
        self,
        index_name: str,
        vector: Sequence[float],
        *,
        top_k: int,
        resource_id: str,
        thread_id: str | None = None,
    ) -> list[VectorHit]:
        """The `top_k` nearest pieces of `resource_id`'s messages (and `thread_id`'s when
        given), one hit per piece."""
        col = self.collection(index_name, len(vector))
        where: dict[str, Any] = {"resource_id": resource_id}
        if thread_id is not None:
            where = {"$and": [{"resource_id": resource_id}, {"thread_id": thread_id}]}
        result = self._call(
            "query",
            col.query,
            query_embeddings=[list(map(float, vector))],
            n_results=top_k,
            where=where,
            include=["distances", "metadatas"],
        )
        hits = []
        for meta, distance in zip(result["metadatas"][0], result["distances"][0], strict=True):
            hits.append(
                VectorHit(
                    meta["message_id"], meta["thread_id"], meta["resource_id"], 1.0 - distance
                )
            )
        return hits

    def delete(
        self, index_name: str, *, ids: Sequence[str] = (), thread_id: str | None = None
    ) -> None:
        """Delete every piece of these messages, or every vector of a thread (no collection:
        nothing)."""
        try:
            col = self.client.get_collection(self._namespace + _check_name(index_name))
        except ConfigurationError:
            raise
        except Exception as exc:
            if "does not exist" in str(exc) or "not found" in str(exc).lower():
                return
            raise VectorStoreError(f"Chroma is unavailable (delete): {exc}") from exc
        ids = list(ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            self._call("delete", col.delete, where={"message_id": {"$in": chunk}})
        if thread_id is not None:
            self._call("delete", col.delete, where={"thread_id": thread_id})

    def count(self, index_name: str, dimension: int) -> int:
        """How many vectors the collection holds."""
        return int(self._call("count", self.collection(index_name, dimension).count))

    async def aupsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Async `upsert`."""
        await run_in_executor(None, self.upsert, index_name, records)

    async def aquery(
        self, index_name: str, vector: Sequence[float], **kwargs: Any
    ) -> list[VectorHit]:
        """Async `query`."""
        return await run_in_executor(None, lambda: self.query(index_name, vector, **kwargs))

    async def adelete(self, index_name: str, **kwargs: Any) -> None:
        """Async `delete`."""
        await run_in_executor(None, lambda: self.delete(index_name, **kwargs))
