"""`LangChainVectorStore`: recall's vectors in any LangChain `VectorStore` the user already runs.

Each piece of a message is a `Document` (the piece's text; metadata ``vid``, ``message_id``,
``thread_id``, ``resource_id``, ``role``, ``created_at``) under a UUID derived from the piece id
(``message id`` or ``message id#n``: `piece_uuid`, an id every engine takes). Every search
is scoped to the resource *inside* the engine, by a filter in that engine's own syntax: a
callable ``filter(resource_id, thread_ids or None)`` the user passes, or the one shipped for
the stores whose syntax is known (`KNOWN`: langchain-core's `InMemoryVectorStore`,
langchain-chroma's `Chroma`, langchain-qdrant's `QdrantVectorStore`,
langchain-milvus's `Milvus`). A store of another kind without a filter is refused
(`ConfigurationError`): an unscoped search could return another resource's vectors. A hit whose
metadata is not the resource's (a filter that does not hold) is dropped and counted in a warning;
recall then checks each hit against storage, by resource, as for every store.

The store holds vectors of its own `embeddings`: memory's recall uses the same object for queries
(`Memory(vector=LangChainVectorStore(store))` takes it; another embedder is refused), so queries
and pieces share one space. Scores become cosine similarity where the engine's metric is known.
Deleting a thread deletes its pieces by id (storage knows the thread's messages; a message has
at most `MAX_PIECES` pieces); the store has one index (the first index name it serves).

Examples:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> store = LangChainVectorStore(InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
    >>> record = VectorRecord("m1", [], "t1", "alice", "user", 0.0, text="I live in Lisbon")
    >>> store.upsert("demo", [record])
    >>> query = store.embeddings.embed_query("I live in Lisbon")
    >>> [h.message_id for h in store.query("demo", query, top_k=3, resource_id="alice")]
    ['m1']
    >>> store.query("demo", query, top_k=3, resource_id="bob")
    []
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigurationError, VectorStoreError
from ...messages import MAX_PIECES
from ...storage.records import TimeWindow
from ..vector import AsyncTwins, VectorHit, VectorRecord, check_name, only_threads, piece_uuid

logger = logging.getLogger(__name__)

Scope = Callable[..., Any]  # (resource, threads[, window]) -> the engine's filter
UNWINDOWED_DEPTH = 8  # a scope that cannot filter by time: this many times deeper, then kept


@dataclass(frozen=True)
class Dialect:
    """How to search one kind of LangChain store: its filter, its scored search by vector
    (and the keyword its filter goes under), and its score as cosine similarity."""

    scope: Scope
    search: str = "similarity_search_with_score_by_vector"
    keyword: str = "filter"
    similarity: Callable[[Any, float], float] | None = None  # None: a cosine similarity
    windowed: bool = True  # the scope takes a `TimeWindow` third (a user's scope: not)

    def filter(
        self, resource_id: str, threads: frozenset[str] | None, window: TimeWindow | None
    ) -> Any:
        """The engine's filter for this search (the window in it when the scope takes one)."""
        if window is not None and self.windowed:
            return self.scope(resource_id, threads, window)
        return self.scope(resource_id, threads)


def _in_memory(
    resource_id: str, threads: frozenset[str] | None, window: TimeWindow | None = None
) -> Any:
    def keep(doc: Any) -> bool:
        meta = doc.metadata
        return (
            meta.get("resource_id") == resource_id
            and (threads is None or meta.get("thread_id") in threads)
            and (window is None or window.keeps(float(meta.get("created_at", 0.0))))
        )

    return keep


def _chroma(
    resource_id: str, threads: frozenset[str] | None, window: TimeWindow | None = None
) -> Any:
    conditions: list[dict[str, Any]] = [{"resource_id": {"$eq": resource_id}}]
    if threads is not None:
        conditions.append({"thread_id": {"$in": sorted(threads)}})
    if window is not None and window.start is not None:
        conditions.append({"created_at": {"$gte": window.start}})
    if window is not None and window.end is not None:
        conditions.append({"created_at": {"$lt": window.end}})
    return conditions[0] if len(conditions) == 1 else {"$and": conditions}


def _chroma_similarity(store: Any, distance: float) -> float:
    """Chroma reports a distance in its collection's space (squared L2 by default)."""
    collection = getattr(store, "_collection", None)
    space = ((collection.metadata if collection is not None else None) or {}).get(
        "hnsw:space", "l2"
    )
    return 1.0 - distance / 2.0 if space == "l2" else 1.0 - distance


