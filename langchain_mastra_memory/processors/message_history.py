"""`MessageHistory`: the recent messages of the thread in, the new messages saved out."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from ..errors import ConfigurationError, ThreadExistsError
from ..messages import is_injected
from ..storage.base import MemoryStorage
from ..storage.validation import is_count
from ..threads.ids import resolve_ids
from ..twins import Steps, call, run_async, run_sync
from .base import MemoryProcessor


class MessageHistory(MemoryProcessor):
    """Load the newest `last_messages` of the thread before the input (Mastra's MessageHistory).

    Input side: the thread's newest N messages, chronological, without those already in the
    input (by id), then the input. Output side (`save`/`asave`): store the turn's new messages,
    creating the thread for the resource on first use. ``thread_id``/``resource_id`` come from
    ``config["configurable"]``.

    Examples:
        >>> from langchain_core.messages import HumanMessage, AIMessage
        >>> from langchain_mastra_memory import SQLiteStorage
        >>> history = MessageHistory(SQLiteStorage(":memory:"), last_messages=2)
        >>> config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        >>> history.save([HumanMessage("a"), AIMessage("b"), HumanMessage("c")], config)
        >>> [m.content for m in history.invoke([HumanMessage("d")], config)]
        ['b', 'c', 'd']
    """

    name = "MessageHistory"

    def __init__(self, storage: MemoryStorage, *, last_messages: int = 40) -> None:
        if not is_count(last_messages):
            raise ConfigurationError(
                f"last_messages must be a non-negative int, got {last_messages!r}"
            )
        self.storage = storage
        self.last_messages = last_messages

    def _history(self, stored: Sequence[Any], messages: list[BaseMessage]) -> list[BaseMessage]:
        present = {m.id for m in messages if m.id}
        return [s.message for s in stored if s.message.id not in present] + list(messages)

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        return run_sync(self._process(messages, opts))

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        return await run_async(self._process(messages, opts))

    def _process(
        self, messages: list[BaseMessage], opts: dict[str, Any]
    ) -> Steps[list[BaseMessage]]:
        thread_id, resource_id = resolve_ids(opts.get("config"))
        if (yield from call(self.storage.get_thread, thread_id)) is None:
            return list(messages)
        stored = yield from call(
            self.storage.list_messages, thread_id, last=self.last_messages, resource_id=resource_id
        )
        return self._history(stored, messages)

    def save(self, messages: Sequence[BaseMessage], config: Any) -> None:
        """Store the turn's new messages (idempotent by id)."""
        run_sync(self._save(messages, config))

    async def asave(self, messages: Sequence[BaseMessage], config: Any) -> None:
        """Async `save`."""
        await run_async(self._save(messages, config))

    def _save(self, messages: Sequence[BaseMessage], config: Any) -> Steps[None]:
        thread_id, resource_id = resolve_ids(config)
        if (yield from call(self.storage.get_thread, thread_id)) is None:
            with contextlib.suppress(ThreadExistsError):  # created by a concurrent save
                yield from call(
                    self.storage.create_thread, thread_id=thread_id, resource_id=resource_id
                )
        yield from call(
            self.storage.save_messages, _own(messages), thread_id=thread_id, resource_id=resource_id
        )


def _own(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The turn's own messages: never those memory injected."""
    return [m for m in messages if not is_injected(m)]
