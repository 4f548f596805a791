"""`DaemonWorker`: the thread the Observer and Reflector run on behind the turn."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..pools.shutdown import on_exit


class DaemonWorker:
    """One daemon thread running submitted calls in order, each with its `Future`.

    Unlike a `ThreadPoolExecutor` (whose threads the interpreter joins at exit), it never
    holds the process: a slow or hung Observer is abandoned at exit, its lease lapses, and the
    next process takes the work over (nothing was committed, so nothing is lost).
    """

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]]
        self._calls = queue.SimpleQueue()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        on_exit(self.stop)

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