def _qdrant(
    resource_id: str, threads: frozenset[str] | None, window: TimeWindow | None = None
) -> Any:
    from qdrant_client import models

    must: list[Any] = [
        models.FieldCondition(
            key="metadata.resource_id", match=models.MatchValue(value=resource_id)
        )
    ]
    if threads is not None:
        must.append(
            models.FieldCondition(
                key="metadata.thread_id", match=models.MatchAny(any=sorted(threads))
            )
        )
    if window is not None:
        span = models.Range(gte=window.start, lt=window.end)
        must.append(models.FieldCondition(key="metadata.created_at", range=span))
    return models.Filter(must=must)


def _milvus(
    resource_id: str, threads: frozenset[str] | None, window: TimeWindow | None = None
) -> str:
    import json

    expr = f"resource_id == {json.dumps(resource_id)}"
    if threads is not None:
        expr += f" and thread_id in {json.dumps(sorted(threads))}"
    if window is not None and window.start is not None:
        expr += f" and created_at >= {window.start!r}"
    if window is not None and window.end is not None:
        expr += f" and created_at < {window.end!r}"
    return expr


def _milvus_similarity(store: Any, score: float) -> float:
    metric = str((getattr(store, "index_params", None) or {}).get("metric_type", "L2")).upper()
    if metric == "L2":  # squared L2 of unit vectors
        return 1.0 - score / 2.0
    return score  # COSINE and IP: a similarity already


KNOWN: dict[str, Dialect] = {
    "langchain_core.vectorstores.in_memory.InMemoryVectorStore": Dialect(_in_memory),
    "langchain_chroma.vectorstores.Chroma": Dialect(
        _chroma, "similarity_search_by_vector_with_relevance_scores", "filter", _chroma_similarity
    ),
    "langchain_qdrant.qdrant.QdrantVectorStore": Dialect(_qdrant),
    "langchain_milvus.vectorstores.milvus.Milvus": Dialect(
        _milvus, keyword="expr", similarity=_milvus_similarity
    ),
}


def dialect_of(store: Any, scope: Scope | None) -> Dialect:
    """The store's dialect: the known one for its class (or a base class), with `scope` in
    place of its filter when given; an unknown store needs `scope`."""
    for klass in type(store).__mro__:
        known = KNOWN.get(f"{klass.__module__}.{klass.__qualname__}")
        if known is not None:
            if scope is None:
                return known
            return Dialect(scope, known.search, known.keyword, known.similarity, windowed=False)
    if scope is None:
        msg = (
            f"LangChainVectorStore does not know how {type(store).__name__} filters, and an "
            "unscoped search could return another resource's vectors: pass "
            "filter=lambda resource_id, thread_ids: <this engine's filter keeping only that "
            "resource's documents (metadata 'resource_id'), and those threads (metadata "
            "'thread_id') when thread_ids is not None>"
        )
        raise ConfigurationError(msg)
    return Dialect(scope, windowed=False)


