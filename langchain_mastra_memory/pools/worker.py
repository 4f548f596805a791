"""`DaemonWorker`: one thread for work behind the turn that must never hold the process at
exit (the Observer and Reflector, titles)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from .shutdown import on_exit


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
