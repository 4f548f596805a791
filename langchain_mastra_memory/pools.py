"""Memory's own threads, and waits that hold none.

An async path never parks a thread of the event loop's default executor: a server process
shares that executor with every library in it (and LangGraph's sync nodes), and a thread parked
there on work queued behind it is a circular wait that only a timeout breaks (32 conversations
in one process once stalled 30 s that way). So:

- **pools**: blocking I/O runs on `io_pool`, an embedding model's calls on `embedding_pool`;
  nothing on them waits for memory's background work.
- **waits** an event loop awaits without holding a thread: a `Signal` (a one-shot flag set by a
  thread), `Changes` (a condition whose `notify_all` wakes threads and coroutines alike), and
  `await_futures` (a worker's futures).
- **stopping at exit**: work behind the turn runs in daemon threads (the vector writer, the
  loader of exact-search partitions, the Observer's `DaemonWorker`), and that work calls native
  code (Chroma's engine, ONNX Runtime, SQLite). A daemon thread still inside native code when
  the interpreter tears itself down can jump into freed memory: the process then dies with a
  segmentation fault after its work was done. So each thread registers a stopper when it starts
  (`on_exit`), and every one runs (ask the thread to stop at its next safe point, then join it,
  bounded) from `threading`'s own exit hook, the first thing the interpreter does when the main
  thread ends: before `concurrent.futures` refuses new work ("cannot schedule new futures after
  interpreter shutdown", which a drain at exit still needs: the embedder's threads) and before
  any `atexit` handler, the engines' own among them. Where that hook is missing (another
  Python), `atexit` is the fallback, installed after the engines were imported so it still runs
  before their handlers (`atexit` runs the newest first).

Examples:
    >>> import asyncio
    >>> asyncio.run(in_io_pool(sum, [1, 2, 3]))
    6
    >>> signal = Signal()
    >>> async def main():
    ...     waiting = asyncio.ensure_future(signal.until_set(5))
    ...     await asyncio.sleep(0)
    ...     signal.set()  # from any thread
    ...     return await waiting
    >>> asyncio.run(main())
    True
    >>> import threading
    >>> done = threading.Event()
    >>> worker = threading.Thread(target=done.wait, daemon=True)
    >>> worker.start()
    >>> on_exit(lambda: (done.set(), worker.join(5)))
    >>> stop_all()
    >>> worker.is_alive()
    False
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from functools import lru_cache, partial
from typing import Any, TypeVar

from langchain_core.runnables.config import run_in_executor

# its old submodules (a package until 0.2) still import, with a warning (`MOVED`)
__path__: list[str] = []

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


async def await_futures(futures: Iterable[Future[Any]], timeout: float | None = None) -> bool:
    """Await a worker's futures (holding no thread); False if `timeout` ran out first."""
    pending = [asyncio.wrap_future(f) for f in futures]
    if not pending:
        return True
    _, not_done = await asyncio.wait(pending, timeout=timeout)
    return not not_done


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _LoopWaiters:
    """Futures of coroutines waiting for a change, on whatever loops they run; woken from any
    thread."""

    def __init__(self) -> None:
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def add(self) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiting.append((loop, future))
        return future

    def discard(self, future: asyncio.Future[None]) -> None:
        self._waiting = [(loop, f) for loop, f in self._waiting if f is not future]

    def wake_all(self) -> None:
        waiting, self._waiting = self._waiting, []
        for loop, future in waiting:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits there now
                loop.call_soon_threadsafe(_wake, future)


