"""Waits an event loop can await without holding a thread: a `Signal` (a one-shot flag set
by a thread), `Changes` (a condition whose `notify_all` wakes threads and coroutines alike),
and `await_futures` (a worker's futures).

Examples:
    >>> import asyncio
    >>> signal = Signal()
    >>> async def main():
    ...     waiting = asyncio.ensure_future(signal.until_set(5))
    ...     await asyncio.sleep(0)
    ...     signal.set()  # from any thread
    ...     return await waiting
    >>> asyncio.run(main())
    True
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any


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
