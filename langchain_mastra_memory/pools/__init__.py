"""Memory's own threads, and waits that hold none.

An async path never parks a thread of the event loop's default executor: a server process
shares that executor with every library in it, and a thread parked there on work queued behind
it is a circular wait that only a timeout breaks (32 conversations in one process once stalled
30 s that way). So blocking I/O runs on memory's own bounded pools (`executors`), nothing on
them waits for memory's background work, and such waits are awaited (`waits`).
"""

from .executors import (
    EMBEDDING_THREADS,
    IO_THREADS,
    embedding_pool,
    in_embedding_pool,
    in_io_pool,
    io_pool,
    run_in,
)
from .waits import Changes, Signal, await_futures

__all__ = [
    "EMBEDDING_THREADS",
    "IO_THREADS",
    "Changes",
    "Signal",
    "await_futures",
    "embedding_pool",
    "in_embedding_pool",
    "in_io_pool",
    "io_pool",
    "run_in",
]
