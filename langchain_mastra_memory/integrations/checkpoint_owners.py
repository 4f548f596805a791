"""Who owns a checkpointed thread: the ids a config names (the package's rule, `ids`) and the
owner memory holds, read from storage at every read and put, so a read or a put of another
resource's thread is refused before the saver is touched.

Nothing about ownership is cached across calls: a thread can change hands between two calls of
one live checkpointer (``transfer_thread`` in this process, a delete and a new owner of the id
in another process), and a cached owner would then answer for the old one. One primary-key
read per call is the price (~20 µs on SQLite). What the checkpointer's mirror knows of a
thread (its message ids, its head) belongs to one incarnation of it, ``(owner, created_at)``:
when storage shows another, that knowledge is dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig

from ..threads.ids import explicit_resource_id, resolve_ids, verify_owner
from .checkpoint_configs import root_config

if TYPE_CHECKING:
    from ..conversation.mirroring import ThreadMirror
    from ..memory import Memory
    from ..threads.thread import Thread


class ThreadOwners:
    """The ownership half of `MemoryCheckpointer`: ids, owners and their checks."""

    memory: Memory
    mirror: ThreadMirror
    default_resource_id: str | None
    trust_thread_reads: bool
    _channel: Any  # `CheckpointMessages`: its cache follows the thread's life too
    saver: Any
    _inner: Any

    # -- checkpoints nobody owns ---------------------------------------------------------------
    def _purge_orphans(self, thread_id: str) -> None:
        """Before a thread memory does not hold gets its first checkpoint: delete checkpoints
        left under that id (its memory thread was deleted elsewhere, by another process or the
        CLI), so the new owner starts empty and never reads the old one's state."""
        if self.saver.get_tuple(root_config(thread_id)):
            self.saver.delete_thread(thread_id)

    async def _apurge_orphans(self, thread_id: str) -> None:
        """Async `_purge_orphans`."""
        if await self._inner("get_tuple", root_config(thread_id)):
            await self._inner("delete_thread", thread_id)

    # -- ids and owners ------------------------------------------------------------------------
    def _ids(self, config: RunnableConfig) -> tuple[str, str]:
        """``(thread_id, resource_id)`` by the package's rule (`ids`)."""
        return resolve_ids(config, default_resource_id=self._default_resource_id())

    def _reader(self, config: RunnableConfig) -> tuple[str, str | None]:
        """``(thread_id, resource_id)`` of a read. With ``trust_thread_reads`` a read naming no
        owner (LangGraph Server reading a thread by its id for its state, history or copy,
        after its own auth let the caller reach the thread) is the stored owner's: None."""
        if self.trust_thread_reads and not explicit_resource_id(
            config, default_resource_id=self._default_resource_id()
        ):
            return self._ids(config)[0], None
        return self._ids(config)

    def _default_resource_id(self) -> str | None:
        return self.default_resource_id or self.memory.default_resource_id

    def _seen(self, thread_id: str, thread: Thread | None) -> str | None:
        """The owner storage shows now; the mirror forgets a thread that changed hands or was
        made again since it last looked (None: memory has no such thread)."""
        if self.mirror.observe(thread_id, thread):
            self._channel.forget(thread_id)
        return None if thread is None else thread.resource_id

    def _owner(self, thread_id: str) -> str | None:
        """The resource that owns the memory thread now (None: memory has no such thread)."""
        return self._seen(thread_id, self.memory.storage.get_thread(thread_id))

    async def _aowner(self, thread_id: str) -> str | None:
        """Async `_owner`."""
        return self._seen(thread_id, await self.memory.storage.aget_thread(thread_id))

    def _check_owner(self, thread_id: str, resource_id: str | None) -> str | None:
        """The thread's owner, refused when it is not `resource_id` (None: a trusted read)."""
        owner = self._owner(thread_id)
        if resource_id is not None:
            verify_owner(thread_id, resource_id, owner)
        return owner

    async def _acheck_owner(self, thread_id: str, resource_id: str | None) -> str | None:
        owner = await self._aowner(thread_id)
        if resource_id is not None:
            verify_owner(thread_id, resource_id, owner)
        return owner

    def _read_target(self, config: RunnableConfig | None) -> tuple[str, str | None] | None:
        """The thread a read names, with the reader's resource (None: no thread named)."""
        if config is None or not (config.get("configurable") or {}).get("thread_id"):
            return None
        return self._reader(config)

    def _list_owner(self, config: RunnableConfig | None) -> str | None:
        """For a list without a thread filter: the resource whose threads alone are listed
        (None: the config names no owner, so every thread is listed)."""
        return explicit_resource_id(config, default_resource_id=self._default_resource_id())
