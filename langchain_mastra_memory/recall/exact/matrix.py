"""The rows an exact partition holds, and the kernels that scan them: a growing float32
matrix of unit vectors with each row's ids and thread (`Matrix`), the shape a partition is read
in (`Loaded`), a float32 scan, an int8 scan through SimSIMD for candidates (each shared with a
second core when big), and the top k of a score vector.

Examples:
    >>> rows = Loaded(["a"], [[3.0, 4.0]], ["a"], ["t1"])
    >>> Matrix.of(unit(rows.vectors), rows).vectors.tolist()
    [[0.6000000238418579, 0.800000011920929]]
    >>> import numpy as np
    >>> rows = np.eye(3, dtype=np.float32)
    >>> best(dot(rows, np.array([0.1, 0.9, 0.2], dtype=np.float32)), 2).tolist()
    [1, 2]
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Loaded:
    """A partition's vectors as read from the store: ids, vectors, message and thread ids;
    `paged` when read in several calls (a deletion racing it may have shifted a page). Read
    from a snapshot: `vectors` already at unit length (`is_unit`), with their int8 copy."""

    ids: list[str]
    vectors: Sequence[Sequence[float]] | np.ndarray
    message_ids: list[str]
    thread_ids: list[str]
    paged: bool = False
    is_unit: bool = False
    int8: np.ndarray | None = None


def small(vectors: np.ndarray) -> np.ndarray:
    """Unit rows as int8, a quarter of the bytes to scan for candidates (ranked again on the
    float32 rows): six standard deviations of a random unit vector's component fill the range
    (larger components are clipped). Made in blocks: whole-matrix temporaries of a 100k x 384
    partition cost 1.4 s of page faults, blocks 0.2 s."""
    scale = 127.0 / min(1.0, 6.0 / np.sqrt(max(vectors.shape[-1], 1)))
    rows = np.asarray(vectors)
    out = np.empty(rows.shape, dtype=np.int8)
    flat_in, flat_out = rows.reshape(-1, rows.shape[-1]), out.reshape(-1, rows.shape[-1])
    for start in range(0, len(flat_in), 8192):  # (float16 rows made float32 a block at a time)
        block = np.rint(flat_in[start : start + 8192].astype(np.float32) * scale)
        flat_out[start : start + 8192] = np.clip(block, -127, 127, out=block)
    return out


@dataclass
class Matrix:
    """One partition's unit-length vectors (rows ``0..n``), growing by half again up to `room`
    rows, with an int8 copy for scanning (`small`, when `int8` is set) and each row's thread
    as a small integer (a thread filter is one vector comparison). The rows are float32, or
    float16 for a partition too big to hold so (`narrow`: half the bytes; a similarity
    ranked on them is off by less than 1e-4)."""

    vectors: np.ndarray
    ids: list[str] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    thread_ids: list[str] = field(default_factory=list)
    row: dict[str, int] = field(default_factory=dict)
    threads: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    thread_code: dict[str, int] = field(default_factory=dict)
    int8: np.ndarray | None = None
    room: int | None = None  # rows it may grow to (None: no bound)

    @classmethod
    def of(cls, vectors: np.ndarray, loaded: Loaded, *, int8: bool = False) -> Matrix:
        """`vectors` (unit rows) with `loaded`'s ids; with `int8`, the int8 copy too (the one
        `loaded` brings if it matches, else made)."""
        matrix = cls(vectors, list(loaded.ids), list(loaded.message_ids), list(loaded.thread_ids))
        matrix.row = {vector_id: i for i, vector_id in enumerate(matrix.ids)}
        matrix.threads = matrix._codes(matrix.thread_ids)
        kept = loaded.int8 is not None and loaded.int8.shape == vectors.shape
        matrix.int8 = None if not int8 else loaded.int8 if kept else small(vectors)
        return matrix

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes) + (0 if self.int8 is None else int(self.int8.nbytes))

    @property
    def exact(self) -> bool:
        """Whether the rows are the stored vectors (float32), not float16 roundings of them."""
        return bool(self.vectors.dtype == np.float32)

    def narrow(self, dtype: np.dtype[Any]) -> None:
        """Keep the rows in `dtype` (float16: half the bytes). A new array: a search reading
        the old one meanwhile stays consistent."""
        if dtype != self.vectors.dtype:
            self.vectors = self.vectors.astype(dtype)

    def _codes(self, thread_ids: Sequence[str]) -> np.ndarray:
        code = self.thread_code
        return np.fromiter(
            (code.setdefault(t, len(code)) for t in thread_ids), np.int32, len(thread_ids)
        )

    def put(self, vector_id: str, vector: np.ndarray, message_id: str, thread_id: str) -> None:
        thread = self.thread_code.setdefault(thread_id, len(self.thread_code))
        at = self.row.get(vector_id)
        if at is None and self.n == len(self.vectors):  # (the others have the same capacity)
            grow = partial(_grown, n=self.n, room=self.room)
            self.vectors, self.threads = grow(self.vectors), grow(self.threads)
            if self.int8 is not None:
                self.int8 = grow(self.int8)
        row = self.n if at is None else at
        self.vectors[row], self.threads[row] = vector, thread
        if self.int8 is not None:
            self.int8[row] = small(vector)
        if at is not None:
            self.message_ids[at], self.thread_ids[at] = message_id, thread_id
            return
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
        if self.int8 is not None:
            self.int8 = np.ascontiguousarray(self.int8[rows])
        kept = rows.tolist()
        self.ids = [self.ids[i] for i in kept]
        self.message_ids = [self.message_ids[i] for i in kept]
        self.thread_ids = [self.thread_ids[i] for i in kept]
        self.row = {vector_id: i for i, vector_id in enumerate(self.ids)}


def _grown(array: np.ndarray, n: int, room: int | None) -> np.ndarray:
    """`array`'s first `n` rows in a new array half as big again, or as big as `room` rows
    when that is less (at least one row more; zeros after them)."""
    rows = max(16, n + n // 2)
    if room is not None:
        rows = max(n + 1, min(rows, room))
    grown = np.zeros((rows, *array.shape[1:]), dtype=array.dtype)
    grown[:n] = array[:n]
    return grown


def unit(
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


try:  # SIMD kernels chosen at run time for this CPU (the `chroma` extra installs it)
    import simsimd
except ImportError:  # pragma: no cover - float32 scans only
    simsimd = None  # type: ignore[assignment]

INT8 = simsimd is not None  # matrices keep an int8 copy to scan

INT8_AT = 16_384  # rows: a bigger partition is scanned in int8 for candidates (SimSIMD)

INT8_POOL, INT8_POOL_PER_HIT = 512, 2  # candidates ranked again in float32

SPLIT_AT = 32_768  # rows: a bigger scan is shared with a second core (100k x 384: 11.5 -> 6.7 ms)


def _int8_split_at() -> int:
    """Rows from which an int8 scan is shared with a second core: where one core's scan takes
    about a millisecond. With 512-bit integer dot products (Intel Ice Lake and later, AMD Zen 4
    and later) that is 131k rows of 384 (340k: 4.4 -> 2.7 ms); with AVX2 alone the kernel is
    three times slower, so from 32k (2026-12-04, AMD EPYC Zen 3: 100k x 384 4.0 -> 2.4 ms)."""
    wide = ("ice", "sapphire", "genoa", "turin", "sierra")
    if not INT8:
        return 131_072  # (no int8 scans)
    capabilities = simsimd.get_capabilities()
    return 131_072 if any(capabilities.get(name) for name in wide) else 32_768


INT8_SPLIT_AT = _int8_split_at()  # rows: the same for an int8 scan

# what rows are held in, best first (float16 only beside an int8 copy, which finds candidates)
PRECISIONS = (np.dtype(np.float32), np.dtype(np.float16)) if INT8 else (np.dtype(np.float32),)

_helper: ThreadPoolExecutor | None = None

_helper_lock = threading.Lock()


def dot(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Every row's dot product with `query`: numpy's own loop, not BLAS (no BLAS threads left
    spinning against the keyword search running beside it); a big partition in two halves,
    one on a helper thread (the loop releases the GIL: the scan is bound by one core's reads,
    not the memory bus)."""
    scores = np.empty(len(rows), dtype=np.float32)
    if len(rows) < SPLIT_AT or (os.cpu_count() or 1) < 2:
        return np.einsum("ij,j->i", rows, query, out=scores)
    half = len(rows) // 2
    other = _scan_helper().submit(np.einsum, "ij,j->i", rows[half:], query, out=scores[half:])
    np.einsum("ij,j->i", rows[:half], query, out=scores[:half])
    other.result()
    return scores


