"""A Chroma partition read for exact search: a page at a time, each page turned at once into
unit rows of the precision it will be held in (300k pieces come back from Chroma as float64
and metadata dicts, several GB at a time).

Examples:
    >>> import chromadb, threading
    >>> col = chromadb.EphemeralClient().create_collection("pages_demo")
    >>> col.add(ids=["a", "b"], embeddings=[[3.0, 4.0], [1.0, 0.0]],
    ...         metadatas=[{"message_id": "a", "thread_id": "t"}] * 2)
    >>> read = read_in_pages(col, lambda what, f, **kw: f(**kw), 2, np.float32, threading.Event())
    >>> read.ids, read.vectors.tolist()
    (['a', 'b'], [[0.6000000238418579, 0.800000011920929], [1.0, 0.0]])
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..exact import Loaded
from ..exact.matrix import unit

# pieces read at a time when a partition is loaded for exact search: Chroma holds the GIL while
# it converts a page (10,000 pieces: ~250 ms in which no search could run; 1,000: ~15 ms)
LOAD_PAGE = 1_000


def read_in_pages(
    col: Any,
    call: Callable[..., Any],
    count: int,
    precision: Any,
    stopping: threading.Event,
) -> Loaded | None:
    """Every piece of `col` (about `count`), through `call(what, method, **kwargs)` (the
    store's error handling), as unit rows of `precision`; None when `stopping` is set part way
    (never a partition with pieces missing)."""
    ids: list[str] = []
    message_ids: list[str] = []
    thread_ids: list[str] = []
    vectors: np.ndarray | None = None
    while not stopping.is_set():  # (exit stops a load between pages)
        page = call(
            "load", col.get, limit=LOAD_PAGE, offset=len(ids), include=["embeddings", "metadatas"]
        )
        found = unit(np.asarray(page["embeddings"], dtype=np.float32), own=True)
        if not len(found):
            break
        if vectors is None or len(vectors) < len(ids) + len(found):
            grown = np.empty((max(count, len(ids) + len(found)), found.shape[1]), precision)
            if vectors is not None:
                grown[: len(ids)] = vectors[: len(ids)]
            vectors = grown
        vectors[len(ids) : len(ids) + len(found)] = found
        ids += page["ids"]
        message_ids += [str(m["message_id"]) for m in page["metadatas"]]
        thread_ids += [str(m["thread_id"]) for m in page["metadatas"]]
        if len(found) < LOAD_PAGE:
            break
    if stopping.is_set():
        return None
    return Loaded(
        ids,
        vectors[: len(ids)] if vectors is not None else [],
        message_ids,
        thread_ids,
        paged=len(ids) > LOAD_PAGE,
        is_unit=True,
    )
