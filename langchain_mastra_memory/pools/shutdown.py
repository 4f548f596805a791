"""Stopping what the library started before the interpreter finalises.

The library runs work behind the turn in daemon threads (the vector writer, the loader of
exact-search partitions, the Observer's worker), and that work calls native code (Chroma's
engine, ONNX Runtime, SQLite). A daemon thread still inside native code when the interpreter
tears itself down can jump into freed memory: the process then dies with a segmentation fault
after its work was done. So each thread is registered here when it starts, and at exit every
registered stopper runs (ask the thread to stop at its next safe point, then join it, bounded).

The stoppers run from `threading`'s own exit hook, the first thing the interpreter does when
the main thread ends (a script's last line, an uncaught exception, `sys.exit`, the end of
`asyncio.run`): before `concurrent.futures` refuses new work ("cannot schedule new futures
after interpreter shutdown", which a drain at exit still needs: the embedder's threads) and
before any `atexit` handler, the engines' own among them. Where that hook is missing (another
Python), `atexit` is the fallback, installed after the engines were imported so it still runs
before their handlers (`atexit` runs the newest first).

Examples:
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

import atexit
import concurrent.futures.thread  # noqa: F401 (its exit hook first: ours must run before it)
import logging
import threading
from collections.abc import Callable

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