class Changes(threading.Condition):
    """A `threading.Condition` that coroutines can wait on too: `notify_all` wakes the threads
    in `wait_for` and the coroutines in `await_for` (which hold no thread while waiting).

    Examples:
        >>> import asyncio
        >>> changes, box = Changes(), []
        >>> def put():
        ...     with changes:
        ...         box.append(1)
        ...         changes.notify_all()
        >>> async def main():
        ...     waiting = asyncio.ensure_future(changes.await_for(lambda: box, 5))
        ...     await asyncio.sleep(0)
        ...     threading.Thread(target=put).start()
        ...     return await waiting
        >>> asyncio.run(main())
        True
    """

    def __init__(self) -> None:
        super().__init__(threading.Lock())
        self._loops = _LoopWaiters()

    def notify_all(self) -> None:
        super().notify_all()
        self._loops.wake_all()

    async def await_for(self, predicate: Callable[[], Any], timeout: float | None = None) -> bool:
        """Await until `predicate()` (checked under the lock) holds; False if `timeout` ran
        out first."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            with self:
                if predicate():
                    return True
                future = self._loops.add()
            left = None if deadline is None else deadline - loop.time()
            try:
                if left is not None and left <= 0:
                    raise asyncio.TimeoutError
                await asyncio.wait_for(future, left)
            except asyncio.TimeoutError:
                with self:
                    self._loops.discard(future)
                    return bool(predicate())


class Signal:
    """A one-shot flag set by a thread and waited for by threads (`wait`) or coroutines
    (`until_set`, which holds no thread while it waits): a flag under `Changes`.

    Examples:
        >>> signal = Signal()
        >>> signal.set(); signal.is_set(), signal.wait(0)
        (True, True)
    """

    def __init__(self) -> None:
        self._changes = Changes()
        self._set = False

    def set(self) -> None:
        with self._changes:
            self._set = True
            self._changes.notify_all()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Block this thread until set; False if `timeout` ran out first."""
        with self._changes:
            return self._changes.wait_for(self.is_set, timeout)

    async def until_set(self, timeout: float | None = None) -> bool:
        """Await until set; False if `timeout` ran out first."""
        return await self._changes.await_for(self.is_set, timeout)


logger = logging.getLogger(__name__)

_stoppers: list[Callable[[], object]] = []

_lock = threading.Lock()

_installed = False


def on_exit(stop: Callable[[], object]) -> None:
    """Run `stop` at interpreter exit (before the engines' own exit handlers)."""
    global _installed
    with _lock:
        _stoppers.append(stop)
        if not _installed:
            _install()
            _installed = True


def _install() -> None:
    """Run `stop_all` when the main thread ends, before the executors stop taking work."""
    register = getattr(threading, "_register_atexit", None)  # CPython 3.9+
    try:
        if register is not None:
            register(stop_all)  # the hooks run newest first: before concurrent.futures' own
            return
    except RuntimeError:  # registered while the interpreter already shuts down
        pass
    atexit.register(stop_all)


def stop_all() -> None:
    """Run every registered stopper once (newest first), each failure logged, never raised."""
    with _lock:
        stoppers = _stoppers[::-1]
        _stoppers.clear()
    for stop in stoppers:
        try:
            stop()
        except Exception:  # exit goes on
            logger.debug("a stopper failed at exit", exc_info=True)


class DaemonWorker:
    """One daemon thread running submitted calls in order, each with its `Future`.

    Unlike a `ThreadPoolExecutor` (whose threads the interpreter joins at exit), it never
    holds the process: at exit the call under way gets `exit_wait` seconds, then a slow or hung
    one is abandoned (an Observer's lease is given back, see `observational.leases`) and the
    next process takes the work over (nothing was committed, so nothing is lost).

    Examples:
        >>> worker = DaemonWorker("example", exit_wait=1.0)
        >>> worker.submit(sum, [1, 2]).result()
        3
        >>> worker.stop()
    """

    def __init__(self, name: str, *, exit_wait: float = 10.0) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]]
        self._calls = queue.SimpleQueue()
        self._stopping = False
        self.exit_wait = exit_wait
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        on_exit(lambda: self.stop(self.exit_wait))

    def stop(self, timeout: float = 10.0) -> None:
        """At exit: no new call starts; the one running gets `timeout` to finish (a hung one
        is abandoned, as before: its lease lapses)."""
        self._stopping = True
        self._calls.put((_STOP, _nothing, ()))
        self._thread.join(timeout)

    def submit(self, func: Callable[..., Any], *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._calls.put((future, func, args))
        return future

    def _run(self) -> None:
        while True:
            future, func, args = self._calls.get()
            if future is _STOP or self._stopping:  # what waits is abandoned, as a crash would
                future.cancel()
                return
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(func(*args))
            except BaseException as exc:
                future.set_exception(exc)


_STOP: Future[Any] = Future()  # the call that ends the worker


def _nothing() -> None:
    return None


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
