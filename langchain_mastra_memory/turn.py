"""One turn, assembled once: `TurnContext` and the pure pieces every integration shape shares.

The context sent to the model is, in this order (SPEC §3): the working-memory system message,
recalled messages, the recent history, all of which the user's processors shape, then the
current turn, which no processor touches; `provider_rules.provider_safe` then makes it a
sequence OpenAI and Anthropic accept (one leading system message, tool calls and results in
pairs). After the model answers, the turn (the new input and what
the model produced, tool traffic included) is saved; messages that memory itself injected are
never saved back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    BaseMessageChunk,
    HumanMessage,
    message_chunk_to_message,
)
from langchain_core.runnables import Runnable

from .errors import InvalidMessageError, ThreadNotFoundError
from .messages import ensure_messages
from .processors import MemoryProcessor, TokenLimiter, ToolCallFilter
from .processors.semantic_recall import SemanticRecall, last_human_text
from .provider_rules import provider_safe
from .recall.index import RecallIndex
from .storage.base import MemoryStorage
from .storage.records import StoredMessage
from .thread import Thread
from .working_memory.config import TOOL_NAME as WORKING_MEMORY_TOOL
from .working_memory.service import WorkingMemoryStore

logger = logging.getLogger(__name__)


def input_messages(value: Any) -> list[BaseMessage]:
    """The new messages of a turn from ``{"input": str | messages}``, a string, or messages."""
    if isinstance(value, Mapping):
        if "input" in value:
            value = value["input"]
        elif "messages" in value:
            value = value["messages"]
        else:
            raise InvalidMessageError('expected {"input": ...} or {"messages": [...]}')
    if isinstance(value, str):
        return [HumanMessage(value)]
    if isinstance(value, BaseMessage):
        return [value]
    return ensure_messages(value, where="input")


def produced_messages(output: Any, sent: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What a model or chain produced, as messages to save (a string becomes an AIMessage)."""
    if isinstance(output, BaseMessageChunk):
        return [message_chunk_to_message(output)]
    if isinstance(output, BaseMessage):
        return [output]
    if isinstance(output, str):
        return [AIMessage(output)]
    if isinstance(output, Mapping) and "messages" in output:
        seen = {m.id for m in sent if m.id}
        return [m for m in ensure_messages(output["messages"]) if m.id not in seen or m.id is None]
    if isinstance(output, Sequence):
        return ensure_messages(output)
    raise InvalidMessageError(f"cannot save a turn whose output is a {type(output).__name__}")


