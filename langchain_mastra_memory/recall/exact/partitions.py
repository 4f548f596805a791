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
float32 matrices, bounded in bytes (least recently searched dropped first). A partition of
`INT8_AT` pieces or more also keeps an int8 copy, scanned with SimSIMD for candidates that are
ranked again on their float32 rows (100k x 384: ~2-4 ms instead of 11.5; the same hits). One
whose float32 rows would pass the bound is held in float16 instead (`precision`: 582k x 384
in 640 MiB; candidates ranked on float16 rows move by at most 2^-11, so the hits are the
exact ones up to such ties), narrowed in place when writes grow it there, and a matrix grows
no further than the bound (before, one grown by half again past it was dropped, and a
resource of 337k pieces went to HNSW: 73 ms p95 instead of 7); only past float16 does HNSW
serve it. A
partition is loaded in a background thread, so a search never waits for it: until it is ready,
the caller searches HNSW as before; one with a snapshot on disk (`snapshots`, saved after a
load and at exit) is read from it at its first search, which waits for it, and the partitions
the last process saved are read back in the background as soon as the store opens (`resume`),
so a restart's first searches find them held or nearly so. Partitions are
keyed by their collection's id, so a collection dropped and made again never meets the
vectors of the old one. Writes made through the owning
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

One set of exact partitions per Chroma folder in a process (`shared_partitions`), shared by
every store over it: every `Memory` over one file then loads a partition once, and every store's
writes reach the matrices all of them search and the snapshots saved from them (two sets over
one folder would each miss the other's writes). A store with no folder (in memory) has its own."""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ...messages import PIECE_SUFFIXES
from ...pools import on_exit
from .matrix import (
    INT8,
    INT8_AT,
    INT8_POOL,
    INT8_POOL_PER_HIT,
    PRECISIONS,
    Loaded,
    Matrix,
    best,
    dot,
    int8_scores,
    small,
    unit,
)
from .snapshots import FOLDER, Snapshots

logger = logging.getLogger(__name__)

EXACT_LIMIT = 1_000_000  # pieces: a bigger partition is searched through HNSW

EXACT_MIN = 1  # pieces: any hot partition (a small one loads in a few ms, in the background)

EXACT_BYTES = 640 << 20  # rows held for every partition together: 349k x 384 in float32

# with their int8 copy, 582k in float16 with it
HOT_AFTER = 2  # searches of a partition in this process before it is loaded

SNAPSHOT_WAIT = 5.0  # seconds a search waits for its partition's snapshot (100k pieces: 0.7)


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
        snapshots: Snapshots | None = None,
    ) -> None:
        self._load = load
        self.snapshots = snapshots
        self.limit, self.minimum, self.max_bytes, self.hot_after = (
            limit,
            minimum,
            max_bytes,
            hot_after,
        )
        self._loaded: OrderedDict[str, Matrix] = OrderedDict()  # least recently searched first
        self._searches: dict[str, int] = {}
        self._loading: dict[str, list[Callable[[], None]]] = {}  # writes to replay after
        self._declined: set[str] = set()  # too small or too big: asked again after a write
        self._raced_by_delete: set[str] = set()  # loading while a deletion was applied
        self._lock = threading.Lock()
        self.stopping = threading.Event()  # set at exit: a load stops at its next page
        self._loaders: set[threading.Thread] = set()
        self._writing: dict[str, int] = {}  # writes under way per partition (`writing`)
        self._changes: dict[str, int] = {}  # writes begun or ended, per partition
        self._saved: set[str] = set()  # held partitions whose snapshot is their matrix
        self._reading_snapshot: dict[str, threading.Event] = {}  # set once loaded
        on_exit(partial(_close, weakref.ref(self)))

    def close(self, timeout: float = 10.0) -> None:
        """Stop loading (a load in progress ends at its next page) and wait for the loaders,
        bounded: no thread of ours is inside the engine when the interpreter finalises."""
        self.stopping.set()
        with self._lock:
            loaders = list(self._loaders)
        for loader in loaders:
            loader.join(timeout)
        for key in list(self._loaded):  # what changed since its snapshot, for the next run
            self._save(key)

    @contextmanager
    def writing(self, key: str) -> Iterator[None]:
        """Around every write of `key` to the store (and its `upsert`/`delete` here): its
        snapshot is removed before the store is touched, and none is saved while it runs."""
        with self._lock:
            self._writing[key] = self._writing.get(key, 0) + 1
            self._changes[key] = self._changes.get(key, 0) + 1
            self._saved.discard(key)
            if self.snapshots is not None:
                self.snapshots.drop(key)
        try:
            yield
        finally:
            with self._lock:
                self._writing[key] -= 1
                self._changes[key] += 1

    def _save(self, key: str) -> None:
        """Save `key`'s matrix as its snapshot, unless it is saved already, or a write is
        under way or happens meanwhile (then the next load reads the store)."""
        if self.snapshots is None:
            return
        with self._lock:
            matrix = self._loaded.get(key)
            if matrix is None or key in self._saved or self._writing.get(key) or not matrix.n:
                return
            changes = self._changes.get(key, 0)
            n = matrix.n
            rough = None if matrix.int8 is None else matrix.int8[:n]
            rows = (
                matrix.vectors[:n],
                matrix.ids[:n],
                matrix.message_ids[:n],
                matrix.thread_ids[:n],
                rough,
            )
        written = self.snapshots.write(key, *rows)
        if written is None:
            return
        with self._lock:
            unchanged = self._changes.get(key, 0) == changes and not self._writing.get(key)
            if self.snapshots.commit(key, written, valid=unchanged):
                self._saved.add(key)

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
            ready = None if key in self._loaded else self._maybe_load(key)
        if ready is not None:  # its snapshot is loading: a fraction of a cold graph's wait
            ready.wait(SNAPSHOT_WAIT)
        with self._lock:
            matrix = self._loaded.get(key)
            if matrix is None:
                return None
            self._loaded.move_to_end(key)
            # what the scan reads, taken under the lock: writes append past `n` or replace
            # these arrays and lists, so the scan runs outside it (a big one takes ~15 ms)
            n, ids, rows, codes = matrix.n, matrix.ids, matrix.vectors, matrix.threads
            rough = matrix.int8 if n >= INT8_AT or not matrix.exact else None
            wanted = None if threads is None else [matrix.thread_code.get(t, -1) for t in threads]
        if n == 0:
            return []
        query = unit(vector)[0]
        kept = None if wanted is None else np.isin(codes[:n], wanted)  # (threads asked)
        if rough is None:
            scores = dot(rows[:n], query)
            pool = None
        else:  # candidates from the int8 rows, ranked on their float32 rows
            estimates = int8_scores(rough[:n], query)
            if kept is not None:
                estimates[~kept] = -np.inf
            pool = best(estimates, max(INT8_POOL, INT8_POOL_PER_HIT * top_k))
            scores, kept = np.einsum("ij,j->i", rows[pool], query, dtype=np.float32), None
        if kept is not None:
            scores[~kept] = -np.inf
        top = best(scores, top_k)
        found = top if pool is None else pool[top]
        return list(zip(map(ids.__getitem__, found.tolist()), scores[top].tolist(), strict=True))

    def pieces(
        self, key: str, message_ids: Sequence[str], most: int, *, rounded: bool = False
    ) -> dict[str, np.ndarray] | None:
        """Each of these messages' vectors (``m``, ``m#1`` ... up to `most` pieces) in piece
        order, one float32 array each (pieces x dimension), gathered in one read of the
        matrix; a message whose pieces are not all held is left out (embedded again instead).
        None when the partition is not held in float32 (float16 rows are not the stored ones:
        read the store), unless `rounded` (a ranking stage: float16 rows are close enough).
        Arrays, not lists: 500 pieces as Python floats cost ~10 ms."""
        with self._lock:
            matrix = self._loaded.get(key)
            if matrix is None or not (matrix.exact or rounded):
                return None
            rows: list[int] = []
            spans: dict[str, tuple[int, int]] = {}
            held, suffixes = matrix.row, PIECE_SUFFIXES[:most]
            for message_id in dict.fromkeys(message_ids):
                if message_id not in held:  # (no first piece: none held that counts)
                    continue
                found = [held.get(message_id + suffix) for suffix in suffixes]
                count = found.index(None) if None in found else most
                if count and all(row is None for row in found[count:]):
                    spans[message_id] = (len(rows), len(rows) + count)
                    rows += found[:count]  # type: ignore[arg-type]
            block = matrix.vectors[rows].astype(np.float32, copy=False)  # (a copy: later
            # writes never show through)
        return {message_id: block[start:end] for message_id, (start, end) in spans.items()}

    def upsert(
        self,
        key: str,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        message_ids: Sequence[str],
        thread_ids: Sequence[str],
    ) -> None:
        """Apply a write made to the store (a loaded partition it would take past `limit`, or
        past the bound even in float16, is dropped)."""
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
                matrix.int8 = None if matrix.int8 is None else small(matrix.vectors)
            if not self._fit(matrix, matrix.n + len(ids)):  # (at most: some may replace rows)
                del self._loaded[key]
                return
            for row in zip(ids, unit(vectors), message_ids, thread_ids, strict=True):
                matrix.put(*row)
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
            if key in self._loaded or key in self._loading:
                return  # (already held, or being read: its writes are the truth)
            matrix = Matrix.of(
                np.zeros((0, dimension), dtype=np.float32), Loaded([], [], [], []), int8=INT8
            )
            self._fit(matrix, 0)
            self._loaded[key] = matrix

    def load(self, key: str) -> bool:
        """Load `key` now, in this thread (an app warming its users' partitions at start);
        True if it is in memory afterwards (False when missing, over `limit`, or loading
        from the store in another thread). A partition being read back from its snapshot
        (`resume`, after a restart) is waited for, `SNAPSHOT_WAIT` at most, as a search does."""
        with self._lock:
            if key in self._loaded:
                return True
            reading = self._reading_snapshot.get(key)
            if reading is None:
                if key in self._loading:
                    return False
                self._loading[key] = []
        if reading is not None:
            reading.wait(SNAPSHOT_WAIT)
        else:
            self._load_in_background(key)
        with self._lock:
            return key in self._loaded

    def _maybe_load(self, key: str) -> threading.Event | None:
        """Start loading `key` if it is hot (at once if it has a snapshot: then the event
        set when it is loaded, for the search to wait on)."""
        if key in self._reading_snapshot:
            return self._reading_snapshot[key]
        if self.stopping.is_set() or key in self._declined or key in self._loading:
            return None
        if self.snapshots is not None and self.snapshots.has(key):
            ready = self._reading_snapshot[key] = threading.Event()
            self._start_loading(key)
            return ready
        searched = self._searches[key] = self._searches.get(key, 0) + 1
        if searched >= self.hot_after and not self._loading:  # (one load from the store at
            self._start_loading(key)  # a time: it competes with the searches for the CPU)
        return None

    def _start_loading(self, key: str) -> None:
        self._loading[key] = []
        loader = threading.Thread(
            target=self._load_in_background, args=(key,), name="lmm-exact-load", daemon=True
        )
        self._loaders.add(loader)
        loader.start()

    def resume(self) -> None:
        """Read back, in a background thread, the partitions saved by the last process (the
        most recently saved first, as many as `max_bytes` holds): after a restart the
        partitions in use before it are searched exactly from the first turn. A search of one
        still being read waits for it, as for any snapshot; one of another partition starts
        its own load."""
        if self.snapshots is None:
            return
        resumer = threading.Thread(target=self._resume, name="lmm-exact-resume", daemon=True)
        with self._lock:
            if self.stopping.is_set():
                return
            self._loaders.add(resumer)
        resumer.start()

    def _resume(self) -> None:
        assert self.snapshots is not None
        room = self.max_bytes
        try:
            for key, size in self.snapshots.saved():
                room -= size * (4 + INT8) // 4  # (the file: float32 rows, and ids)
                if room < 0 or self.stopping.is_set():
                    return
                with self._lock:
                    if key in self._loaded or key in self._loading or key in self._declined:
                        continue
                    self._reading_snapshot[key] = threading.Event()
                    self._loading[key] = []
                self._load_announced(key, store=False)
        finally:
            with self._lock:
                self._loaders.discard(threading.current_thread())

    def _load_in_background(self, key: str) -> None:
        try:
            self._load_announced(key)
        finally:
            with self._lock:
                self._loaders.discard(threading.current_thread())

    def _load_announced(self, key: str, *, store: bool = True) -> None:
        """Load `key`, then wake the searches waiting for its snapshot."""
        try:
            self._load_now(key, store=store)
        finally:
            with self._lock:
                if (ready := self._reading_snapshot.pop(key, None)) is not None:
                    ready.set()

    def _load_now(self, key: str, *, store: bool = True) -> None:
        """Load `key` from its snapshot, else (if `store`) from the store."""
        changes = self._changes.get(key, 0)
        snapshot = None if self.snapshots is None else self.snapshots.read(key)
        if snapshot is None and not store:  # (removed by a write since it was listed)
            with self._lock:
                self._loading.pop(key)
            return
        try:
            loaded = snapshot or (None if self.stopping.is_set() else self._load(key))
        except Exception as exc:  # the store answers searches meanwhile; try again later
            logger.debug("loading partition %s for exact search failed: %s", key, exc)
            loaded = None
        dimension = len(loaded.vectors[0]) if loaded is not None and loaded.ids else 0
        matrix = None
        if loaded is not None and not self.too_big(len(loaded.ids), dimension):
            # normalised and indexed before taking the lock, which every search of every
            # partition takes (300k pieces: ~0.12 s of work)
            vectors = (
                np.zeros((0, 1), np.float32)
                if not loaded.ids
                else np.asarray(loaded.vectors)
                if loaded.is_unit
                else unit(loaded.vectors, own=True)
            )
            matrix = Matrix.of(vectors, loaded, int8=INT8)
            if not self._fit(matrix, matrix.n):
                matrix = None
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
            if snapshot is not None and self._changes.get(key, 0) == changes:
                self._saved.add(key)
            self._evict()
        if snapshot is None and not self.stopping.is_set():
            self._save(key)  # so the next run reads it at once

    def too_big(self, pieces: int, dimension: int) -> bool:
        """More pieces than `limit`, or more bytes than every partition may hold together
        even in float16 (a loader asks before reading; a load is checked again)."""
        return self.precision(pieces, dimension) is None

    def precision(self, pieces: int, dimension: int) -> np.dtype[Any] | None:
        """What a partition of `pieces` rows is held in: float32 when its rows and their int8
        copy fit in `max_bytes`, else float16 (half the bytes, candidates ranked on them),
        else None (too big: HNSW serves it). Without SimSIMD (no int8 copy) float32 only."""
        if pieces > self.limit:
            return None
        for dtype in PRECISIONS:
            if pieces * dimension * (dtype.itemsize + INT8) <= self.max_bytes:
                return dtype
        return None

    def _fit(self, matrix: Matrix, pieces: int) -> bool:
        """Make `matrix` hold `pieces` rows within `max_bytes`, narrowed to float16 if it must
        be; False when it cannot (the partition is dropped: HNSW serves it)."""
        dimension = matrix.vectors.shape[1]
        dtype = self.precision(pieces, dimension)
        if dtype is None:
            return False
        if dtype.itemsize < matrix.vectors.dtype.itemsize:
            matrix.narrow(dtype)
        row_bytes = dimension * (matrix.vectors.dtype.itemsize + (matrix.int8 is not None))
        matrix.room = self.max_bytes // max(row_bytes, 1)
        return True

    def _evict(self) -> None:
        while self._loaded and sum(m.nbytes for m in self._loaded.values()) > self.max_bytes:
            self._loaded.popitem(last=False)


def _close(ref: weakref.ref[ExactPartitions]) -> None:
    partitions = ref()
    if partitions is not None:
        partitions.close()


# exact partitions per Chroma folder, shared by every store over it in this process
_SHARED: weakref.WeakValueDictionary[str, ExactPartitions] = weakref.WeakValueDictionary()

_SHARED_LOCK = threading.Lock()


def shared_partitions(
    folder: str | Path | None, load: Callable[[str], Loaded | None], limit: int, minimum: int
) -> ExactPartitions:
    """The exact partitions of a store over `folder`: the process's one set for that folder,
    with the limits of whichever store over it came first (every `Memory` over one file then
    loads a partition once, and every store's writes reach the matrices all of them search
    and the snapshots saved from them: two sets over one folder would each miss the other's
    writes); a store with no folder (in memory) has its own."""
    if folder is None:
        return ExactPartitions(load, limit=limit, minimum=min(minimum, limit))
    make = partial(
        ExactPartitions,
        load,
        limit=limit,
        minimum=min(minimum, limit),
        snapshots=Snapshots(Path(folder) / FOLDER),
    )
    key = str(Path(folder).resolve())
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = make()
            shared.resume()  # what the last process held, read back meanwhile
        return shared
