"""Exact nearest-neighbour search over small vector partitions, held in memory.

An HNSW query in Chroma costs ~5 ms even on a partition of 10k vectors; a float32 scan of the
same partition costs ~0.5 ms and is exact. `ExactPartitions` keeps the vectors of partitions
that are small (``limit`` pieces, but at least `EXACT_MIN`: below that HNSW is fast already)
and hot (searched ``hot_after`` times in this process) in
float32 matrices, bounded in bytes (least recently searched dropped first). A partition is
loaded in a background thread, so a search never waits for it: until it is ready, the caller
searches HNSW as before. Partitions are keyed by their collection's id, so a collection
dropped and made again never meets the vectors of the old one. Writes made through the
owning store are applied to loaded partitions, and replayed onto a partition whose load they
raced.

Only for stores this process writes alone (an embedded Chroma): another process's writes to a
server would not reach the matrices.

Examples:
    >>> exact = ExactPartitions(load=lambda key: None, hot_after=1)
    >>> exact.upsert("p", ["a", "b"], [[1.0, 0.0], [0.0, 1.0]], ["a", "b"], ["t1", "t2"])
    >>> exact.search("p", [1.0, 0.2], top_k=1) is None  # not loaded: search HNSW instead
    True
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

logger = logging.getLogger(__name__)

EXACT_LIMIT = 20_000  # pieces: a bigger partition is searched through HNSW (faster there)
EXACT_MIN = 2_000  # pieces: HNSW is already fast on a smaller one, not worth a load
EXACT_BYTES = 256 << 20  # float32 vectors held for every partition together
HOT_AFTER = 2  # searches of a partition in this process before it is loaded


@dataclass(frozen=True)
class Loaded:
    """A partition's vectors as read from the store: ids, vectors, message and thread ids."""

    ids: list[str]
    vectors: Sequence[Sequence[float]]
    message_ids: list[str]
    thread_ids: list[str]


@dataclass
class _Matrix:
    """One partition's unit-length vectors (rows ``0..n``), growing by doubling."""

    vectors: np.ndarray
    ids: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    thread_ids: list[str] = field(default_factory=list)
    row: dict[str, int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes)

    def put(self, vector_id: str, vector: np.ndarray, message_id: str, thread_id: str) -> None:
        if (at := self.row.get(vector_id)) is not None:
            self.vectors[at] = vector
            self.message_ids[at], self.thread_ids[at] = message_id, thread_id
            return
        if self.n == len(self.vectors):
            grown = np.zeros((max(16, 2 * self.n), self.vectors.shape[1]), dtype=np.float32)
            grown[: self.n] = self.vectors[: self.n]
            self.vectors = grown
        self.vectors[self.n] = vector
        self.row[vector_id] = self.n
        self.ids.append(vector_id)
        self.message_ids.append(message_id)
        self.thread_ids.append(thread_id)

    def remove(self, keep: Callable[[int], bool]) -> None:
        rows = [i for i in range(self.n) if keep(i)]
        if len(rows) == self.n:
            return
        self.vectors = np.ascontiguousarray(self.vectors[rows])
        self.ids = [self.ids[i] for i in rows]
        self.message_ids = [self.message_ids[i] for i in rows]
        self.thread_ids = [self.thread_ids[i] for i in rows]
        self.row = {vector_id: i for i, vector_id in enumerate(self.ids)}


