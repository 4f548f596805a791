"""The working-memory methods of `Memory` (a mixin, to keep each module to one job)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import SystemMessage
from langchain_core.tools import StructuredTool

from .errors import ConfigurationError
from .working_memory import WorkingMemoryConfig, apply_update, load_data

if TYPE_CHECKING:
    from .storage.base import MemoryStorage


class WorkingMemoryMethods:
    """`get/update_working_memory`, the tool and the injected message, for `Memory`."""

    storage: MemoryStorage
    working_memory: WorkingMemoryConfig

    def _working_memory_thread(self, thread_id: str | None) -> str | None:
        if not self.working_memory.enabled:
            raise ConfigurationError(
                "working memory is not enabled: pass "
                'options={"working_memory": {"enabled": True}} to Memory'
            )
        if self.working_memory.scope == "resource":
            return None
        if thread_id is None:
            raise ConfigurationError("working memory has scope 'thread': give thread_id")
        return thread_id

    def get_working_memory(self, *, resource_id: str, thread_id: str | None = None) -> Any:
        """The working memory: the Markdown document, or a dict in schema mode (None if unset)."""
        stored = self.storage.get_working_memory(
            resource_id=resource_id, thread_id=self._working_memory_thread(thread_id)
        )
        return load_data(self.working_memory, stored)

    async def aget_working_memory(self, *, resource_id: str, thread_id: str | None = None) -> Any:
        """Async `get_working_memory`."""
        stored = await self.storage.aget_working_memory(
            resource_id=resource_id, thread_id=self._working_memory_thread(thread_id)
        )
        return load_data(self.working_memory, stored)

    def update_working_memory(
        self, memory: Any, *, resource_id: str, thread_id: str | None = None
    ) -> Any:
        """Replace (Markdown) or merge into (schema) the working memory; returns the new value.

        Raises `WorkingMemoryError` (nothing stored) for an invalid, oversized or erasing update.
        """
        config = self.working_memory
        stored = self.storage.modify_working_memory(
            lambda current: apply_update(config, current, memory),
            resource_id=resource_id,
            thread_id=self._working_memory_thread(thread_id),
        )
        return load_data(config, stored)

    async def aupdate_working_memory(
        self, memory: Any, *, resource_id: str, thread_id: str | None = None
    ) -> Any:
        """Async `update_working_memory`."""
        config = self.working_memory
        stored = await self.storage.amodify_working_memory(
            lambda current: apply_update(config, current, memory),
            resource_id=resource_id,
            thread_id=self._working_memory_thread(thread_id),
        )
        return load_data(config, stored)

    def working_memory_tool(
        self, *, thread_id: str | None = None, resource_id: str | None = None
    ) -> StructuredTool:
        """The ``update_working_memory`` StructuredTool (ids from here or the call's config)."""
        self._working_memory_thread(thread_id or "unknown")
        if self.working_memory.read_only:
            raise ConfigurationError("working memory is read-only: there is no tool to offer")
        from .working_memory_tool import create_working_memory_tool

        return create_working_memory_tool(
            self,  # type: ignore[arg-type]  # always a Memory
            thread_id=thread_id,
            resource_id=resource_id,
        )

    def working_memory_message(
        self, *, resource_id: str, thread_id: str | None = None
    ) -> SystemMessage | None:
        """The system message that injects working memory (None when it is disabled)."""
        if not self.working_memory.enabled:
            return None
        from .processors.working_memory import WorkingMemory

        injector = WorkingMemory(self.storage, config=self.working_memory)
        return injector.current_message(resource_id, self._working_memory_thread(thread_id))

    async def aworking_memory_message(
        self, *, resource_id: str, thread_id: str | None = None
    ) -> SystemMessage | None:
        """Async `working_memory_message`."""
        if not self.working_memory.enabled:
            return None
        from .processors.working_memory import WorkingMemory

        injector = WorkingMemory(self.storage, config=self.working_memory)
        return await injector.acurrent_message(resource_id, self._working_memory_thread(thread_id))
