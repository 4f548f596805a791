"""Exact nearest-neighbour search over vector partitions held in memory.

An HNSW query in Chroma costs ~5 ms even on a partition of 10k vectors; a float32 scan of the
same partition costs ~0.5 ms and is exact. On a small one (300 pieces) a query costs 0.9 ms
alone but 7-8 ms right after a write to it (`bench/checkpointer_bench.py --agent`, 2026-11-26),
and with semantic recall every turn's search follows the write of its question; a scan costs
0.04 ms. On a big partition the scan is slower than the graph (~15 ms for 300k pieces of 384
dimensions, one core) but still exact, where Chroma's graph over 300k near-equal chat pieces
found only 0.895-0.985 of the true top-10 even with a wide beam (`bench/pg_recall_bench.py`,
2026-11-25). So `ExactPartitions` keeps the vectors of partitions of at least `EXACT_MIN`
pieces and at most ``limit`` that are hot (searched ``hot_after`` times in this process) in
float32 matrices, bounded in bytes (least recently searched dropped first). A partition is
loaded in a background thread, so a search never waits for it: until it is ready, the caller
searches HNSW as before. Partitions are keyed by their collection's id, so a collection
dropped and made again never meets the vectors of the old one. Writes made through the owning
store are applied to loaded partitions, and replayed onto a partition whose load they raced (a
load read in pages that a deletion raced is dropped: the deletion may have shifted a page; it
is loaded again after a later write).

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
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from ..shutdown import on_exit

logger = logging.getLogger(__name__)

EXACT_LIMIT = 400_000  # pieces: a bigger partition is searched through HNSW (a scan: ~20 ms)
EXACT_MIN = 1  # pieces: any hot partition (a small one loads in a few ms, in the background)
EXACT_BYTES = 640 << 20  # float32 vectors held for every partition together (400k x 384 fit)
HOT_AFTER = 2  # searches of a partition in this process before it is loaded


@dataclass(frozen=True)
class Loaded:
    """A partition's vectors as read from the store: ids, vectors, message and thread ids;
    `paged` when read in several calls (a deletion racing it may have shifted a page)."""

    ids: list[str]
    vectors: Sequence[Sequence[float]] | np.ndarray
    message_ids: list[str]
    thread_ids: list[str]
    paged: bool = False


@dataclass
class _Matrix:
    """One partition's unit-length vectors (rows ``0..n``), growing by half again, and each
    row's thread as a small integer (a thread filter is one vector comparison)."""

    vectors: np.ndarray
    ids: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    thread_ids: list[str] = field(default_factory=list)
    row: dict[str, int] = field(default_factory=dict)
    threads: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    thread_code: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, vectors: np.ndarray, loaded: Loaded) -> _Matrix:
        matrix = cls(vectors, list(loaded.ids), list(loaded.message_ids), list(loaded.thread_ids))
        matrix.row = {vector_id: i for i, vector_id in enumerate(matrix.ids)}
        matrix.threads = matrix._codes(matrix.thread_ids)
        return matrix

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes)

    def _codes(self, thread_ids: Sequence[str]) -> np.ndarray:
        code = self.thread_code
        return np.fromiter(
            (code.setdefault(t, len(code)) for t in thread_ids), np.int32, len(thread_ids)
        )

    def put(self, vector_id: str, vector: np.ndarray, message_id: str, thread_id: str) -> None:
        thread = self.thread_code.setdefault(thread_id, len(self.thread_code))
        if (at := self.row.get(vector_id)) is not None:
            self.vectors[at], self.threads[at] = vector, thread
            self.message_ids[at], self.thread_ids[at] = message_id, thread_id
            return
        if self.n == len(self.vectors):  # (the thread codes have the same capacity)
            size = max(16, self.n + self.n // 2)
            grown = np.zeros((size, self.vectors.shape[1]), dtype=np.float32)
            grown[: self.n] = self.vectors[: self.n]
            codes = np.zeros(size, dtype=np.int32)
            codes[: self.n] = self.threads[: self.n]
            self.vectors, self.threads = grown, codes
        self.vectors[self.n], self.threads[self.n] = vector, thread
        self.row[vector_id] = self.n
        self.ids.append(vector_id)
        self.message_ids.append(message_id)
        self.thread_ids.append(thread_id)

    def remove(self, gone: set[str], thread_id: str | None) -> None:
        """Drop the rows of these messages and of that thread (new arrays and lists: a search
        reading the old ones meanwhile stays consistent)."""
        drop = np.zeros(self.n, dtype=bool)
        if thread_id is not None and thread_id in self.thread_code:
            drop |= self.threads[: self.n] == self.thread_code[thread_id]
        if gone:
            drop |= np.fromiter((m in gone for m in self.message_ids), bool, self.n)
        if not drop.any():
            return
        rows = np.flatnonzero(~drop)
        self.vectors = np.ascontiguousarray(self.vectors[rows])
        self.threads = np.ascontiguousarray(self.threads[rows])
        kept = rows.tolist()
        self.ids = [self.ids[i] for i in kept]
        self.message_ids = [self.message_ids[i] for i in kept]
        self.thread_ids = [self.thread_ids[i] for i in kept]
        self.row = {vector_id: i for i, vector_id in enumerate(self.ids)}


def _unit(
    vectors: Sequence[Sequence[float]] | Sequence[float] | np.ndarray, *, own: bool = False
) -> np.ndarray:
    """The rows at unit length, as a float32 matrix (a zero row stays zero). `own`: `vectors`
    was made for this module (a loaded partition's), so a float32 matrix is normalised in
    place instead of copied (300k pieces: 460 MB)."""
    if own:
        matrix = np.asarray(vectors, dtype=np.float32)
    else:
        matrix = np.array(vectors, dtype=np.float32, ndmin=2)
    for start in range(0, len(matrix), 8192):  # in blocks: the norms stay small
        block = matrix[start : start + 8192]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        np.divide(block, np.where(norms == 0, 1.0, norms), out=block)
    return matrix


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
        self._raced_by_delete: set[str] = set()  # loading while a deletion was applied
        self._lock = threading.Lock()
        self.stopping = threading.Event()  # set at exit: a load stops at its next page
        self._loaders: set[threading.Thread] = set()
        on_exit(partial(_close, weakref.ref(self)))

    def close(self, timeout: float = 10.0) -> None:
        """Stop loading (a load in progress ends at its next page) and wait for the loaders,
        bounded: no thread of ours is inside the engine when the interpreter finalises."""
        self.stopping.set()
        with self._lock:
            loaders = list(self._loaders)
        for loader in loaders:
            loader.join(timeout)

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
            # what the scan reads, taken under the lock: writes append past `n` or replace
            # these arrays and lists, so the scan runs outside it (a big one takes ~15 ms)
            n, ids, rows, codes = matrix.n, matrix.ids, matrix.vectors, matrix.threads
            wanted = None if threads is None else [matrix.thread_code.get(t, -1) for t in threads]
        if n == 0:
            return []
        scores = self._scores(rows[:n], codes[:n], vector, wanted)
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
        rows: np.ndarray, codes: np.ndarray, vector: Sequence[float], threads: list[int] | None
    ) -> np.ndarray:
        # numpy's own loop, not BLAS: one core, no BLAS threads spinning against the
        # keyword search running beside it (0.7 ms for 10k x 384 either way)
        scores = np.einsum("ij,j->i", rows, _unit(vector)[0])
        if threads is not None:
            scores[~np.isin(codes, threads)] = -np.inf
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
        with self._lock:
            if key in self._loading:
                self._raced_by_delete.add(key)
        self._apply(key, lambda: self._delete(key, gone, thread_id))

    def _delete(self, key: str, gone: set[str], thread_id: str | None) -> None:
        self._declined.discard(key)
        matrix = self._loaded.get(key)
        if matrix is not None:
            matrix.remove(gone, thread_id)

    def start_empty(self, key: str, dimension: int) -> None:
        """Hold `key` from its first write: a partition made in this process is searched
        exactly at once, from what its writes put there (no load after an import)."""
        if self.minimum > 1:  # smaller ones were asked to stay in the graph
            return
        with self._lock:
            if key not in self._loaded and key not in self._loading:
                self._loaded[key] = _Matrix(np.zeros((0, dimension), dtype=np.float32))

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
        if self.stopping.is_set():
            return
        self._loading[key] = []
        loader = threading.Thread(
            target=self._load_in_background, args=(key,), name="lmm-exact-load", daemon=True
        )
        self._loaders.add(loader)
        loader.start()

    def _load_in_background(self, key: str) -> None:
        try:
            self._load_now(key)
        finally:
            with self._lock:
                self._loaders.discard(threading.current_thread())

    def _load_now(self, key: str) -> None:
        try:
            loaded = None if self.stopping.is_set() else self._load(key)
        except Exception as exc:  # the store answers searches meanwhile; try again later
            logger.debug("loading partition %s for exact search failed: %s", key, exc)
            loaded = None
        dimension = len(loaded.vectors[0]) if loaded is not None and loaded.ids else 0
        matrix = None
        if loaded is not None and not self.too_big(len(loaded.ids), dimension):
            # normalised and indexed before taking the lock, which every search of every
            # partition takes (300k pieces: ~0.12 s of work)
            empty = _Matrix(np.zeros((0, 1), dtype=np.float32))
            matrix = _Matrix.of(_unit(loaded.vectors, own=True), loaded) if loaded.ids else empty
        torn = loaded is not None and loaded.paged
        with self._lock:
            replay = self._loading.pop(key)
            raced = key in self._raced_by_delete
            self._raced_by_delete.discard(key)
            if matrix is None or (torn and raced):
                self._declined.add(key)  # too small, too big, gone or torn: HNSW serves it
                return
            self._loaded[key] = matrix
            for write in replay:  # what was written while loading (idempotent, in order)
                write()
            self._evict()

    def too_big(self, pieces: int, dimension: int) -> bool:
        """More pieces than `limit`, or more bytes than every partition may hold together
        (a loader asks before reading; a load is checked again)."""
        return pieces > self.limit or pieces * dimension * 4 > self.max_bytes

    def _evict(self) -> None:
        while self._loaded and sum(m.nbytes for m in self._loaded.values()) > self.max_bytes:
            self._loaded.popitem(last=False)


def _close(ref: weakref.ref[ExactPartitions]) -> None:
    partitions = ref()
    if partitions is not None:
        partitions.close()


# exact partitions per Chroma folder, shared by every store over it in this process
_SHARED: weakref.WeakValueDictionary[tuple[str, int, int], ExactPartitions] = (
    weakref.WeakValueDictionary()
)
_SHARED_LOCK = threading.Lock()


def shared_partitions(
    folder: str | Path | None, load: Callable[[str], Loaded | None], limit: int, minimum: int
) -> ExactPartitions:
    """The exact partitions of a store over `folder`: the process's one set for that folder,
    whichever store over it came first (every `Memory` over one file then loads a partition
    once, and every store's writes reach the matrices all of them search); a store with no
    folder (in memory) has its own."""
    make = partial(ExactPartitions, load, limit=limit, minimum=min(minimum, limit))
    if folder is None:
        return make()
    key = (str(Path(folder).resolve()), limit, minimum)
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = make()
        return shared
