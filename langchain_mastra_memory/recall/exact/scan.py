"""The kernels an exact search runs: a float32 scan, an int8 scan through SimSIMD for
candidates, each shared with a second core when big, and the top k of a score vector.

Examples:
    >>> import numpy as np
    >>> rows = np.eye(3, dtype=np.float32)
    >>> best(dot(rows, np.array([0.1, 0.9, 0.2], dtype=np.float32)), 2).tolist()
    [1, 2]
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

try:  # SIMD kernels chosen at run time for this CPU (the `chroma` extra installs it)
    import simsimd
except ImportError:  # pragma: no cover - float32 scans only
    simsimd = None  # type: ignore[assignment]

from .matrix import small

INT8 = simsimd is not None  # matrices keep an int8 copy to scan
INT8_AT = 16_384  # rows: a bigger partition is scanned in int8 for candidates (SimSIMD)
INT8_POOL, INT8_POOL_PER_HIT = 512, 2  # candidates ranked again in float32
SPLIT_AT = 32_768  # rows: a bigger scan is shared with a second core (100k x 384: 11.5 -> 6.7 ms)
INT8_SPLIT_AT = 131_072  # rows: the same for an int8 scan (340k x 384: 4.4 -> 2.7 ms)
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
