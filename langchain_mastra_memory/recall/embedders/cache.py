"""The process-wide embedding cache, and the zero-configuration embedder built on it.

`CachedEmbeddings` wraps any LangChain `Embeddings` with an LRU cache keyed by
(model, sha256 of the text), shared by every instance in the process, so the same text is never
embedded twice; `default_embedder()` is the offline default model (`minilm`) behind it.

Examples:
    >>> embedder = default_embedder()
    >>> vector = embedder.embed_query("Where do I live?")
    >>> len(vector), round(sum(x * x for x in vector), 4)
    (384, 1.0)
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

from ...pools import Signal, in_embedding_pool
from .minilm import MiniLMEmbeddings


class VectorCache:
    """A thread-safe LRU of vectors keyed by (model, text digest), shared process-wide.

    Vectors are kept as float32 arrays and the cache is bounded in bytes (a 384-dimensional
    vector costs 1.5 KiB: 64 MiB hold about 43,000), so it cannot grow with the history.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.data: OrderedDict[tuple[str, bytes], np.ndarray] = OrderedDict()
        self.lock = threading.Lock()
        self.hits = self.misses = 0
        self._computing: dict[tuple[str, bytes], Signal] = {}  # keys being embedded

    def claim(
        self, keys: Sequence[tuple[str, bytes]]
    ) -> tuple[list[tuple[str, bytes]], list[Signal]]:
        """Of `keys` not cached: those the caller is to embed (marked as being embedded until
        it `release`s them), and an event for each one another caller is embedding now."""
        mine: list[tuple[str, bytes]] = []
        theirs: list[Signal] = []
        with self.lock:
            for key in dict.fromkeys(keys):
                if key in self.data:
                    continue
                if (event := self._computing.get(key)) is not None:
                    theirs.append(event)
                else:
                    self._computing[key] = Signal()
                    mine.append(key)
        return mine, theirs

    def release(self, keys: Sequence[tuple[str, bytes]]) -> None:
        """The caller is done embedding `keys` (cached, or failed): wake who waits for them."""
        with self.lock:
            events = [self._computing.pop(key, None) for key in keys]
        for event in events:
            if event is not None:
                event.set()

    def get(self, key: tuple[str, bytes]) -> list[float] | None:
        value = self.get_array(key)
        return None if value is None else value.tolist()

    def get_array(self, key: tuple[str, bytes]) -> np.ndarray | None:
        """The cached vector itself (float32; read it, do not change it)."""
        with self.lock:
            value = self.data.get(key)
            if value is None:
                self.misses += 1
                return None
            self.data.move_to_end(key)
            self.hits += 1
        return value

    def put(self, key: tuple[str, bytes], value: Sequence[float] | np.ndarray) -> None:
        self.put_many([(key, value)])

    def put_many(
        self, items: Sequence[tuple[tuple[str, bytes], Sequence[float] | np.ndarray]]
    ) -> None:
        """Cache each (key, vector), under one hold of the lock; each vector is copied (a row
        of a bigger array would keep all of it alive beyond the byte bound)."""
        arrays = [(key, np.array(value, dtype=np.float32)) for key, value in items]
        with self.lock:
            for key, array in arrays:
                old = self.data.pop(key, None)
                self.bytes += array.nbytes - (old.nbytes if old is not None else 0)
                self.data[key] = array
            while self.bytes > self.max_bytes and self.data:
                _, evicted = self.data.popitem(last=False)
                self.bytes -= evicted.nbytes

    def clear(self) -> None:
        """Forget every vector (benchmarks clear it between repetitions)."""
        with self.lock:
            self.data.clear()
            self.bytes = 0


EMBEDDING_CACHE = VectorCache(max_bytes=64 * 1024 * 1024)


