"""`Memory`: the front door that ties storage, options and processors together."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig

from .errors import ConfigurationError, ThreadExistsError, ThreadNotFoundError
from .ids import resolve_ids
from .memory_working import WorkingMemoryMethods
from .options import MemoryOptions
from .provider_rules import provider_safe
from .recall_index import RecallIndex
from .storage.base import UNSET, MemoryStorage
from .storage.records import check_id
from .storage.sqlite import SQLiteStorage
from .thread import Thread
from .turn import to_save
from .working_memory import TOOL_NAME, WorkingMemoryConfig

if TYPE_CHECKING:
    from .chat_history import MemoryChatMessageHistory
    from .checkpointer import MemoryCheckpointer

DEFAULT_DATABASE = "memory.db"
logger = logging.getLogger("langchain_mastra_memory")


def _messages(stored: Sequence[Any]) -> list[BaseMessage]:
    return [s.message for s in stored]


class Memory(WorkingMemoryMethods):
    """Agent memory: threads and messages in storage, recalled through processors.

    With no arguments the storage is a SQLite file ``memory.db`` in the current directory
    (Mastra's default, ``file:memory.db``); pass ``SQLiteStorage(path)`` or ``":memory:"`` to
    choose. Every method has an ``a``-prefixed async twin.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"), options={"last_messages": 2})
        >>> _ = memory.create_thread(resource_id="alice", thread_id="t1")
        >>> _ = memory.save_messages(
        ...     [HumanMessage("hi"), AIMessage("hello"), HumanMessage("bye")],
        ...     thread_id="t1", resource_id="alice")
        >>> [m.content for m in memory.recall(thread_id="t1", resource_id="alice")]
        ['hello', 'bye']
    """

    def __init__(
        self,
        *,
        storage: MemoryStorage | None = None,
        vector: Any = None,
        embedder: Any = None,
        options: MemoryOptions | dict[str, Any] | None = None,
        processors: Sequence[Runnable[Any, Any]] = (),
        default_resource_id: str | None = None,
    ) -> None:
        self.options = MemoryOptions.parse(options)
        self.default_resource_id = default_resource_id
        self.storage: MemoryStorage = storage or SQLiteStorage(Path(DEFAULT_DATABASE))
        self.recall_index: RecallIndex | None = None
        if self.options.semantic_recall:
            self.recall_index = RecallIndex(
                self.storage, self.options.semantic_recall, vector, embedder
            )
            vector, embedder = self.recall_index.vector, self.recall_index.embedder
        self.vector = vector
        self.embedder = embedder
        self.processors = list(processors)
        warn_if_limiter_not_last(self.processors)
        self.working_memory = WorkingMemoryConfig.parse(self.options.working_memory)

    def __repr__(self) -> str:
        return f"Memory(storage={self.storage!r}, options={self.options!r})"

    def ids(self, config: RunnableConfig | None, *, context: Any = None) -> tuple[str, str]:
        """``(thread_id, resource_id)`` of a call, by the package's one rule (see `ids`):
        configurable ``resource_id``, ``user_id``, the runtime context, `default_resource_id`,
        else the thread id itself."""
        return resolve_ids(config, default_resource_id=self.default_resource_id, context=context)

    # -- threads -------------------------------------------------------------------------------
    def create_thread(
        self,
        *,
        resource_id: str,
        thread_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        """Create a thread for `resource_id` (a new id when `thread_id` is None)."""
        return self.storage.create_thread(
            thread_id=thread_id or str(uuid.uuid4()),
            resource_id=resource_id,
            title=title,
            metadata=metadata,
        )

    async def acreate_thread(
        self,
        *,
        resource_id: str,
        thread_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        """Async `create_thread`."""
        return await self.storage.acreate_thread(
            thread_id=thread_id or str(uuid.uuid4()),
            resource_id=resource_id,
            title=title,
            metadata=metadata,
        )

    def get_thread(self, thread_id: str, *, resource_id: str | None = None) -> Thread | None:
        """The thread, or None. With `resource_id`, a thread of another resource is None too."""
        thread = self.storage.get_thread(thread_id)
        return _visible(thread, resource_id)

    async def aget_thread(self, thread_id: str, *, resource_id: str | None = None) -> Thread | None:
        """Async `get_thread`."""
        return _visible(await self.storage.aget_thread(thread_id), resource_id)

    def ensure_thread(self, *, thread_id: str, resource_id: str) -> Thread:
        """Get the thread, creating it for `resource_id` if it does not exist yet."""
        thread = self.storage.get_thread(check_id(thread_id, "thread_id"))
        if thread is None:
            try:
                return self.storage.create_thread(thread_id=thread_id, resource_id=resource_id)
            except ThreadExistsError:  # created by someone else meanwhile
                thread = self.storage.get_thread(thread_id)
        return _owned(thread, thread_id, resource_id)

    async def aensure_thread(self, *, thread_id: str, resource_id: str) -> Thread:
        """Async `ensure_thread`."""
        thread = await self.storage.aget_thread(check_id(thread_id, "thread_id"))
        if thread is None:
            try:
                return await self.storage.acreate_thread(
                    thread_id=thread_id, resource_id=resource_id
                )
            except ThreadExistsError:
                thread = await self.storage.aget_thread(thread_id)
        return _owned(thread, thread_id, resource_id)

    def list_threads(self, **filters: Any) -> list[Thread]:
        """Threads filtered by `resource_id` and `metadata`, ordered and paged (see storage)."""
        return self.storage.list_threads(**filters)

    async def alist_threads(self, **filters: Any) -> list[Thread]:
        """Async `list_threads`."""
        return await self.storage.alist_threads(**filters)

    def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, Any] | None = None,
        resource_id: str | None = None,
    ) -> Thread:
        """Set the title and/or merge keys into the metadata."""
        return self.storage.update_thread(
            thread_id, title=title, metadata=metadata, resource_id=resource_id
        )

    async def aupdate_thread(
        self,
        thread_id: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, Any] | None = None,
        resource_id: str | None = None,
    ) -> Thread:
        """Async `update_thread`."""
        return await self.storage.aupdate_thread(
            thread_id, title=title, metadata=metadata, resource_id=resource_id
        )

    def delete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        """Delete a thread with its messages (and their vectors); False if it did not exist."""
        deleted = self.storage.delete_thread(thread_id, resource_id=resource_id)
        if deleted and self.recall_index:
            self.recall_index.forget(thread_id=thread_id)
        return deleted

    async def adelete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        """Async `delete_thread`."""
        deleted = await self.storage.adelete_thread(thread_id, resource_id=resource_id)
        if deleted and self.recall_index:
            await self.recall_index.aforget(thread_id=thread_id)
        return deleted

    def clone_thread(
        self,
        thread_id: str,
        *,
        new_thread_id: str | None = None,
        resource_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        """Copy a thread and its messages (with new ids) under the same resource."""
        thread, _ = self.storage.clone_thread(
            thread_id,
            new_thread_id=new_thread_id or str(uuid.uuid4()),
            resource_id=resource_id,
            title=title,
            metadata=metadata,
        )
        return thread

    async def aclone_thread(
        self,
        thread_id: str,
        *,
        new_thread_id: str | None = None,
        resource_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        """Async `clone_thread`."""
        thread, _ = await self.storage.aclone_thread(
            thread_id,
            new_thread_id=new_thread_id or str(uuid.uuid4()),
            resource_id=resource_id,
            title=title,
            metadata=metadata,
        )
        return thread

    # -- messages ------------------------------------------------------------------------------
    def save_messages(
        self,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str,
        created_at: Sequence[datetime | None] | None = None,
    ) -> list[BaseMessage]:
        """Save messages to an existing thread of `resource_id`; returns them with ids.

        `created_at` (one per message) keeps original times, e.g. on import. With semantic
        recall on, user and assistant messages are embedded in one batch.
        """
        stored = self.storage.save_messages(
            messages, thread_id=thread_id, resource_id=resource_id, created_at=created_at
        )
        if self.recall_index:
            self.recall_index.after_save(stored)
        return _messages(stored)

    async def asave_messages(
        self,
        messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str,
        created_at: Sequence[datetime | None] | None = None,
    ) -> list[BaseMessage]:
        """Async `save_messages`."""
        stored = await self.storage.asave_messages(
            messages, thread_id=thread_id, resource_id=resource_id, created_at=created_at
        )
        if self.recall_index:
            await self.recall_index.aafter_save(stored)
        return _messages(stored)

    def get_messages(
        self, *, thread_id: str, last_messages: int | None = None, resource_id: str | None = None
    ) -> list[BaseMessage]:
        """The thread's messages in chronological order; with `last_messages`, the newest N."""
        return _messages(
            self.storage.list_messages(thread_id, last=last_messages, resource_id=resource_id)
        )

    async def aget_messages(
        self, *, thread_id: str, last_messages: int | None = None, resource_id: str | None = None
    ) -> list[BaseMessage]:
        """Async `get_messages`."""
        stored = await self.storage.alist_messages(
            thread_id, last=last_messages, resource_id=resource_id
        )
        return _messages(stored)

    def recall(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        new_messages: Sequence[BaseMessage] = (),
        history: Sequence[BaseMessage] | None = None,
    ) -> list[BaseMessage]:
        """The remembered context of a thread: recalled messages, the newest ``last_messages``,
        then the processors.

        With semantic recall on, messages relevant to the last human message of `new_messages`
        come first (other threads' as one system message). The processors run in order on the
        remembered messages only; `new_messages` (this turn's input) are never changed or
        returned, but reach them as an option so a `TokenLimiter` counts them first, as in Mastra.
        `history` replaces the stored history (a LangGraph state already holds it).
        """
        last = self.options.last_messages
        if history is not None:
            messages = _newest(history, last)
        elif last is False:
            messages = []
        else:
            try:
                stored = self.storage.list_messages(
                    thread_id, last=last + len(new_messages), resource_id=resource_id
                )
            except ThreadNotFoundError:
                stored = []
            messages = _history(stored, new_messages, last)
        if self.recall_index:
            owner = resource_id or self._owner(thread_id)
            messages = (
                self.recall_index.recalled(thread_id, owner, messages, new_messages) + messages
            )
        for step in self._recall_steps():
            messages = step.invoke(messages, **_processor_opts(step, new_messages))
        return messages

    async def arecall(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        new_messages: Sequence[BaseMessage] = (),
        history: Sequence[BaseMessage] | None = None,
    ) -> list[BaseMessage]:
        """Async `recall`."""
        last = self.options.last_messages
        if history is not None:
            messages = _newest(history, last)
        elif last is False:
            messages = []
        else:
            try:
                stored = await self.storage.alist_messages(
                    thread_id, last=last + len(new_messages), resource_id=resource_id
                )
            except ThreadNotFoundError:
                stored = []
            messages = _history(stored, new_messages, last)
        if self.recall_index:
            owner = resource_id or self._owner(thread_id)
            recalled = await self.recall_index.arecalled(thread_id, owner, messages, new_messages)
            messages = recalled + messages
        for step in self._recall_steps():
            messages = await step.ainvoke(messages, **_processor_opts(step, new_messages))
        return messages

    def _owner(self, thread_id: str) -> str:
        thread = self.storage.get_thread(thread_id)
        if thread is None:
            raise ThreadNotFoundError(f"no thread {thread_id!r}")
        return thread.resource_id

    def backfill_embeddings(self) -> int:
        """Embed every message whose vector is missing; returns how many were written."""
        if not self.recall_index:
            raise ConfigurationError("semantic recall is not enabled")
        return self.recall_index.processor.backfill()

    def _recall_steps(self) -> list[Runnable[Any, Any]]:
        """The user's processors, after hiding working-memory tool traffic (as Mastra does)."""
        if not self.working_memory.enabled:
            return self.processors
        from .processors import ToolCallFilter

        return [ToolCallFilter(exclude=[TOOL_NAME]), *self.processors]

    def update_messages(
        self, messages: Sequence[BaseMessage], *, resource_id: str | None = None
    ) -> list[BaseMessage]:
        """Replace stored messages by id (content, tool calls, metadata); re-embeds them."""
        stored = self.storage.update_messages(messages, resource_id=resource_id)
        if self.recall_index:
            self.recall_index.after_save(stored)
        return _messages(stored)

    async def aupdate_messages(
        self, messages: Sequence[BaseMessage], *, resource_id: str | None = None
    ) -> list[BaseMessage]:
        """Async `update_messages`."""
        stored = await self.storage.aupdate_messages(messages, resource_id=resource_id)
        if self.recall_index:
            await self.recall_index.aafter_save(stored)
        return _messages(stored)

    def delete_messages(self, message_ids: Sequence[str], *, resource_id: str | None = None) -> int:
        """Delete messages (and their vectors) by id; returns how many were deleted."""
        count = self.storage.delete_messages(message_ids, resource_id=resource_id)
        if self.recall_index:
            self.recall_index.forget(message_ids=message_ids)
        return count

    async def adelete_messages(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> int:
        """Async `delete_messages`."""
        count = await self.storage.adelete_messages(message_ids, resource_id=resource_id)
        if self.recall_index:
            await self.recall_index.aforget(message_ids=message_ids)
        return count

    # -- the turn ------------------------------------------------------------------------------
    def context(
        self,
        new_messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage] | None = None,
    ) -> list[BaseMessage]:
        """The messages to send for a turn: working memory, recall, history, then the input.

        `new_messages` is the current turn (the user's message and, in an agent loop, the tool
        traffic since); processors never touch it. `history` replaces the stored history (a
        graph state already holds it); None or empty reads it from storage. The result is a
        sequence OpenAI and Anthropic accept (`provider_rules.provider_safe`).
        """
        injected = self.working_memory_message(resource_id=resource_id, thread_id=thread_id)
        remembered = self.recall(
            thread_id=thread_id, resource_id=resource_id, new_messages=new_messages, history=history
        )
        return provider_safe([*([injected] if injected else []), *remembered], new_messages)

    async def acontext(
        self,
        new_messages: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage] | None = None,
    ) -> list[BaseMessage]:
        """Async `context`."""
        injected = await self.aworking_memory_message(resource_id=resource_id, thread_id=thread_id)
        remembered = await self.arecall(
            thread_id=thread_id, resource_id=resource_id, new_messages=new_messages, history=history
        )
        return provider_safe([*([injected] if injected else []), *remembered], new_messages)

    def save_turn(
        self, messages: Sequence[BaseMessage], *, thread_id: str, resource_id: str
    ) -> list[BaseMessage]:
        """Save a turn (creating the thread on first use), skipping what memory injected."""
        self.ensure_thread(thread_id=thread_id, resource_id=resource_id)
        return self.save_messages(to_save(messages), thread_id=thread_id, resource_id=resource_id)

    async def asave_turn(
        self, messages: Sequence[BaseMessage], *, thread_id: str, resource_id: str
    ) -> list[BaseMessage]:
        """Async `save_turn`."""
        await self.aensure_thread(thread_id=thread_id, resource_id=resource_id)
        return await self.asave_messages(
            to_save(messages), thread_id=thread_id, resource_id=resource_id
        )

    def save_new(
        self, messages: Sequence[BaseMessage], *, thread_id: str, resource_id: str
    ) -> list[BaseMessage]:
        """Save the messages (of a graph state, say) that this thread does not hold yet."""
        self.ensure_thread(thread_id=thread_id, resource_id=resource_id)
        ids = [m.id for m in messages if m.id]
        held = {s.message.id for s in self.storage.get_messages_by_id(ids, resource_id=resource_id)}
        fresh = [m for m in messages if m.id is None or m.id not in held]
        return self.save_turn(fresh, thread_id=thread_id, resource_id=resource_id) if fresh else []

    async def asave_new(
        self, messages: Sequence[BaseMessage], *, thread_id: str, resource_id: str
    ) -> list[BaseMessage]:
        """Async `save_new`."""
        await self.aensure_thread(thread_id=thread_id, resource_id=resource_id)
        ids = [m.id for m in messages if m.id]
        stored = await self.storage.aget_messages_by_id(ids, resource_id=resource_id)
        held = {s.message.id for s in stored}
        fresh = [m for m in messages if m.id is None or m.id not in held]
        if not fresh:
            return []
        return await self.asave_turn(fresh, thread_id=thread_id, resource_id=resource_id)

    def as_runnable(self) -> Runnable[Any, list[BaseMessage]]:
        """LCEL: ``{"input": str | messages}`` (or messages) -> the messages to send.

        Reads ``thread_id``/``resource_id`` from ``config["configurable"]``; saves nothing.
        """
        from .lcel import context_runnable

        return context_runnable(self)

    def wrap(self, runnable: Runnable[Any, Any]) -> Runnable[Any, Any]:
        """Put memory around a chat model or chain: assemble, call, save the turn.

        ``invoke``/``ainvoke`` and ``stream``/``astream`` pass through; a streamed turn is saved
        when the stream ends.
        """
        from .lcel import MemoryWrapped

        return MemoryWrapped(self, runnable)

    # -- shapes --------------------------------------------------------------------------------
    def pre_model_hook(self, *, key: str = "messages") -> Runnable[Any, dict[str, Any]]:
        """LangGraph ``pre_model_hook`` / node: ``{"llm_input_messages": context}``."""
        from .graph import memory_hook

        return memory_hook(self, key=key)

    def as_node(
        self, *, key: str = "messages", output_key: str = "llm_input_messages"
    ) -> Runnable[Any, dict[str, Any]]:
        """A graph node writing the model's input to `output_key` (the state is not rewritten)."""
        from .graph import memory_hook

        return memory_hook(self, key=key, output_key=output_key)

    def middleware(self) -> Any:
        """A ``langchain.agents`` middleware applying memory before and saving after each call."""
        from .middleware import MemoryMiddleware

        return MemoryMiddleware(self)

    def checkpointer(
        self,
        saver: Any = None,
        *,
        messages_key: str = "messages",
        default_resource_id: str | None = None,
    ) -> MemoryCheckpointer:
        """A LangGraph checkpointer around `saver` (default: SQLite on this database, or
        in memory) that mirrors each thread's messages into this memory."""
        from .checkpointer import MemoryCheckpointer

        if default_resource_id is not None:
            if self.default_resource_id not in (None, default_resource_id):
                msg = (
                    f"checkpointer(default_resource_id={default_resource_id!r}) disagrees with "
                    f"Memory(default_resource_id={self.default_resource_id!r})"
                )
                raise ConfigurationError(msg)
            self.default_resource_id = default_resource_id  # the hook and middleware use it too
        return MemoryCheckpointer(
            self, saver, messages_key=messages_key, default_resource_id=default_resource_id
        )

    def chat_history(self, *, thread_id: str, resource_id: str) -> MemoryChatMessageHistory:
        """A `BaseChatMessageHistory` over one thread (created on the first message)."""
        from .chat_history import MemoryChatMessageHistory

        return MemoryChatMessageHistory(self, thread_id=thread_id, resource_id=resource_id)


