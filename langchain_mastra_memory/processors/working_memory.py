"""`WorkingMemory`: inject the working memory as a system message."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from ..errors import ConfigurationError
from ..ids import ids_from_options
from ..injected import SOURCE_KEY
from ..storage.base import MemoryStorage
from ..working_memory import WorkingMemoryConfig, instructions
from .base import MemoryProcessor


class WorkingMemory(MemoryProcessor):
    """Put the working memory first, as one system message (instructions, template, data).

    Reads ``thread_id``/``resource_id`` from ``config["configurable"]``. The message is tagged
    (``response_metadata["langchain_mastra_memory"] == "working_memory"``) so that saving a turn
    skips it. With ``read_only=True`` the data is shown without update instructions.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_mastra_memory import SQLiteStorage
        >>> storage = SQLiteStorage(":memory:")
        >>> wm = WorkingMemory(storage, template="# Profile\\n- Name:")
        >>> out = wm.invoke([HumanMessage("hi")], {"configurable": {"resource_id": "alice"}})
        >>> out[0].type, "# Profile" in out[0].content, out[1].content
        ('system', True, 'hi')
    """

    name = "WorkingMemory"

    def __init__(
        self,
        storage: MemoryStorage,
        *,
        template: str | None = None,
        schema: Any = None,
        scope: str = "resource",
        read_only: bool = False,
        config: WorkingMemoryConfig | None = None,
    ) -> None:
        self.storage = storage
        self.config = config or WorkingMemoryConfig.parse(
            {
                "enabled": True,
                "template": template,
                "schema": schema,
                "scope": scope,
                "read_only": read_only,
            }
        )

    def _target(self, opts: dict[str, Any]) -> tuple[str, str | None]:
        thread_id, resource_id = ids_from_options(opts, processor="WorkingMemory")
        if self.config.scope == "thread":
            if not thread_id:
                raise ConfigurationError("WorkingMemory with scope 'thread' needs a thread_id")
            return resource_id, thread_id
        return resource_id, None

    def message(self, data: str | None) -> SystemMessage:
        """The system message for stored working-memory text `data`."""
        return SystemMessage(
            instructions(self.config, data), response_metadata={SOURCE_KEY: "working_memory"}
        )

    def current_message(self, resource_id: str, thread_id: str | None) -> SystemMessage:
        """The message for the stored memory (`thread_id` only in thread scope)."""
        if thread_id is not None and self.storage.get_thread(thread_id) is None:
            return self.message(None)  # a new thread has no memory yet
        data = self.storage.get_working_memory(resource_id=resource_id, thread_id=thread_id)
        return self.message(data)

    async def acurrent_message(self, resource_id: str, thread_id: str | None) -> SystemMessage:
        """Async `current_message`."""
        if thread_id is not None and await self.storage.aget_thread(thread_id) is None:
            return self.message(None)
        data = await self.storage.aget_working_memory(resource_id=resource_id, thread_id=thread_id)
        return self.message(data)

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        return [self.current_message(*self._target(opts)), *messages]

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        return [await self.acurrent_message(*self._target(opts)), *messages]