class LangChainVectorStore(AsyncTwins):
    """Recall's vectors in a LangChain `VectorStore` (see the module doc).

    `filter`: ``(resource_id, thread_ids or None) -> the engine's filter``; required for a
    store whose filter syntax is not known (`KNOWN`). Every method has an ``a``-prefixed async
    twin (run in a worker thread).
    """

    deletes_by_id = True  # a thread's pieces are deleted by its messages' ids

    def __init__(self, store: Any, *, filter: Scope | None = None) -> None:
        from langchain_core.vectorstores import VectorStore

        if not isinstance(store, VectorStore):
            msg = f"LangChainVectorStore wraps a langchain_core VectorStore, not {store!r}"
            raise ConfigurationError(msg)
        self.store = store
        self.dialect = dialect_of(store, filter)
        self.embeddings = store.embeddings
        if self.embeddings is None:
            msg = f"{type(store).__name__} has no embeddings: recall embeds queries with them"
            raise ConfigurationError(msg)
        self._index: str | None = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"LangChainVectorStore({type(self.store).__name__})"

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            with self._lock:
                return func(*args, **kwargs)
        except (VectorStoreError, ConfigurationError):
            raise
        except Exception as exc:
            raise VectorStoreError(f"{type(self.store).__name__} ({what}): {exc}") from exc

    def _check_index(self, index_name: str) -> None:
        """One store holds one embedding space: the first index it serves."""
        check_name(index_name)
        if self._index is None:
            self._index = index_name
        elif index_name != self._index:
            msg = (
                f"this LangChainVectorStore holds index {self._index!r}; index {index_name!r} "
                "(another embedding model) needs a store of its own"
            )
            raise ConfigurationError(msg)

    # -- the vector-store interface --------------------------------------------------------------
    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) pieces as documents with the message's metadata: with their
        vectors where the store takes them (``add_embeddings``: Milvus, PGVector), else the
        store embeds their text with its embeddings (the same model: the same vectors)."""
        from langchain_core.documents import Document

        self._check_index(index_name)
        if not records:
            return
        ids = [piece_uuid(r.vector_id) for r in records]
        docs = [
            Document(page_content=r.text, id=i, metadata=r.metadata())
            for i, r in zip(ids, records, strict=True)
        ]
        self._call("delete", self.store.delete, ids=ids)  # an update replaces, in every engine
        add_embeddings = getattr(self.store, "add_embeddings", None)
        if callable(add_embeddings):  # the vectors as they are
            self._call(
                "add",
                add_embeddings,
                texts=[d.page_content for d in docs],
                embeddings=[[float(x) for x in r.vector] for r in records],
                metadatas=[d.metadata for d in docs],
                ids=ids,
            )
        else:  # the store embeds the pieces itself, with the same embeddings object
            self._call("add", self.store.add_documents, docs, ids=ids)

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
        """The `top_k` nearest pieces of `resource_id`'s messages (and those threads', created
        in `window`), filtered inside the engine (a scope given by the user filters by owner
        and threads only: the window is then kept from a search `UNWINDOWED_DEPTH` times
        deeper); hits the filter let through from elsewhere are dropped."""
        self._check_index(index_name)
        threads = only_threads(thread_id, thread_ids)
        if top_k <= 0 or (threads is not None and not threads):
            return []
        search = getattr(self.store, self.dialect.search)
        scope = {self.dialect.keyword: self.dialect.filter(resource_id, threads, window)}
        deeper = window is not None and not self.dialect.windowed
        k = top_k * UNWINDOWED_DEPTH if deeper else top_k
        found = self._call("search", search, [float(x) for x in vector], k=k, **scope)
        hits, foreign = [], 0
        for doc, score in found:
            meta = doc.metadata or {}
            if window is not None and not window.keeps(float(meta.get("created_at", 0.0))):
                continue  # outside the window (a user's scope does not filter by time)
            if meta.get("resource_id") != resource_id or (
                threads is not None and meta.get("thread_id") not in threads
            ):
                foreign += 1
                continue
            convert = self.dialect.similarity
            similarity = float(score) if convert is None else convert(self.store, float(score))
            hits.append(VectorHit(str(meta["message_id"]), resource_id, similarity))
        if foreign:
            logger.warning(
                "LangChainVectorStore: %d hit(s) outside resource %r (or its threads) dropped: "
                "the store's filter does not hold",
                foreign,
                resource_id,
            )
        return hits[:top_k]

    def delete(
        self,
        index_name: str,
        *,
        ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Delete every piece of these messages (by piece id). A thread's pieces are deleted
        by its messages' ids, which the caller passes (`RecallIndex` reads them first)."""
        check_name(index_name)
        pieces = [
            piece_uuid(f"{m}#{n}" if n else m)
            for m in dict.fromkeys(ids)
            for n in range(MAX_PIECES)
        ]
        for start in range(0, len(pieces), 1000):
            self._call("delete", self.store.delete, ids=pieces[start : start + 1000])

    def present(self, index_name: str, resource_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these messages have their (first) piece in the store, as `resource_id`'s."""
        check_name(index_name)
        if not message_ids:
            return set()
        docs = self._call("get", self.store.get_by_ids, [piece_uuid(m) for m in message_ids])
        return {
            str(d.metadata["message_id"])
            for d in docs
            if (d.metadata or {}).get("resource_id") == resource_id
            and "#" not in str(d.metadata.get("vid", ""))
        }

    def count(self, index_name: str, dimension: int, resource_id: str | None = None) -> int:
        """Not knowable through LangChain's interface: refused with a clear error."""
        msg = "a LangChain VectorStore cannot count its documents: ask the engine itself"
        raise VectorStoreError(msg)

    def warm(self, index_name: str, resource_id: str) -> bool:
        """Nothing to load ahead."""
        check_name(index_name)
        return False
