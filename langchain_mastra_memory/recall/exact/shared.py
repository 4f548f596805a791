"""One set of exact partitions per Chroma folder in a process, shared by every store over it.

Every `Memory` over one file then loads a partition once, and every store's writes reach the
matrices all of them search and the snapshots saved from them (two sets over one folder would
each miss the other's writes). A store with no folder (in memory) has its own.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from functools import partial
from pathlib import Path

from .matrix import Loaded
from .partitions import ExactPartitions
from .snapshots import FOLDER, Snapshots

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
