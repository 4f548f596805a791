"""`WorkingMemory`: inject the working memory as a system message."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from ..errors import ConfigurationError
from ..storage.base import MemoryStorage
from ..threads.ids import ids_from_options
from ..working_memory.config import WorkingMemoryConfig, working_memory_message
from ..working_memory.service import WorkingMemoryStore
from .base import MemoryProcessor


class WorkingMemory(MemoryProcessor):
    """Put the working memory first, as one system message (instructions, template, data).

    Reads ``thread_id``/``resource_id`` from ``config["configurable"]``. The message is tagged
    (``response_metadata["langchain_mastra_memory"] == "working_memory"``) so that saving a turn
    skips it. With ``read_only=True`` the data is shown without update instructions.

    Examples:
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
        config = config or WorkingMemoryConfig.parse(
            {
                "enabled": True,
                "template": template,
                "schema": schema,
                "scope": scope,
                "read_only": read_only,
            }
        )
        self.config = config
        self.store = WorkingMemoryStore(storage, config)

    def message(self, data: str | None) -> SystemMessage:
        """The system message for stored working-memory text `data`."""
        return working_memory_message(self.config, data)

    def _target(self, opts: dict[str, Any]) -> tuple[str, str | None]:
        thread_id, resource_id = ids_from_options(opts, processor="WorkingMemory")
        if self.config.scope == "thread" and not thread_id:
            raise ConfigurationError("WorkingMemory with scope 'thread' needs a thread_id")
        return resource_id, thread_id

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        resource_id, thread_id = self._target(opts)
        found = self.store.message(resource_id=resource_id, thread_id=thread_id)
        return [*_present(found), *messages]

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        resource_id, thread_id = self._target(opts)
        found = await self.store.amessage(resource_id=resource_id, thread_id=thread_id)
        return [*_present(found), *messages]


def _present(message: SystemMessage | None) -> list[BaseMessage]:
    return [message] if message is not None else []
