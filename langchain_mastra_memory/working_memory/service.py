"""`WorkingMemoryStore`: working memory on a storage backend (the part `Memory` composes)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage

from ..errors import ConfigurationError
from ..storage.base import MemoryStorage
from .config import WorkingMemoryConfig
from .prompt import working_memory_message
from .rules import apply_update, load_data


class WorkingMemoryStore:
    """Read and update one kind of working memory, and build the message that injects it.

    Updates are one read-merge-write transaction in storage, so concurrent ones serialize.

    Example:
        >>> from langchain_mastra_memory import SQLiteStorage, WorkingMemoryConfig
        >>> config = WorkingMemoryConfig.parse({"enabled": True, "schema": {"type": "object"}})
        >>> store = WorkingMemoryStore(SQLiteStorage(":memory:"), config)
        >>> store.update({"city": "Lisbon"}, resource_id="alice")
        {'city': 'Lisbon'}
        >>> store.update({"pets": ["Rex"]}, resource_id="alice")
        {'city': 'Lisbon', 'pets': ['Rex']}
    """

    def __init__(self, storage: MemoryStorage, config: WorkingMemoryConfig) -> None:
        self.storage = storage
        self.config = config

    def thread_key(self, thread_id: str | None) -> str | None:
        """The thread the memory belongs to (None in resource scope); errors when disabled."""
        if not self.config.enabled:
            raise ConfigurationError(
                "working memory is not enabled: pass "
                'options={"working_memory": {"enabled": True}} to Memory'
            )
        if self.config.scope == "resource":
            return None
        if thread_id is None:
            raise ConfigurationError("working memory has scope 'thread': give thread_id")
        return thread_id

    def get(self, *, resource_id: str, thread_id: str | None = None) -> Any:
        """The working memory: the Markdown document, or a dict in schema mode (None if unset)."""
        stored = self.storage.get_working_memory(
            resource_id=resource_id, thread_id=self.thread_key(thread_id)
        )
        return load_data(self.config, stored)

    async def aget(self, *, resource_id: str, thread_id: str | None = None) -> Any:
        """Async `get`."""
        stored = await self.storage.aget_working_memory(
            resource_id=resource_id, thread_id=self.thread_key(thread_id)
        )
        return load_data(self.config, stored)

    def update(self, value: Any, *, resource_id: str, thread_id: str | None = None) -> Any:
        """Replace (Markdown) or merge into (schema) the working memory; returns the new value."""
        stored = self.storage.modify_working_memory(
            lambda current: apply_update(self.config, current, value),
            resource_id=resource_id,
            thread_id=self.thread_key(thread_id),
        )
        return load_data(self.config, stored)

    async def aupdate(self, value: Any, *, resource_id: str, thread_id: str | None = None) -> Any:
        """Async `update`."""
        stored = await self.storage.amodify_working_memory(
            lambda current: apply_update(self.config, current, value),
            resource_id=resource_id,
            thread_id=self.thread_key(thread_id),
        )
        return load_data(self.config, stored)

    def message(self, *, resource_id: str, thread_id: str | None = None) -> SystemMessage | None:
        """The tagged system message that injects the memory (None when disabled)."""
        if not self.config.enabled:
            return None
        key = self.thread_key(thread_id)
        if key is not None and self.storage.get_thread(key) is None:
            return working_memory_message(self.config, None)  # a new thread has none yet
        stored = self.storage.get_working_memory(resource_id=resource_id, thread_id=key)
        return working_memory_message(self.config, stored)

    async def amessage(
        self, *, resource_id: str, thread_id: str | None = None
    ) -> SystemMessage | None:
        """Async `message`."""
        if not self.config.enabled:
            return None
        key = self.thread_key(thread_id)
        if key is not None and await self.storage.aget_thread(key) is None:
            return working_memory_message(self.config, None)
        stored = await self.storage.aget_working_memory(resource_id=resource_id, thread_id=key)
        return working_memory_message(self.config, stored)
