"""Who owns a checkpointed thread: the ids a config names (the package's rule, `ids`) and the
owner memory holds, cached per thread, so a read or a put of another resource's thread is
refused before the saver is touched."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.runnables import RunnableConfig

from ..threads.ids import explicit_resource_id, resolve_ids
from .checkpoint_configs import verify_owner

if TYPE_CHECKING:
    from ..memory import Memory


class ThreadOwners:
    """The ownership half of `MemoryCheckpointer`: ids, owners and their checks."""

    memory: Memory
    default_resource_id: str | None
    _owners: dict[str, str]  # thread -> owning resource, as read from storage

    # -- ids and owners ------------------------------------------------------------------------
    def _ids(self, config: RunnableConfig) -> tuple[str, str]:
        """``(thread_id, resource_id)`` by the package's rule (`ids`)."""
        return resolve_ids(config, default_resource_id=self._default_resource_id())

    def _default_resource_id(self) -> str | None:
        return self.default_resource_id or self.memory.default_resource_id

    def _owner(self, thread_id: str) -> str | None:
        """The resource that owns the memory thread (None: memory has no such thread)."""
        if thread_id not in self._owners:
            thread = self.memory.storage.get_thread(thread_id)
            if thread is None:
                return None
            self._owners[thread_id] = thread.resource_id
        return self._owners[thread_id]

    async def _aowner(self, thread_id: str) -> str | None:
        """Async `_owner`."""
        if thread_id not in self._owners:
            thread = await self.memory.storage.aget_thread(thread_id)
            if thread is None:
                return None
            self._owners[thread_id] = thread.resource_id
        return self._owners[thread_id]

    def _check_owner(self, thread_id: str, resource_id: str) -> None:
        verify_owner(thread_id, resource_id, self._owner(thread_id))

    async def _acheck_owner(self, thread_id: str, resource_id: str) -> None:
        verify_owner(thread_id, resource_id, await self._aowner(thread_id))

    def _read_target(self, config: RunnableConfig | None) -> tuple[str, str] | None:
        """The thread a read names, with the reader's resource (None: no thread named)."""
        if config is None or not (config.get("configurable") or {}).get("thread_id"):
            return None
        return self._ids(config)

    def _list_owner(self, config: RunnableConfig | None) -> str | None:
        """For a list without a thread filter: the resource whose threads alone are listed
        (None: the config names no owner, so every thread is listed)."""
        return explicit_resource_id(config, default_resource_id=self._default_resource_id())
