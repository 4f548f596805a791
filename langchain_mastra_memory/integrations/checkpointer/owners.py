"""Who owns a checkpointed thread: the ids a config names (the package's rule, `ids`) and the
owner memory holds, checked at every read and write, so another resource's thread is never
returned nor written.

A thread can change hands between two calls of one live checkpointer (``transfer_thread`` in
this process, a delete and a new owner of the id in another process), so no owner is trusted
from an earlier call, with one exception:

- **A read** (`get_tuple`, ``list``) reads the owner as it is now. Where the checkpoint's
  list is memory's, in the same statement as the list (PostgreSQL: one round trip).
- **A put that changes the messages** is checked inside its own first write: the list is
  stored only in a thread of the writer's resource, before the saver is written.
- **A put right after a checked read or write of its very parent checkpoint** in this
  process does not read the owner again: the check a step before stands (`checked`); an
  input checkpoint or a node that only reads writes nothing else. Any other put reads the
  owner first; the puts of a thread memory does not hold yet go one at a time (`first_puts`).

What the checkpointer's mirror knows of a thread (its message ids, its head) belongs to one
incarnation of it, ``(owner, created_at)``: when storage shows another, that knowledge is
dropped.

**One first put at a time** (`FirstPuts`) for a thread memory does not hold yet, in this
process. A thread's first put purges checkpoints an earlier owner of its id left behind
(`SaverIO.purge_orphans`), then makes the memory thread. LangGraph puts a subgraph's
checkpoints from its own executor while the parent's put is still in flight, so two puts of
one thread can both find it unheld: the second one's purge would then delete the first one's
checkpoint. Held from the owner read to the saver's write, the first puts of a thread follow
one another; the second reads the owner again once it holds the thread and finds it made. Both
a worker thread (sync graphs) and an event loop (async ones, which must never block) can
wait, so the lock is a `threading.Lock` an event loop polls for.

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
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from langchain_core.runnables import RunnableConfig

from ...threads.ids import explicit_resource_id, resolve_ids, verify_owner
from .channel import checkpoint_at

if TYPE_CHECKING:
    from ...conversation.mirroring import ThreadMirror
    from ...storage.base import MemoryStorage
    from ...storage.records import Thread
    from .channel import CheckpointMessages

CHECKED_KEPT = 10_000  # threads whose last checked checkpoint is remembered, at most


class ThreadOwners:
    """Who owns each thread, checked at every read and write (a part of `MemoryCheckpointer`,
    which holds one; see the module docstring): the owners in `storage`, what the `mirror` and
    the `channel`'s cache know of a thread dropped when it changed hands, and the owner a config
    naming none gets (`default_owner`, asked each time: memory's default may be set later)."""

    def __init__(
        self,
        storage: MemoryStorage,
        mirror: ThreadMirror,
        channel: CheckpointMessages,
        default_owner: Callable[[], str | None],
        *,
        trust_thread_reads: bool,
    ) -> None:
        self.storage, self.mirror, self.channel = storage, mirror, channel
        self.default_owner = default_owner
        self.trust_thread_reads = trust_thread_reads  # see `reader`
        self.checked: OrderedDict[tuple[str, str], tuple[str, str]] = OrderedDict()
        self.first_puts = FirstPuts()  # a new thread's puts, one at a time

    def check_passed(self, config: RunnableConfig, resource_id: str) -> None:
        """`resource_id` was found to own the checkpoint `config` names, just now."""
        thread_id, ns, checkpoint_id = checkpoint_at(config)
        if checkpoint_id:
            where = (thread_id, ns)
            self.checked[where] = (resource_id, str(checkpoint_id))
            self.checked.move_to_end(where)
            while len(self.checked) > CHECKED_KEPT:
                self.checked.popitem(last=False)

    def follows_check(self, config: RunnableConfig, resource_id: str) -> bool:
        """Whether a put under `config` builds on the checkpoint this process last checked
        `resource_id` owning (its owner need not be read again: see the module's docstring)."""
        thread_id, ns, parent = checkpoint_at(config)
        return bool(parent) and self.checked.get((thread_id, ns)) == (resource_id, str(parent))

    def forget_checks(self, thread_id: str) -> None:
        for where in [w for w in self.checked if w[0] == thread_id]:
            del self.checked[where]

    # -- ids and owners ------------------------------------------------------------------------
    def ids(self, config: RunnableConfig) -> tuple[str, str]:
        """``(thread_id, resource_id)`` by the package's rule (`ids`)."""
        return resolve_ids(config, default_resource_id=self.default_owner())

    def reader(self, config: RunnableConfig) -> tuple[str, str | None]:
        """``(thread_id, resource_id)`` of a read. With ``trust_thread_reads`` a read naming no
        owner (LangGraph Server reading a thread by its id for its state, history or copy,
        after its own auth let the caller reach the thread) is the stored owner's: None."""
        if self.trust_thread_reads and not explicit_resource_id(
            config, default_resource_id=self.default_owner()
        ):
            return self.ids(config)[0], None
        return self.ids(config)

    def seen(self, thread_id: str, thread: Thread | None) -> str | None:
        """The owner storage shows now; the mirror forgets a thread that changed hands or was
        made again since it last looked (None: memory has no such thread)."""
        if self.mirror.observe(thread_id, thread):
            self.channel.forget(thread_id)
        return None if thread is None else thread.resource_id

    def owner(self, thread_id: str) -> str | None:
        """The resource that owns the memory thread now (None: memory has no such thread)."""
        return self.seen(thread_id, self.storage.get_thread(thread_id))

    async def aowner(self, thread_id: str) -> str | None:
        """Async `_owner`."""
        return self.seen(thread_id, await self.storage.aget_thread(thread_id))

    def check_owner(self, thread_id: str, resource_id: str | None) -> str | None:
        """The thread's owner, refused when it is not `resource_id` (None: a trusted read)."""
        owner = self.owner(thread_id)
        if resource_id is not None:
            verify_owner(thread_id, resource_id, owner)
        return owner

    async def acheck_owner(self, thread_id: str, resource_id: str | None) -> str | None:
        owner = await self.aowner(thread_id)
        if resource_id is not None:
            verify_owner(thread_id, resource_id, owner)
        return owner

    def read_target(self, config: RunnableConfig | None) -> tuple[str, str | None] | None:
        """The thread a read names, with the reader's resource (None: no thread named)."""
        if config is None or not (config.get("configurable") or {}).get("thread_id"):
            return None
        return self.reader(config)

    def list_owner(self, config: RunnableConfig | None) -> str | None:
        """For a list without a thread filter: the resource whose threads alone are listed
        (None: the config names no owner, so every thread is listed)."""
        return explicit_resource_id(config, default_resource_id=self.default_owner())


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