def _unit(vectors: Sequence[Sequence[float]] | Sequence[float] | np.ndarray) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class ExactPartitions:
    """Hot, small partitions searched exactly in memory (see the module docstring).

    `load(key)` reads a partition from the store (None if it is missing, or not worth holding:
    under `EXACT_MIN` or over `limit` pieces).
    """

    def __init__(
        self,
        load: Callable[[str], Loaded | None],
        *,
        limit: int = EXACT_LIMIT,
        minimum: int = EXACT_MIN,
        max_bytes: int = EXACT_BYTES,
        hot_after: int = HOT_AFTER,
    ) -> None:
        self._load = load
        self.limit, self.minimum, self.max_bytes, self.hot_after = (
            limit,
            minimum,
            max_bytes,
            hot_after,
        )
        self._loaded: OrderedDict[str, _Matrix] = OrderedDict()  # least recently searched first
        self._searches: dict[str, int] = {}
        self._loading: dict[str, list[Callable[[], None]]] = {}  # writes to replay after
        self._declined: set[str] = set()  # too small or too big: asked again after a write
        self._lock = threading.Lock()

    def search(
        self,
        key: str,
        vector: Sequence[float],
        *,
        top_k: int,
        threads: frozenset[str] | None = None,
    ) -> list[tuple[str, float]] | None:
        """The `top_k` nearest pieces as (vector id, cosine similarity), best first; None
        when the partition is not in memory (search the store; a hot one starts loading)."""
        with self._lock:
            matrix = self._loaded.get(key)
            if matrix is None:
                self._maybe_load(key)
                return None
            self._loaded.move_to_end(key)
            scores = self._scores(matrix, vector, threads)
            ids = matrix.ids
        if len(scores) == 0:
            return []
        k = min(top_k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        best = best[np.argsort(-scores[best], kind="stable")]
        best = best[scores[best] > -np.inf]  # other threads' rows, when threads are asked
        return list(zip(map(ids.__getitem__, best.tolist()), scores[best].tolist(), strict=True))

    def rows(self, key: str, vector_ids: Sequence[str]) -> list[tuple[str, list[float]]] | None:
        """``(vector id, vector)`` of those of `vector_ids` the partition holds; None when it
        is not in memory (read the store)."""
        with self._lock:
            matrix = self._loaded.get(key)
            if matrix is None:
                return None
            found = [(i, matrix.row[i]) for i in vector_ids if i in matrix.row]
            return [(i, matrix.vectors[row].tolist()) for i, row in found]

    @staticmethod
    def _scores(
        matrix: _Matrix, vector: Sequence[float], threads: frozenset[str] | None
    ) -> np.ndarray:
        # numpy's own loop, not BLAS: one core, no BLAS threads spinning against the
        # keyword search running beside it (0.7 ms for 10k x 384 either way)
        scores = np.einsum("ij,j->i", matrix.vectors[: matrix.n], _unit(vector)[0])
        if threads is not None:
            other = np.fromiter((t not in threads for t in matrix.thread_ids), bool, matrix.n)
            scores[other] = -np.inf
        return scores

    def upsert(
        self,
        key: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        message_ids: Sequence[str],
        thread_ids: Sequence[str],
    ) -> None:
        """Apply a write made to the store (a loaded partition over `limit` is dropped)."""
        self._apply(key, lambda: self._upsert(key, ids, vectors, message_ids, thread_ids))

    def _apply(self, key: str, write: Callable[[], None]) -> None:
        """Apply a write now, and again after a load of `key` that it raced."""
        with self._lock:
            if key in self._loading:
                self._loading[key].append(write)
            write()

    def _upsert(
        self,
        key: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        message_ids: Sequence[str],
        thread_ids: Sequence[str],
    ) -> None:
        self._declined.discard(key)  # it grew: worth asking again
        matrix = self._loaded.get(key)
        if matrix is not None:
            if matrix.n == 0:  # an empty partition learns its dimension from its first write
                matrix.vectors = np.zeros((0, len(vectors[0])), dtype=np.float32)
            for row in zip(ids, _unit(vectors), message_ids, thread_ids, strict=True):
                matrix.put(*row)
            if matrix.n > self.limit:
                del self._loaded[key]
            self._evict()

    def delete(
        self, key: str, *, message_ids: Sequence[str] = (), thread_id: str | None = None
    ) -> None:
        """Apply a deletion made in the store: every piece of these messages, or a thread's."""
        gone = set(message_ids)
        self._apply(key, lambda: self._delete(key, gone, thread_id))

    def _delete(self, key: str, gone: set[str], thread_id: str | None) -> None:
        self._declined.discard(key)
        matrix = self._loaded.get(key)
        if matrix is not None:
            matrix.remove(
                lambda i: matrix.message_ids[i] not in gone and matrix.thread_ids[i] != thread_id
            )

    def load(self, key: str) -> bool:
        """Load `key` now, in this thread (an app warming its users' partitions at start);
        True if it is in memory afterwards (False when missing, over `limit`, or loading)."""
        with self._lock:
            if key in self._loaded:
                return True
            if key in self._loading:
                return False
            self._loading[key] = []
        self._load_in_background(key)
        with self._lock:
            return key in self._loaded

    def _maybe_load(self, key: str) -> None:
        searched = self._searches[key] = self._searches.get(key, 0) + 1
        if searched < self.hot_after or key in self._declined or self._loading:
            return  # one load at a time: it competes with the searches for the CPU
        self._loading[key] = []
        threading.Thread(target=self._load_in_background, args=(key,), daemon=True).start()

    def _load_in_background(self, key: str) -> None:
        try:
            loaded = self._load(key)
        except Exception as exc:  # the store answers searches meanwhile; try again later
            logger.debug("loading partition %s for exact search failed: %s", key, exc)
            loaded = None
        with self._lock:
            replay = self._loading.pop(key)
            if loaded is None:  # too small, too big or gone: HNSW serves it
                self._declined.add(key)
                return
            dimension = len(loaded.vectors[0]) if loaded.ids else 1
            matrix = _Matrix(np.zeros((0, dimension), dtype=np.float32))
            if loaded.ids:
                matrix.vectors = _unit(loaded.vectors)
                matrix.ids = list(loaded.ids)
                matrix.message_ids = list(loaded.message_ids)
                matrix.thread_ids = list(loaded.thread_ids)
                matrix.row = {vector_id: i for i, vector_id in enumerate(matrix.ids)}
            self._loaded[key] = matrix
            for write in replay:  # what was written while loading (idempotent, in order)
                write()
            self._evict()

    def _evict(self) -> None:
        while self._loaded and sum(m.nbytes for m in self._loaded.values()) > self.max_bytes:
            self._loaded.popitem(last=False)