def _history(stored: Sequence[Any], current: Sequence[BaseMessage], last: int) -> list[BaseMessage]:
    """The newest `last` stored messages that are not part of the current turn (a graph may
    have saved the turn's first messages already)."""
    current_ids = {m.id for m in current if m.id}
    return _newest([s.message for s in stored if s.message.id not in current_ids], last)


def _newest(messages: Sequence[BaseMessage], last: int | bool) -> list[BaseMessage]:
    if last is False:
        return []
    return list(messages[-last:]) if last else []


_warned: set[str] = set()


def warn_if_limiter_not_last(processors: Sequence[Runnable[Any, Any]]) -> None:
    """Log once when a TokenLimiter is followed by other processors.

    The limiter measures the list it is given; a processor after it can add messages (blowing
    the budget) or remove some (wasting it), so it belongs last, as Mastra advises.
    """
    from .processors import TokenLimiter

    positions = [i for i, p in enumerate(processors) if isinstance(p, TokenLimiter)]
    if positions and positions[-1] != len(processors) - 1 and "limiter" not in _warned:
        _warned.add("limiter")
        logger.warning(
            "TokenLimiter is not the last memory processor; processors after it change the "
            "list it measured. Put TokenLimiter last."
        )


def _processor_opts(
    step: Runnable[Any, Any], new_messages: Sequence[BaseMessage]
) -> dict[str, Any]:
    from .processors import MemoryProcessor

    return {"new_messages": list(new_messages)} if isinstance(step, MemoryProcessor) else {}


def _visible(thread: Thread | None, resource_id: str | None) -> Thread | None:
    if thread is None or (resource_id is not None and thread.resource_id != resource_id):
        return None
    return thread


def _owned(thread: Thread | None, thread_id: str, resource_id: str) -> Thread:
    from .errors import ResourceMismatchError

    if thread is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")
    if thread.resource_id != resource_id:
        msg = f"thread {thread_id!r} belongs to another resource than {resource_id!r}"
        raise ResourceMismatchError(msg)
    return thread
