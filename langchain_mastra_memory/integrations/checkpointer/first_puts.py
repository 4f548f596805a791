"""One first put at a time for a thread memory does not hold yet, in this process.

A thread's first put purges checkpoints an earlier owner of its id left behind
(`ThreadOwners._purge_orphans`), then makes the memory thread. LangGraph puts a subgraph's
checkpoints from its own executor while the parent's put is still in flight, so two puts of
one thread can both find it unheld: the second one's purge would then delete the first one's
checkpoint. Held here from the owner read to the saver's write, the first puts of a thread
follow one another; the second reads the owner again once it holds the thread and finds it
made. Both a worker thread (sync graphs) and an event loop (async ones, which must never
block) can wait, so the lock is a `threading.Lock` an event loop polls for.

Example:
    >>> import asyncio
    >>> births = FirstPuts()
    >>> births.hold("t1"); births.release("t1")
    >>> asyncio.run(births.ahold("t1")); births.release("t1"); births.waiting("t1")
    0
"""

from __future__ import annotations

import asyncio
import threading

POLL_SECONDS = 0.002  # how often an event loop tries a lock another put holds


class FirstPuts:
    """A lock per thread id, made on demand and dropped when nobody holds or awaits it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}  # id -> (lock, holders+waiters)

    def _join(self, thread_id: str) -> threading.Lock:
        with self._guard:
            lock, count = self._locks.get(thread_id) or (threading.Lock(), 0)
            self._locks[thread_id] = (lock, count + 1)
            return lock

    def _leave(self, thread_id: str) -> threading.Lock:
        with self._guard:
            lock, count = self._locks[thread_id]
            if count == 1:
                del self._locks[thread_id]
            else:
                self._locks[thread_id] = (lock, count - 1)
            return lock

    def hold(self, thread_id: str) -> None:
        """Wait (blocking this worker thread) until this caller alone holds `thread_id`."""
        self._join(thread_id).acquire()

    async def ahold(self, thread_id: str) -> None:
        """`hold`, polled so the event loop runs on meanwhile."""
        lock = self._join(thread_id)
        try:
            while not lock.acquire(blocking=False):
                await asyncio.sleep(POLL_SECONDS)
        except BaseException:  # cancelled while waiting: never held
            self._leave(thread_id)
            raise

    def release(self, thread_id: str) -> None:
        """Let the next put of `thread_id` in."""
        self._leave(thread_id).release()

    def waiting(self, thread_id: str) -> int:
        """How many callers hold or await `thread_id` (0 once all are done)."""
        with self._guard:
            return self._locks.get(thread_id, (None, 0))[1]
