"""`MemoryChatMessageHistory`: one thread as a LangChain `BaseChatMessageHistory`."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from ..config import call_options
from ..errors import ReadOnlyHistoryWarning, ThreadNotFoundError
from ..provider_rules import provider_safe
from ..turn.history import stored_history
from ..twins import Steps, call, run_async, run_sync

if TYPE_CHECKING:
    from ..memory import Memory

_WARNED: weakref.WeakSet[Memory] = weakref.WeakSet()  # memories whose read-only was told


class MemoryChatMessageHistory(BaseChatMessageHistory):
    """The messages of one thread, for `RunnableWithMessageHistory` and friends.

    The thread is created for `resource_id` on the first `add_messages`; a thread that belongs to
    another resource raises `ResourceMismatchError` on every call. `last_messages` limits what
    `messages` returns to the newest N (default: all), in blocks as the memory's
    ``history_window`` says (`turn.history`: at least N, the start still for many
    turns, so a prompt built on it suits a provider's prompt cache). `messages` is what a
    model can take (`provider_rules.provider_safe`): system messages first, tool calls and
    results in whole pairs even where the window cuts one; storage keeps everything as saved.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> history = memory.chat_history(thread_id="t1", resource_id="alice")
        >>> history.add_messages([HumanMessage("hi")])
        >>> [m.content for m in history.messages]
        ['hi']
    """

    def __init__(
        self,
        memory: Memory,
        *,
        thread_id: str,
        resource_id: str,
        last_messages: int | None = None,
    ) -> None:
        self.memory = memory
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.last_messages = last_messages

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The thread's messages, oldest first ([] before the first message)."""
        return provider_safe(self._stored(self.last_messages), [])

    async def aget_messages(self) -> list[BaseMessage]:
        """Async `messages`."""
        return provider_safe(await self._astored(self.last_messages), [])

    def _stored(self, last: int | None) -> list[BaseMessage]:
        return run_sync(self._stored_steps(last))

    async def _astored(self, last: int | None) -> list[BaseMessage]:
        return await run_async(self._stored_steps(last))

    def _stored_steps(self, last: int | None) -> Steps[list[BaseMessage]]:
        try:
            if last is not None:
                return (yield from self._window(last))
            return (
                yield from call(
                    self.memory.get_messages, thread_id=self.thread_id, resource_id=self.resource_id
                )
            )
        except ThreadNotFoundError:
            return []

    def _window(self, last: int) -> Steps[list[BaseMessage]]:
        return stored_history(
            self.memory.storage,
            self.thread_id,
            self.resource_id,
            last,
            self.memory.options.history_window,
        )

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages to the thread (creating it on first use); nothing in a read-only
        run (a read-only memory, or ``memory_options`` in the run's config): it warns once."""
        if not self._read_only():  # (here: its warning names the caller's line)
            run_sync(self._add(messages))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Async `add_messages`."""
        if not self._read_only():
            await run_async(self._add(messages))

    def _add(self, messages: Sequence[BaseMessage]) -> Steps[None]:
        thread_id, resource_id = self.thread_id, self.resource_id
        yield from call(self.memory.ensure_thread, thread_id=thread_id, resource_id=resource_id)
        yield from call(
            self.memory.save_messages, messages, thread_id=thread_id, resource_id=resource_id
        )

    def _read_only(self) -> bool:
        """Whether this run saves nothing; the first time, a warning says so (a history that
        silently keeps nothing is a surprise)."""
        if self.memory.writes.saves_turns(call_options.current()):  # (no config: the run's)
            return False
        if self.memory not in _WARNED:
            _WARNED.add(self.memory)
            warnings.warn(
                f"memory is read-only in this run: the chat history of thread "
                f"{self.thread_id!r} adds nothing (this warning is shown once per Memory)",
                ReadOnlyHistoryWarning,
                stacklevel=3,
            )
        return True

    def clear(self) -> None:
        """Delete every message of the thread (the thread itself stays)."""
        run_sync(self._clear())

    async def aclear(self) -> None:
        """Async `clear`."""
        await run_async(self._clear())

    def _clear(self) -> Steps[None]:
        ids = [m.id for m in (yield from self._stored_steps(None)) if m.id]
        yield from call(self.memory.delete_messages, ids, resource_id=self.resource_id)