def model_id(embedder: Embeddings) -> str:
    """A name for the embedding model (used in cache keys and collection names)."""
    inner = getattr(embedder, "embedder", embedder)
    for attr in ("model_name", "model"):
        value = getattr(inner, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(inner).__name__


IN_FLIGHT_WAIT = 30.0  # seconds a caller waits for another's embedding of the same text


class CachedEmbeddings(Embeddings):
    """Any `Embeddings`, with the process-wide LRU cache in front of it. A text another thread
    is embedding now is waited for (at most `IN_FLIGHT_WAIT` seconds), not embedded twice: a
    turn's query is its question, which the background writer embeds at the same moment.

    Examples:
        >>> cached = CachedEmbeddings(default_embedder())
        >>> cached.embed_query("hello") == cached.embed_documents(["hello"])[0]
        True
    """

    embedder: Embeddings

    def __init__(self, embedder: Embeddings, *, cache: VectorCache = EMBEDDING_CACHE) -> None:
        self.embedder = embedder.embedder if isinstance(embedder, CachedEmbeddings) else embedder
        self.cache = cache
        self.model_name = model_id(self.embedder)
        # a query's vector is a document's only for a model that embeds both alike (e5, BGE,
        # nomic, Cohere and Voyage do not): keyed apart unless the model is known symmetric
        self.query_key = "" if is_symmetric(self.embedder) else "\x00query\x00"

    def _key(self, text: str, query: bool = False) -> tuple[str, bytes]:
        tagged = self.query_key + text if query else text
        return self.model_name, hashlib.sha256(tagged.encode("utf-8")).digest()

    def _split(self, texts: Sequence[str]) -> tuple[list[list[float] | None], list[str]]:
        found = [self.cache.get(self._key(t)) for t in texts]
        missing = list(dict.fromkeys(t for t, f in zip(texts, found, strict=True) if f is None))
        return found, missing

    def _claim(self, texts: Sequence[str], query: bool = False) -> tuple[list[str], list[Signal]]:
        """Of `texts` not cached: those to embed here (claimed), and the events of those
        another caller is embedding."""
        keys = {self._key(t, query): t for t in texts}
        mine, theirs = self.cache.claim(list(keys))
        return [keys[k] for k in mine], theirs

    def _release(self, texts: Sequence[str], query: bool = False) -> None:
        self.cache.release([self._key(t, query) for t in texts])

    def _keep(self, texts: Sequence[str], vectors: list[list[float]]) -> dict[str, list[float]]:
        """Fresh vectors by text, cached."""
        fresh = dict(zip(texts, vectors, strict=True))
        for text, vector in fresh.items():
            self.cache.put(self._key(text), vector)
        return fresh

    def _cached(self, texts: Sequence[str]) -> dict[str, list[float]]:
        """The cached ones of `texts`, by text."""
        found = {t: self.cache.get(self._key(t)) for t in texts}
        return {t: v for t, v in found.items() if v is not None}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        found, missing = self._split(texts)
        mine, theirs = self._claim(missing)
        try:
            fresh = self._keep(mine, self.embedder.embed_documents(mine) if mine else [])
        finally:
            self._release(mine)
        if rest := [t for t in missing if t not in fresh]:  # being embedded by another caller
            # after releasing its own claims (no two callers wait on each other), and what is
            # waited for never waits itself: an awaited embedding runs on `embedding_pool`,
            # where nothing parks (a thread of a shared pool parked here, with that embedding
            # queued behind it, would wait out IN_FLIGHT_WAIT)
            for event in theirs:
                event.wait(IN_FLIGHT_WAIT)
            fresh.update(self._cached(rest))
            lacking = [t for t in rest if t not in fresh]  # what the other failed at: here
            vectors = self.embedder.embed_documents(lacking) if lacking else []
            fresh.update(self._keep(lacking, vectors))
        return [f if f is not None else fresh[t] for t, f in zip(texts, found, strict=True)]

    def embed_query(self, text: str) -> list[float]:
        key = self._key(text, query=True)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        mine, theirs = self._claim([text], query=True)
        if theirs and theirs[0].wait(IN_FLIGHT_WAIT) and (cached := self.cache.get(key)):
            return cached
        try:
            vector = self.embedder.embed_query(text)
            self.cache.put(key, vector)
        finally:
            self._release(mine, query=True)
        return vector

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        found, missing = self._split(texts)
        mine, theirs = self._claim(missing)
        try:
            fresh = self._keep(mine, await _aembed_documents(self.embedder, mine) if mine else [])
        finally:
            self._release(mine)
        if rest := [t for t in missing if t not in fresh]:
            for event in theirs:
                await _wait(event)
            fresh.update(self._cached(rest))
            lacking = [t for t in rest if t not in fresh]
            vectors = await _aembed_documents(self.embedder, lacking) if lacking else []
            fresh.update(self._keep(lacking, vectors))
        return [f if f is not None else fresh[t] for t, f in zip(texts, found, strict=True)]

    async def aembed_query(self, text: str) -> list[float]:
        key = self._key(text, query=True)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        mine, theirs = self._claim([text], query=True)
        if theirs and await _wait(theirs[0]) and (cached := self.cache.get(key)):
            return cached
        try:
            vector = await _aembed_query(self.embedder, text)
            self.cache.put(key, vector)
        finally:
            self._release(mine, query=True)
        return vector


async def _wait(event: Signal) -> bool:
    """Await another caller's embedding (holding no thread)."""
    return await event.until_set(IN_FLIGHT_WAIT)


def _sync_only(embedder: Embeddings, method: str) -> bool:
    """Whether `embedder`'s async `method` is LangChain's default (its sync twin on the event
    loop's default executor, shared with everything else in the process)."""
    return getattr(type(embedder), method, None) is getattr(Embeddings, method)


async def _aembed_query(embedder: Embeddings, text: str) -> list[float]:
    if _sync_only(embedder, "aembed_query"):
        return await in_embedding_pool(embedder.embed_query, text)
    return await embedder.aembed_query(text)


async def _aembed_documents(embedder: Embeddings, texts: list[str]) -> list[list[float]]:
    if _sync_only(embedder, "aembed_documents"):
        return await in_embedding_pool(embedder.embed_documents, texts)
    return await embedder.aembed_documents(texts)


def is_symmetric(embedder: Embeddings) -> bool:
    """Whether `embedder` embeds a query as it embeds the same text as a document: ours, a
    LangChain fake, or one that says so (``symmetric = True``); any other is taken not to."""
    declared = getattr(embedder, "symmetric", None)
    if isinstance(declared, bool):
        return declared
    return isinstance(embedder, MiniLMEmbeddings) or type(embedder).__name__ in SYMMETRIC_FAKES


SYMMETRIC_FAKES = {"FakeEmbeddings", "DeterministicFakeEmbedding"}  # langchain_core's


@lru_cache(maxsize=1)
def _default_minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


def default_embedder() -> CachedEmbeddings:
    """The zero-configuration embedder: cached all-MiniLM-L6-v2, loaded once per process."""
    return CachedEmbeddings(_default_minilm())
