"""`WorkingMemoryStore`: working memory on a storage backend (the part `Memory` composes)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage

from ..errors import ConfigurationError
from ..storage.base import MemoryStorage
from ..twins import Steps, call, run_async, run_sync
from .config import WorkingMemoryConfig, apply_update, load_data, working_memory_message


class WorkingMemoryStore:
    """Read and update one kind of working memory, and build the message that injects it.

    Updates are one read-merge-write transaction in storage, so concurrent ones serialize.

    Examples:
        >>> from langchain_mastra_memory import SQLiteStorage, WorkingMemoryConfig
        >>> config = WorkingMemoryConfig.parse({"enabled": True, "schema": {"type": "object"}})
        >>> store = WorkingMemoryStore(SQLiteStorage(":memory:"), config)
        >>> store.update({"city": "Lisbon"}, resource_id="alice")
        {'city': 'Lisbon'}
        >>> store.update({"pets": ["Rex"]}, resource_id="alice")
        {'city': 'Lisbon', 'pets': ['Rex']}
    """

    def __init__(
        self, storage: MemoryStorage, config: WorkingMemoryConfig, *, observed: bool = False
    ) -> None:
        self.storage = storage
        self.config = config
        # the Observer keeps it up to date (the model is shown it, not told to call the tool)
        self.observed = observed

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

    def _get(self, resource_id: str, thread_id: str | None) -> Steps[Any]:
        key = self.thread_key(thread_id)
        stored = yield from call(
            self.storage.get_working_memory, resource_id=resource_id, thread_id=key
        )
        return load_data(self.config, stored)

    def _update(self, value: Any, resource_id: str, thread_id: str | None) -> Steps[Any]:
        stored = yield from call(
            self.storage.modify_working_memory,
            lambda current: apply_update(self.config, current, value),
            resource_id=resource_id,
            thread_id=self.thread_key(thread_id),
        )
        return load_data(self.config, stored)

    def _message(self, resource_id: str, thread_id: str | None) -> Steps[SystemMessage | None]:
        if not self.config.enabled:
            return None
        key = self.thread_key(thread_id)
        if key is not None and (yield from call(self.storage.get_thread, key)) is None:
            return working_memory_message(self.config, None, observed=self.observed)  # (none yet)
        stored = yield from call(
            self.storage.get_working_memory, resource_id=resource_id, thread_id=key
        )
        return working_memory_message(self.config, stored, observed=self.observed)

    def get(self, *, resource_id: str, thread_id: str | None = None) -> Any:
        """The working memory: the Markdown document, or a dict in schema mode (None if unset)."""
        return run_sync(self._get(resource_id, thread_id))

    async def aget(self, *, resource_id: str, thread_id: str | None = None) -> Any:
        """Async `get`."""
        return await run_async(self._get(resource_id, thread_id))

    def update(self, value: Any, *, resource_id: str, thread_id: str | None = None) -> Any:
        """Replace (Markdown) or merge into (schema) the working memory; returns the new value."""
        return run_sync(self._update(value, resource_id, thread_id))

    async def aupdate(self, value: Any, *, resource_id: str, thread_id: str | None = None) -> Any:
        """Async `update`."""
        return await run_async(self._update(value, resource_id, thread_id))

    def message(self, *, resource_id: str, thread_id: str | None = None) -> SystemMessage | None:
        """The tagged system message that injects the memory (None when disabled)."""
        return run_sync(self._message(resource_id, thread_id))

    async def amessage(
        self, *, resource_id: str, thread_id: str | None = None
    ) -> SystemMessage | None:
        """Async `message`."""
        return await run_async(self._message(resource_id, thread_id))
