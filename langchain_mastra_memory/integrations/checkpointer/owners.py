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
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from ...errors import ResourceMismatchError, ThreadNotFoundError
from ...threads.ids import explicit_resource_id, resolve_ids, verify_owner
from ...twins import Steps, call
from . import configs
from .configs import root_config
from .first_puts import FirstPuts
from .io import on_saver
from .refs import checkpoint_at

if TYPE_CHECKING:
    from ...conversation.mirroring import ThreadMirror
    from ...memory import Memory
    from ...storage.thread import Thread
    from .refs import MessageRefs


class Owned(Protocol):
    """What the owners' checks need of the checkpointer. Typed here so this module does not
    name the class that uses it."""

    memory: Memory
    mirror: ThreadMirror
    saver: Any
    default_resource_id: str | None
    trust_thread_reads: bool
    _io: Any
    _refs: MessageRefs
    _channel: Any  # `CheckpointMessages`: its cache follows the thread's life too

    def _saw(self, thread_id: str, config: RunnableConfig, found: Any) -> None: ...

    @property
    def _put(self) -> Callable[..., Steps[Any]]: ...  # one put's steps, by its checked owner


CHECKED_KEPT = 10_000  # threads whose last checked checkpoint is remembered, at most


class ThreadOwners:
    """Who owns each thread, checked at every read and write (a part of `MemoryCheckpointer`,
    which holds one; see the module docstring). `checkpointer` gives the parts a check reads
    through (its saver's I/O, the mirror, the lists) and the put it guards (``_put``)."""

    def __init__(self, checkpointer: Owned) -> None:
        self.cp = checkpointer
        self.checked: OrderedDict[tuple[str, str], tuple[str, str]] = OrderedDict()
        self.first_puts = FirstPuts()  # a new thread's puts, one at a time

    # -- checked reads, and the puts that follow them ----------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> Steps[CheckpointTuple | None]:
        """`get_tuple`, once: the saver's checkpoint, then the owner as storage has it now
        (read with the checkpoint's list where memory keeps it); refused when the reader is
        not the owner, None when memory has no such thread (orphaned checkpoints are
        nobody's)."""
        thread_id, resource_id = self.reader(config)
        found = yield from call(self.cp._io.get_tuple, config)
        thread, listed = yield from self.cp._refs.with_thread(thread_id, found)
        owner = self.seen(thread_id, thread)
        if resource_id is not None:
            verify_owner(thread_id, resource_id, owner)
        if owner is None:
            return None
        self.cp._saw(thread_id, config, found)
        if found is not None and resource_id is not None:
            self.check_passed(found.config, resource_id)
        resolved = yield from self.cp._refs.resolved(found, listed=listed)
        return cast("CheckpointTuple | None", configs.stamped(resolved, owner))

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

    def owned_put(self, config: RunnableConfig, *args: Any) -> Steps[RunnableConfig]:
        """`_put`, its owner read left out after a check of its parent (`_follows_check`); a
        thread its first write finds gone (deleted meanwhile, elsewhere) is put again as a
        new one, as an unchecked put would."""
        thread_id, resource_id = self.ids(config)
        trusted = self.cp._refs.enabled and self.follows_check(config, resource_id)
        try:
            if trusted:  # its parent was checked a step ago
                result = yield from self.cp._put(config, *args, owner=resource_id)
            else:
                result = yield from self.read_owner_and_put(config, thread_id, args)
        except ThreadNotFoundError:
            self.forget_checks(thread_id)
            if not trusted:
                raise
            result = yield from self.read_owner_and_put(config, thread_id, args)
        except ResourceMismatchError:
            self.forget_checks(thread_id)
            raise
        self.check_passed(result, resource_id)
        return cast("RunnableConfig", result)

    def read_owner_and_put(
        self, config: RunnableConfig, thread_id: str, args: tuple[Any, ...]
    ) -> Steps[RunnableConfig]:
        """`_put` after reading the owner now; a thread memory does not hold is put by one
        put at a time (`first_puts`), which reads the owner again once it holds the thread."""
        owner = yield from call(self.cp._io.owner, thread_id)  # now: it may have changed hands
        if owner is not None:
            put: RunnableConfig = yield from self.cp._put(config, *args, owner=owner)
            return put
        yield from call(self.first_puts.hold, thread_id)
        try:
            owner = yield from call(self.cp._io.owner, thread_id)  # made meanwhile by another put?
            first: RunnableConfig = yield from self.cp._put(config, *args, owner=owner)
            return first
        finally:
            self.first_puts.release(thread_id)

    def forget_checks(self, thread_id: str) -> None:
        for where in [w for w in self.checked if w[0] == thread_id]:
            del self.checked[where]

    # -- checkpoints nobody owns ---------------------------------------------------------------
    def purge_orphans(self, thread_id: str) -> None:
        """Before a thread memory does not hold gets its first checkpoint: delete checkpoints
        left under that id (its memory thread was deleted elsewhere, by another process or the
        CLI), so the new owner starts empty and never reads the old one's state."""
        if self.cp.saver.get_tuple(root_config(thread_id)):
            self.cp.saver.delete_thread(thread_id)

    async def apurge_orphans(self, thread_id: str) -> None:
        """Async `_purge_orphans`."""
        if await on_saver(self.cp.saver.get_tuple, root_config(thread_id)):
            await on_saver(self.cp.saver.delete_thread, thread_id)

    # -- ids and owners ------------------------------------------------------------------------
    def ids(self, config: RunnableConfig) -> tuple[str, str]:
        """``(thread_id, resource_id)`` by the package's rule (`ids`)."""
        return resolve_ids(config, default_resource_id=self.default_owner())

    def reader(self, config: RunnableConfig) -> tuple[str, str | None]:
        """``(thread_id, resource_id)`` of a read. With ``trust_thread_reads`` a read naming no
        owner (LangGraph Server reading a thread by its id for its state, history or copy,
        after its own auth let the caller reach the thread) is the stored owner's: None."""
        if self.cp.trust_thread_reads and not explicit_resource_id(
            config, default_resource_id=self.default_owner()
        ):
            return self.ids(config)[0], None
        return self.ids(config)

    def default_owner(self) -> str | None:
        """The owner a config naming none gets (the checkpointer's default, else memory's)."""
        return self.cp.default_resource_id or self.cp.memory.default_resource_id

    def seen(self, thread_id: str, thread: Thread | None) -> str | None:
        """The owner storage shows now; the mirror forgets a thread that changed hands or was
        made again since it last looked (None: memory has no such thread)."""
        if self.cp.mirror.observe(thread_id, thread):
            self.cp._channel.forget(thread_id)
        return None if thread is None else thread.resource_id

    def owner(self, thread_id: str) -> str | None:
        """The resource that owns the memory thread now (None: memory has no such thread)."""
        return self.seen(thread_id, self.cp.memory.storage.get_thread(thread_id))

    async def aowner(self, thread_id: str) -> str | None:
        """Async `_owner`."""
        return self.seen(thread_id, await self.cp.memory.storage.aget_thread(thread_id))

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
