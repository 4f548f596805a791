"""Memory's own worker threads: blocking I/O on `io_pool`, an embedding model's calls on
`embedding_pool`, never on the event loop's default executor (shared with every library in a
server process, and LangGraph's sync nodes).

Examples:
    >>> import asyncio
    >>> asyncio.run(in_io_pool(sum, [1, 2, 3]))
    6
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from functools import lru_cache, partial
from typing import Any, TypeVar

from langchain_core.runnables.config import run_in_executor

T = TypeVar("T")

IO_THREADS = int(os.environ.get("LMM_IO_THREADS", "16"))
EMBEDDING_THREADS = int(os.environ.get("LMM_EMBEDDING_THREADS", str(max(2, os.cpu_count() or 1))))


@lru_cache(maxsize=1)
def io_pool() -> ThreadPoolExecutor:
    """The threads memory's async twins run blocking storage and vector-store calls on
    (`LMM_IO_THREADS`, 16 by default)."""
    return ThreadPoolExecutor(IO_THREADS, thread_name_prefix="lmm-io")


@lru_cache(maxsize=1)
def embedding_pool() -> ThreadPoolExecutor:
    """The threads an embedding model's synchronous calls run on when awaited
    (`LMM_EMBEDDING_THREADS`, the number of cores by default): nothing on them waits for
    anything, so a query's embedding is never queued behind a waiter."""
    return ThreadPoolExecutor(EMBEDDING_THREADS, thread_name_prefix="lmm-embed")


async def run_in(pool: Executor, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` on `pool`, in a copy of the caller's context (langchain-core's
    `run_in_executor` copies it only for the default executor; its tracers and config must
    reach the call here too)."""
    call = partial(contextvars.copy_context().run, func, *args, **kwargs)
    return await run_in_executor(pool, call)


async def in_io_pool(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` on `io_pool`: a blocking storage or vector-store call."""
    return await run_in(io_pool(), func, *args, **kwargs)


async def in_embedding_pool(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` on `embedding_pool`: an embedding model's blocking call."""
    return await run_in(embedding_pool(), func, *args, **kwargs)