def split_turn(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """A conversation as (remembered history, current turn).

    The current turn starts at the last human message and holds everything after it, the tool
    traffic of a running agent loop included: processors never filter or drop it. Without a
    human message the whole list is the current turn.
    """
    for cut in range(len(messages) - 1, -1, -1):
        if isinstance(messages[cut], HumanMessage):
            return list(messages[:cut]), list(messages[cut:])
    return [], list(messages)


def newest(messages: Sequence[BaseMessage], last: int | bool) -> list[BaseMessage]:
    """The newest `last` messages (none for ``False`` or 0)."""
    if last is False or not last:
        return []
    return list(messages[-last:])


class TurnContext:
    """The read side of a turn, for `Memory`: working memory, recall, history, processors,
    then the current turn, made provider-valid (`provider_rules.provider_safe`).

    The sync and async paths share every planning step; they differ only in the I/O calls.
    """

    def __init__(
        self,
        storage: MemoryStorage,
        last_messages: int | bool,
        recall_index: RecallIndex | None,
        working_memory: WorkingMemoryStore,
        processors: Sequence[Runnable[Any, Any]],
    ) -> None:
        self.storage = storage
        self.last_messages = last_messages
        self.recall_index = recall_index
        self.working_memory = working_memory
        self.steps = self._steps(processors)

    def _steps(self, processors: Sequence[Runnable[Any, Any]]) -> list[Runnable[Any, Any]]:
        """The user's processors, after hiding working-memory tool traffic (as Mastra does)."""
        if not self.working_memory.config.enabled:
            return list(processors)
        return [ToolCallFilter(exclude=[WORKING_MEMORY_TOOL]), *processors]

    # -- planning (pure) -----------------------------------------------------------------------
    def _stored_window(self, new: Sequence[BaseMessage]) -> int | None:
        """How many stored messages to read (None: use no stored history)."""
        last = self.last_messages
        return None if last is False else int(last) + len(new)

    def _history(
        self, stored: Sequence[StoredMessage], new: Sequence[BaseMessage]
    ) -> list[BaseMessage]:
        """The newest stored messages that are not part of the current turn (a graph may have
        saved the turn's first messages already)."""
        current = {m.id for m in new if m.id}
        return newest(
            [s.message for s in stored if s.message.id not in current], self.last_messages
        )

    def _assemble(
        self,
        injected: BaseMessage | None,
        remembered: list[BaseMessage],
        new: Sequence[BaseMessage],
    ) -> list[BaseMessage]:
        return provider_safe([*([injected] if injected else []), *remembered], new)

    # -- sync ----------------------------------------------------------------------------------
    def remembered(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        new_messages: Sequence[BaseMessage] = (),
        history: Sequence[BaseMessage] | None = None,
    ) -> list[BaseMessage]:
        """Recalled messages and the history, shaped by the processors (no current turn).
        Without `resource_id`, the thread's owner is looked up."""
        new = new_messages
        if resource_id is None:
            resource_id = owner_of(self.storage.get_thread(thread_id), thread_id)
        if history is not None:
            messages = newest(history, self.last_messages)
        elif (window := self._stored_window(new)) is None:
            messages = []
        else:
            try:
                stored = self.storage.list_messages(thread_id, last=window, resource_id=resource_id)
            except ThreadNotFoundError:
                stored = []
            messages = self._history(stored, new)
        if self.recall_index is not None:
            messages = self.recalled(thread_id, resource_id, messages, new) + messages
        for step in self.steps:
            messages = step.invoke(messages, **processor_options(step, new))
        return messages

    def recalled(
        self,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage],
        new: Sequence[BaseMessage],
    ) -> list[BaseMessage]:
        assert self.recall_index is not None
        query, exclude = recall_query(history, new)
        if not query:
            return []
        found = self.recall_index.recall(
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            exclude=exclude,
            never_hits=frozenset(m.id for m in new if m.id),
        )
        titles = {t: _title(self.storage.get_thread(t)) for t in {s.thread_id for s in found}}
        return SemanticRecall.assemble(found, thread_id, titles)

    def context(
        self,
        new: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage] | None = None,
    ) -> list[BaseMessage]:
        """The messages to send for a turn."""
        injected = self.working_memory.message(resource_id=resource_id, thread_id=thread_id)
        remembered = self.remembered(
            thread_id=thread_id, resource_id=resource_id, new_messages=new, history=history
        )
        return self._assemble(injected, remembered, new)

    # -- async: the same steps, awaiting the I/O -----------------------------------------------
    async def aremembered(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        new_messages: Sequence[BaseMessage] = (),
        history: Sequence[BaseMessage] | None = None,
    ) -> list[BaseMessage]:
        """Async `remembered`."""
        new = new_messages
        if resource_id is None:
            resource_id = owner_of(await self.storage.aget_thread(thread_id), thread_id)
        if history is not None:
            messages = newest(history, self.last_messages)
        elif (window := self._stored_window(new)) is None:
            messages = []
        else:
            try:
                stored = await self.storage.alist_messages(
                    thread_id, last=window, resource_id=resource_id
                )
            except ThreadNotFoundError:
                stored = []
            messages = self._history(stored, new)
        if self.recall_index is not None:
            messages = await self.arecalled(thread_id, resource_id, messages, new) + messages
        for step in self.steps:
            messages = await step.ainvoke(messages, **processor_options(step, new))
        return messages

    async def arecalled(
        self,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage],
        new: Sequence[BaseMessage],
    ) -> list[BaseMessage]:
        assert self.recall_index is not None
        query, exclude = recall_query(history, new)
        if not query:
            return []
        found = await self.recall_index.arecall(
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            exclude=exclude,
            never_hits=frozenset(m.id for m in new if m.id),
        )
        titles = {
            t: _title(await self.storage.aget_thread(t)) for t in {s.thread_id for s in found}
        }
        return SemanticRecall.assemble(found, thread_id, titles)

    async def acontext(
        self,
        new: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage] | None = None,
    ) -> list[BaseMessage]:
        """Async `context`."""
        injected = await self.working_memory.amessage(resource_id=resource_id, thread_id=thread_id)
        remembered = await self.aremembered(
            thread_id=thread_id, resource_id=resource_id, new_messages=new, history=history
        )
        return self._assemble(injected, remembered, new)


def owner_of(thread: Thread | None, thread_id: str) -> str:
    """The resource that owns `thread`; `ThreadNotFoundError` when there is none."""
    if thread is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")
    return thread.resource_id


def _title(thread: Thread | None) -> str | None:
    return thread.title if thread else None


def recall_query(
    history: Sequence[BaseMessage], new: Sequence[BaseMessage]
) -> tuple[str, set[str]]:
    """The recall query (last human text, '' if blank) and the ids already in the context."""
    query = last_human_text(new) or last_human_text(history)
    return query if query.strip() else "", {m.id for m in [*history, *new] if m.id}


def processor_options(
    step: Runnable[Any, Any], new_messages: Sequence[BaseMessage]
) -> dict[str, Any]:
    """The current turn reaches memory processors as an option (a `TokenLimiter` counts it
    first, as in Mastra), never as messages to change."""
    return {"new_messages": list(new_messages)} if isinstance(step, MemoryProcessor) else {}


_warned: set[str] = set()


def warn_if_limiter_not_last(processors: Sequence[Runnable[Any, Any]]) -> None:
    """Log once when a TokenLimiter is followed by other processors.

    The limiter measures the list it is given; a processor after it can add messages (blowing
    the budget) or remove some (wasting it), so it belongs last, as Mastra advises.
    """
    positions = [i for i, p in enumerate(processors) if isinstance(p, TokenLimiter)]
    if positions and positions[-1] != len(processors) - 1 and "limiter" not in _warned:
        _warned.add("limiter")
        logger.warning(
            "TokenLimiter is not the last memory processor; processors after it change the "
            "list it measured. Put TokenLimiter last."
        )
