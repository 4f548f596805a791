"""What the first `Memory` of a process warms up once, so that its first turns do not pay for it.

Building a `Memory` imports Chroma, ONNX Runtime and LangChain (when nothing had yet): about
140,000 objects, queued for CPython's oldest garbage-collector generation. Left alone, their
first full collection falls inside one of the first turns: at 100,000 messages, turn 16 of the
first 60 after a restart took 88-123 ms, 77-110 ms of it the collection
(`bench/cold_recall_bench.py`, 2026-11-26). Collected once when the first `Memory` is built, it
costs the same at start, and the next full collection is hundreds of turns away (none in the
first 60, measured). The tokenizer stored messages are read with (o200k: ~0.7 s to parse) is
loaded in the background meanwhile (`warm_default_counter`).

Examples:
    >>> warm_up()
    >>> warm_up()  # once per process: the second call does nothing
"""

from __future__ import annotations

import gc
import threading

from .counting import warm_default_counter

_warm = False
_lock = threading.Lock()


def warm_up() -> None:
    """Once per process: start loading the tokenizer, then collect the imports' garbage."""
    global _warm
    with _lock:
        if _warm:
            return
        _warm = True
    warm_default_counter()
    gc.collect()
