"""`BacklogWriter`: embeddings and vector writes behind the turn, from a durable backlog.

Saving a message stores it with ``embedded = 0`` (the backlog, in storage, so a crash loses
nothing) and wakes this writer; a per-index background thread embeds the backlog in batches
(bounded memory) and marks what it wrote. The messages this process saved are handed over
with the wake-up and embedded as they are, without reading them back; storage's backlog is
read (a sweep) at the first drain, every `SWEEP_EVERY` seconds, after a failed write, and
whenever what is queued was not all handed over (another process's leftovers, a message
updated or deleted here since it was handed over). Searching first waits for the writes this process
has queued for its resource (`wait_written`: usually done already, they run during the user's think
time), so a message saved by this process is found by the next recall; not for the messages the
search will not return anyway (a turn's own question, saved a moment before its recall), nor
for other resources' (they are never its hits). A drain lingers up to `LINGER` for more saves
while nobody waits for them: a vector store writes a resource's partition in one call whatever
it holds (Chroma: ~6 ms of CPU a call, +0.5 ms a vector), so the saves of a turn, and of
turns close together, are written together; a search or `flush()` that needs them ends the
linger at once. A vector-store failure is logged and leaves the backlog for the next wake-up.

The backlog is drained by whoever runs next, whichever process stored it: a writer `start`s
with a sweep (a short program's messages, left by a process that ended first, are written by
the next `Memory` over that storage), sweeps again whenever it was idle for `SWEEP_EVERY`, and
`flush(everyone=True)` sweeps before it waits, so it means "everything stored so far is
searchable". Two processes sweeping one backlog may embed a message both: a vector's id is its
message's and piece's, and every engine upserts by id, so the index holds it once.

At interpreter exit the writer gets `exit_drain` seconds (`EXIT_DRAIN` by default) to write
what is queued, in batches of `EXIT_BATCH` so it stops soon after the deadline; then it stops
quietly, and what is left stays in the backlog for the next start (one INFO line says how many).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Protocol

from ..config.options import EXIT_DRAIN
from ..errors import VectorStoreError
from ..pools import Changes, on_exit

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage
    from ..storage.records import StoredMessage


class Backlog(Protocol):
    """What the writer drains: an index over storage whose unembedded messages it embeds
    (`RecallIndex`; typed here so the writer does not import the index that owns it)."""

    storage: MemoryStorage

    def index(self, stored: Sequence[StoredMessage], *, replace: bool = False) -> int: ...

    def forget(
        self, *, message_ids: Sequence[str] = (), resource_id: str | None = None
    ) -> None: ...


logger = logging.getLogger(__name__)
BATCH = 200
UNNAMED = ""  # what a notify without message ids queues: only a whole drain settles it
# a read of storage's whole backlog, whoever stored it (at start, when idle, for a flush): a
# flush waits for it, `wait_written` does not (a search waits for what this process saved)
SWEEP = "\0sweep"
SWEEP_EVERY = 60.0  # seconds between reads of storage's whole backlog
LINGER = 1.0  # seconds a drain waits for more saves while no search or flush needs them
RETRY = (1.0, 30.0)  # after a failed drain, the backlog is tried again: first after, at most
EXIT_BATCH = 32  # messages a batch at exit: the deadline is overrun by one batch at most
EXIT_GRACE = 5.0  # seconds the batch under way at that deadline may take before it is left


@dataclass(frozen=True)
class VectorBacklog:
    """The embedding backlog as it stands: messages stored but not yet in the vector store
    (`pending`), and why the last write failed (`last_error`; None: it did not)."""

    pending: int
    last_error: str | None = None


class BacklogWriter:
    """Drains `index`'s backlog in a daemon thread; `flush` waits for it.

    Examples:
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"), options={"semantic_recall": True})
        >>> memory.flush()  # nothing queued: returns at once
        True
    """

    def __init__(self, index: Backlog, *, batch: int = BATCH, linger: float = LINGER) -> None:
        self.index = index
        self.batch = batch
        self.linger = linger
        # the resources whose queued writes a search waits for (None: a flush, all of them):
        # written at once, the others' linger on
        self._wanted: Counter[str | None] = Counter()
        self._since = 0.0  # when the oldest write still queued was queued
        self._owners: dict[str, str] = {}  # queued (or draining) id -> its resource
        self._state = Changes()  # waited on by threads and coroutines alike
        self._dirty = False  # woken and not drained yet
        self._busy = False
        self._queued: set[str] = set()  # ids this process saved, not drained yet
        self._handed: dict[str, StoredMessage] = {}  # ... with the messages as they were saved
        self._swept_at = -float("inf")  # when storage's backlog was last read
        # what the last sweep wrote: a save landing during its read was in it AND handed over
        # for the next drain, which skips it (an update since would have discarded the handover)
        self._swept: set[str] = set()
        self._draining: set[str] = set()  # ... and those of the drain under way
        # ids (and threads) an update or delete touched while a drain was under way: what the
        # drain wrote of them may be stale, so it writes those again from storage once done
        self._overtaken: set[str] = set()
        self._overtaken_threads: set[str] = set()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.exit_drain = EXIT_DRAIN
        self._deadline: float | None = None  # at exit: no batch starts past it
        self.last_error: str | None = None  # why the last drain failed (None: it did not)
        self._told = False  # a search was warned about the failing writes

    def start(self, *, exit_drain: float = EXIT_DRAIN) -> None:
        """Write storage's backlog behind the turn from now on, what earlier (or other)
        processes left in it too: a sweep at once, and one whenever the writer was idle for
        `SWEEP_EVERY`; at interpreter exit, `exit_drain` seconds to write what is queued."""
        self.exit_drain = exit_drain
        self.sweep()

    def sweep(self) -> None:
        """Read storage's whole backlog soon and write it (what other processes left too)."""
        self.notify([SWEEP])

    def notify(
        self, message_ids: Iterable[str] = (), *, stored: Sequence[StoredMessage] = ()
    ) -> None:
        """New messages (`message_ids`, or the `stored` messages themselves; unnamed:
        anything) are in the backlog: embed them soon (once closed: the next start does)."""
        with self._state:
            if self._closed:
                return
            if not self._queued:
                self._since = time.monotonic()
            self._dirty = True
            ids = [*message_ids, *(s.message.id for s in stored if s.message.id)]
            self._queued.update(ids or [UNNAMED])
            self._owners.update((s.message.id, s.resource_id) for s in stored if s.message.id)
            self._handed.update((s.message.id, s) for s in stored if s.message.id)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="lmm-backlog-writer", daemon=True
                )
                self._thread.start()
                on_exit(partial(_drain_at_exit, weakref.ref(self)))
            self._state.notify_all()

    def discard(self, message_ids: Iterable[str] = (), *, thread_id: str | None = None) -> None:
        """Messages updated or deleted here (or a deleted thread's): what was handed over
        for them is stale, so the next drain reads storage instead."""
        with self._state:
            for message_id in message_ids:
                self._handed.pop(message_id, None)
                if self._busy:
                    self._overtaken.add(message_id)
            if thread_id is not None and self._busy:
                self._overtaken_threads.add(thread_id)
            if thread_id is not None:
                for message_id, s in list(self._handed.items()):
                    if s.thread_id == thread_id:
                        del self._handed[message_id]

    def flush(self, timeout: float | None = None, *, everyone: bool = False) -> bool:
        """Wait until what was queued is written (`everyone`: storage's whole backlog, whoever
        stored it, read by a sweep first); False if `timeout` ran out first, or if the
        vector store refused the writes (`last_error` says why; the backlog keeps them)."""
        if everyone:
            self.sweep()
        done = self._waited(self._drained, timeout, None)
        return done and not self._dirty and self.last_error is None

    def recovered(self) -> None:
        """The vector store took writes again (a backfill wrote the backlog)."""
        self.last_error, self._told = None, False

    def warn_if_failing(self) -> None:
        """Before a search: while writes are failing, warn once (until they succeed again)
        that the newest messages cannot be found by meaning."""
        if self.last_error is not None and not self._told:
            self._told = True
            logger.warning(
                "semantic recall: vector writes are failing (%s); searches do not find the "
                "messages in the backlog until they succeed (memory.vector_backlog() tells "
                "how many)",
                self.last_error,
            )

    async def aflush(self, timeout: float | None = None, *, everyone: bool = False) -> bool:
        """Async `flush` (awaited: no thread is held while the writer works)."""
        if everyone:
            self.sweep()
        done = await self._awaited(self._drained, timeout, None)
        return done and not self._dirty and self.last_error is None

    def _drained(self) -> bool:
        """Nothing queued nor under way (or the writer stopped: nothing will be)."""
        return not self._busy and (not self._dirty or self._closed)

    def _settled(self, ignoring: Collection[str], resource_id: str | None) -> Callable[[], bool]:
        """Whether every message this process queued (for `resource_id`, when given) is
        written, those in `ignoring` aside."""

        def waited_for(message_id: str) -> bool:
            if message_id in ignoring or message_id == SWEEP:  # (another process's, maybe)
                return False
            return resource_id is None or self._owners.get(message_id, resource_id) == resource_id

        return lambda: (
            not any(waited_for(i) for pending in (self._queued, self._draining) for i in pending)
        )

    def wait_written(
        self,
        timeout: float | None = None,
        *,
        ignoring: Collection[str] = (),
        resource_id: str | None = None,
    ) -> bool:
        """Wait until the messages this process queued (for `resource_id`: a search finds
        no other resource's) are written, those in `ignoring` aside (a search that never
        returns them need not wait for them); False if `timeout` ran out first."""
        return self._waited(self._settled(ignoring, resource_id), timeout, resource_id)

    async def await_written(
        self,
        timeout: float | None = None,
        *,
        ignoring: Collection[str] = (),
        resource_id: str | None = None,
    ) -> bool:
        """Async `wait_written`: awaited, holding no thread (a thread parked here while the writer
        waits for a query embedding queued behind it would be a circular wait)."""
        return await self._awaited(self._settled(ignoring, resource_id), timeout, resource_id)

    def _waited(self, done: Callable[[], bool], timeout: float | None, wanted: str | None) -> bool:
        """Wait until `done()`; meanwhile `wanted`'s queued writes (None: all) are written at
        once, not after the linger."""
        with self._state:
            if self._wanting(done, wanted):
                return True
            try:
                return self._state.wait_for(done, timeout)
            finally:
                self._unwanted(wanted)

    async def _awaited(
        self, done: Callable[[], bool], timeout: float | None, wanted: str | None
    ) -> bool:
        """Async `_waited` (holds no thread while it waits)."""
        with self._state:
            if self._wanting(done, wanted):
                return True
        try:
            return await self._state.await_for(done, timeout)
        finally:
            with self._state:
                self._unwanted(wanted)

    def _wanting(self, done: Callable[[], bool], wanted: str | None) -> bool:
        """Under the lock: True if `done()` already; else `wanted` is counted as waited for
        (the writer is woken to write it), until `_unwanted`."""
        if done():
            return True
        self._wanted[wanted] += 1
        self._state.notify_all()
        return False

    def _unwanted(self, wanted: str | None) -> None:
        self._wanted[wanted] -= 1
        if not self._wanted[wanted]:
            del self._wanted[wanted]

    def _needed(self, message_id: str) -> bool:
        """Whether a waiter needs this queued write now (an unknown owner's: any waiter)."""
        return (
            None in self._wanted
            or message_id not in self._owners
            or self._owners[message_id] in self._wanted
        )

    def _next_drain(self) -> set[str]:
        """What the drain starting now writes: what waiters need, or all once the oldest has
        lingered `linger` seconds, a batch is full, or the writer closes."""
        deadline = self._since + self.linger
        self._state.wait_for(
            lambda: (
                self._closed
                or len(self._queued) >= self.batch
                or (bool(self._wanted) and any(map(self._needed, self._queued)))
            ),
            max(0.0, deadline - time.monotonic()),
        )
        if self._closed or len(self._queued) >= self.batch or time.monotonic() >= deadline:
            return self._queued
        return {i for i in self._queued if self._needed(i)}

    def close(self, timeout: float | None = 30.0) -> None:
        """Drain what is queued, then stop the thread and wait for it (bounded: a hung
        engine is left behind, its messages stay in the backlog)."""
        self.flush(timeout)
        with self._state:
            self._closed = True
            self._state.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def stop_at_exit(self) -> None:
        """At interpreter exit: `exit_drain` seconds to write what is queued (no batch starts
        past them), then stop; what is left waits in storage's backlog for the next start, and
        one INFO line says how many."""
        with self._state:
            if self._thread is None or self._closed:
                return
            self._deadline = time.monotonic() + self.exit_drain
            self.batch = min(self.batch, EXIT_BATCH)
            self._state.notify_all()
        drained = self.flush(self.exit_drain)
        with self._state:
            self._closed = True
            self._state.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(EXIT_GRACE)  # the batch under way at the deadline
        if drained:
            return
        try:
            left = self.index.storage.count_unembedded()
        except Exception:  # storage closed or gone: nothing to report
            return
        if left:
            logger.info(
                "semantic recall: %d stored messages wait for their vectors; the next Memory "
                "over this storage writes them (memory.flush() or close() before exit writes "
                "them now)",
                left,
            )

    def _out_of_time(self) -> bool:
        """Whether the exit's deadline has passed (no batch starts then)."""
        return self._deadline is not None and time.monotonic() >= self._deadline

    def _run(self) -> None:
        retry_in = RETRY[0]
        while True:
            with self._state:
                if self.last_error is None:
                    retry_in = RETRY[0]
                    if not self._state.wait_for(lambda: self._dirty or self._closed, SWEEP_EVERY):
                        self._queued.add(SWEEP)  # idle: another process's leftovers?
                        self._dirty, self._since = True, time.monotonic() - self.linger
                elif not self._state.wait_for(lambda: self._dirty or self._closed, retry_in):
                    # the store refused the last drain (down, restarting): try the backlog
                    # again by itself, backing off, so it catches up without a new save
                    self._dirty, retry_in = True, min(retry_in * 2, RETRY[1])
                drained = self._next_drain()  # (lingering for more saves to write with them)
                if self._storage_closed():  # by its owner: nothing to write, nor to say
                    self._closed = True
                    self._state.notify_all()
                if self._closed or self._out_of_time():
                    return
                self._busy = True
                self._overtaken, self._overtaken_threads = set(), set()  # (for this drain)
                self._draining, self._queued = drained, self._queued - drained
                self._dirty = bool(self._queued)
                handed = {i: self._handed.pop(i) for i in drained if i in self._handed}
            try:
                written: dict[str, StoredMessage] = {}
                if self._sweep_due(handed):
                    self._swept_at, self._swept = time.monotonic(), set()
                    while not self._out_of_time() and (
                        batch := self.index.storage.unembedded(limit=self.batch)
                    ):
                        self.index.index(batch)
                        written.update((s.message.id or "", s) for s in batch)
                        self._swept.update(s.message.id or "" for s in batch)
                        if len(batch) < self.batch:
                            break
                else:
                    ready = [handed[i] for i in sorted(self._draining - self._swept)]
                    self._swept -= self._draining
                    for start in range(0, len(ready), self.batch):
                        if self._out_of_time():
                            break  # (left in storage's backlog for the next start)
                        self.index.index(ready[start : start + self.batch])
                        written.update(
                            (s.message.id or "", s) for s in ready[start : start + self.batch]
                        )
                self._rewrite_overtaken(written)
                self.recovered()
            except Exception as exc:
                if self._storage_closed():  # closed by its owner meanwhile: stop, quietly
                    with self._state:
                        self._closed = True
                    continue
                self._failed(exc)
            finally:
                with self._state:
                    self._busy = False
                    for message_id in self._draining - self._queued:
                        self._owners.pop(message_id, None)
                    self._draining = set()  # written, or left in the backlog on a failure
                    self._state.notify_all()

    def _storage_closed(self) -> bool:
        """Whether the storage under this writer was closed (by its owner, without the
        memory's `close`): its backlog is out of reach, so the writer stops without a word."""
        return bool(getattr(self.index.storage, "closed", False))

    def _failed(self, exc: Exception) -> None:
        """Say why a drain failed (its messages stay in the backlog): a vector store's refusal
        once (again: at debug level), anything else with its traceback (never silently)."""
        if isinstance(exc, VectorStoreError):
            again, self.last_error = self.last_error == str(exc), str(exc)
            (logger.debug if again else logger.warning)(
                "semantic recall: embeddings not written (%s); they stay in the backlog, "
                "tried again by the writer (after 1 s, backing off to 30 s) and at the next "
                "save; memory.backfill_embeddings() or `langchain-mastra-memory reindex` "
                "write them at once",
                exc,
            )
            return
        self.last_error = f"{type(exc).__name__}: {exc}"
        logger.error("semantic recall: the background writer failed", exc_info=exc)

    def _rewrite_overtaken(self, written: dict[str, StoredMessage]) -> None:
        """Write again, as storage has them now, the messages this drain wrote that an update
        or delete touched meanwhile (the update's own write may have come first); those
        deleted meanwhile lose the vectors this drain gave them."""
        with self._state:
            stale = sorted(
                i
                for i, s in written.items()
                if i in self._overtaken or s.thread_id in self._overtaken_threads
            )
            self._overtaken.difference_update(stale)
        if not stale:
            return
        fresh = self.index.storage.get_messages_by_id(stale)
        if fresh:
            self.index.index(fresh, replace=True)
        gone = set(stale) - {s.message.id for s in fresh}
        for resource_id in sorted({written[i].resource_id for i in gone}):
            owned = sorted(i for i in gone if written[i].resource_id == resource_id)
            self.index.forget(message_ids=owned, resource_id=resource_id)

    def _sweep_due(self, handed: dict[str, StoredMessage]) -> bool:
        """Whether this drain reads storage's backlog rather than what was handed over."""
        return (
            self.last_error is not None
            or time.monotonic() - self._swept_at > SWEEP_EVERY
            or any(i not in handed for i in self._draining)
        )


def _drain_at_exit(ref: weakref.ref[BacklogWriter]) -> None:
    writer = ref()
    if writer is not None:
        writer.stop_at_exit()
