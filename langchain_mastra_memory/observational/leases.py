"""A scope's lease, held by one pass at a time (the Observer's, the Reflector's, an archive).

`under_lease` claims the lease (another run holding it: the pass does not run now; it runs
when that run ends), runs the pass with its owner name, whose commit ends the lease, and
releases the lease when the pass ends with nothing to commit (it returned None) or fails (it
raised: the error goes on to the caller once the lease is released). A process killed
meanwhile holds it until it lapses (``lease_seconds``): nothing is lost, only delayed. A
process that exits with a pass still under way (abandoned by its worker's bounded wait) gives
its leases back at exit (`release_held`), so the next process takes the scope over at once;
the abandoned pass's commit, should it come, then writes nothing (the lease is not its own).

Examples:
    >>> from langchain_mastra_memory import SQLiteStorage
    >>> from langchain_mastra_memory.twins import call, run_sync
    >>> storage = SQLiteStorage(":memory:")
    >>> def nothing_to_do(owner):
    ...     return (yield from call(storage.observation_log, "thread:t1")) or None
    >>> run_sync(under_lease(storage, "thread:t1", "observer", 60, nothing_to_do)) is None
    True
    >>> storage.claim_observation("thread:t1", owner="next", seconds=60)  # released: free
    True
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..pools import on_exit
from ..twins import Steps, call

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage

T = TypeVar("T")
logger = logging.getLogger(__name__)

_held: dict[str, tuple[MemoryStorage, str]] = {}  # owner -> (storage, scope): leases held here
_held_lock = threading.Lock()


def under_lease(
    storage: MemoryStorage,
    key: str,
    role: str,
    seconds: float,
    work: Callable[[str], Steps[T | None]],
) -> Steps[T | None]:
    """Steps running ``work(owner)`` under scope `key`'s lease, as ``<role>-<uuid>``: its
    result, or None when another run holds the lease or the pass had nothing to commit."""
    owner = f"{role}-{uuid.uuid4()}"
    if not (yield from call(storage.claim_observation, key, owner=owner, seconds=seconds)):
        return None
    with _held_lock:
        _held[owner] = (storage, key)
    try:
        done = yield from work(owner)
    except Exception:  # nothing committed: the scope is free for the next run at once
        yield from call(storage.release_observation, key, owner=owner)
        raise
    finally:
        with _held_lock:
            _held.pop(owner, None)
    if done is None:
        yield from call(storage.release_observation, key, owner=owner)
    return done


def release_held() -> int:
    """Give back every lease a pass of this process still holds (at exit, once the workers'
    bounded waits are over: what is left was abandoned); how many were given back."""
    with _held_lock:
        held = list(_held.items())
        _held.clear()
    for owner, (storage, key) in held:
        try:
            storage.release_observation(key, owner=owner)
        except Exception:  # storage closed or gone: the lease lapses instead
            logger.debug("could not give back the lease of %s at exit", key, exc_info=True)
    return len(held)


on_exit(release_held)  # the oldest stopper runs last: after the workers' waits