def best(scores: np.ndarray, k: int) -> np.ndarray:
    """The rows of the `k` highest scores, best first (ties in row order), none at -inf."""
    k = min(k, len(scores))
    best = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    best = best[np.argsort(-scores[best], kind="stable")]
    return best[scores[best] > -np.inf]


def int8_dot(rows: np.ndarray, query: np.ndarray) -> Any:
    """Every int8 row's dot product with `query` (as int8 rows are made), through SimSIMD."""
    return simsimd.cdist(rows, small(query)[None], metric="dot", out_dtype="float32")


def int8_scores(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """`int8_dot` as a float32 vector; a big partition in two halves, one on the helper
    thread, as `dot` (500k x 384: 6.5 -> 4.4 ms)."""
    if len(rows) < INT8_SPLIT_AT or (os.cpu_count() or 1) < 2:
        return np.asarray(int8_dot(rows, query), dtype=np.float32).ravel()
    half = len(rows) // 2
    other = _scan_helper().submit(int8_dot, rows[half:], query)
    first = np.asarray(int8_dot(rows[:half], query), dtype=np.float32).ravel()
    return np.concatenate([first, np.asarray(other.result(), dtype=np.float32).ravel()])


def _scan_helper() -> ThreadPoolExecutor:
    global _helper
    with _helper_lock:
        if _helper is None:
            _helper = ThreadPoolExecutor(1, thread_name_prefix="lmm-exact-scan")
        return _helper
