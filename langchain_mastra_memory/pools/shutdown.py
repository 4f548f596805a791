"""Stopping what the library started before the interpreter finalises.

The library runs work behind the turn in daemon threads (the vector writer, the loader of
exact-search partitions, the Observer's worker), and that work calls native code (Chroma's
engine, ONNX Runtime, SQLite). A daemon thread still inside native code when the interpreter
tears itself down can jump into freed memory: the process then dies with a segmentation fault
after its work was done. So each thread is registered here when it starts, and at exit every
registered stopper runs (ask the thread to stop at its next safe point, then join it, bounded).
The `atexit` hook is installed with the first thread, after the engines it drives were
imported, so it runs before their own exit handlers (`atexit` runs the newest first).

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
            atexit.register(stop_all)
            _installed = True


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
