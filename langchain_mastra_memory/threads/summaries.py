"""A thread summarized in one call, messages fetched by id, and a quiet point: Mastra 1.x's
``summarizeThread``, ``listMessagesById`` and ``settled``, as a part of `Memory`.

``summarize_thread`` loads the thread's messages newest first, a page at a time, bounded by
``last_messages`` and ``max_input_tokens`` (the newest message always in), and distils them
with the Observer's instructions (plus yours) by the model you give. Nothing is written back:
the summary comes back to you, as in Mastra. With ``resource_id`` the thread must be that
resource's (`ResourceMismatchError` otherwise).

Examples:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> _ = memory.save_turn([HumanMessage("I moved to Lisbon")], thread_id="t", resource_id="a")
    >>> model = FakeListChatModel(responses=["- [high] The user moved to Lisbon."])
    >>> memory.summarize_thread("t", model=model, resource_id="a").summary
    '- [high] The user moved to Lisbon.'
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from typing_extensions import Unpack

from ..config.params import SummaryOptions
from ..errors import ConfigurationError, ThreadNotFoundError
from ..messages import fenced
from ..observational.prompts import OBSERVER_INSTRUCTIONS, transcript, with_instruction
from ..storage.validation import is_count
from ..tokens.counting import TokenCounter
from ..tracing import traced
from ..turn.history import Take, newest_first
from ..twins import Steps, call, run_async, run_sync

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage
    from ..storage.records import StoredMessage
    from ..turn.writes import MemoryWrites

PAGE = 100  # messages read at a time, newest first
SUMMARY_TASK = (
    "Summarize the whole conversation below for whoever reads it next: the observations that "
    "matter, in dense bullet form, newest last."
)


@dataclass(frozen=True)
class ThreadSummary:
    """What `summarize_thread` returns (nothing of it is stored)."""

    thread_id: str
    summary: str
    message_count: int
    usage: dict[str, Any] = field(default_factory=dict)


class ThreadQueries:
    """`Memory`'s summaries, by-id reads and quiet point, over its storage and the writes
    kept in step with recall."""

    def __init__(self, storage: MemoryStorage, writes: MemoryWrites) -> None:
        self.storage = storage
        self.writes = writes

    # -- summarize_thread ------------------------------------------------------------------------
    def summarize_thread(self, thread_id: str, **opts: Unpack[SummaryOptions]) -> ThreadSummary:
        """Summarize a thread in one call with ``model`` (Mastra's ``summarizeThread``)."""
        return run_sync(self._summary(thread_id, **opts))

    async def asummarize_thread(
        self, thread_id: str, **opts: Unpack[SummaryOptions]
    ) -> ThreadSummary:
        """Async `summarize_thread`."""
        return await run_async(self._summary(thread_id, **opts))

    def _summary(
        self,
        thread_id: str,
        *,
        model: Any,
        resource_id: str | None = None,
        instructions: str | None = None,
        last_messages: int | None = None,
        max_input_tokens: int = 1_000_000,
    ) -> Steps[ThreadSummary]:
        if not isinstance(model, BaseChatModel):
            raise ConfigurationError(
                "summarize_thread(model=...) needs a LangChain chat model "
                f"(e.g. ChatOpenAI(model='gpt-4o-mini')), got {type(model).__name__}"
            )
        for name, value in (
            ("last_messages", last_messages),
            ("max_input_tokens", max_input_tokens),
        ):
            if value is not None and not is_count(value, at_least=1):
                msg = f"summarize_thread({name}=...) must be a positive int, got {value!r}"
                raise ConfigurationError(msg)
        stored = yield from self._newest(thread_id, resource_id, last_messages, max_input_tokens)
        messages = [s.message for s in stored]
        system = with_instruction(f"{OBSERVER_INSTRUCTIONS}\n{SUMMARY_TASK}\n", instructions)
        said = transcript(messages, [s.created_at for s in stored])
        prompt = [SystemMessage(system), HumanMessage(fenced("new-messages", said))]
        reply = yield from traced(
            call(model.invoke, prompt),
            "summarize_thread",
            inputs={"thread_id": thread_id, "messages": len(messages)},
            metadata={"thread_id": thread_id, "resource_id": resource_id},
        )
        usage = dict(getattr(reply, "usage_metadata", None) or {})
        return ThreadSummary(thread_id, str(reply.text).strip(), len(messages), usage)

    def _newest(
        self, thread_id: str, resource_id: str | None, last: int | None, budget: int
    ) -> Steps[list[Any]]:
        """The newest stored messages within `last` and `budget` tokens (the newest always),
        oldest first; the thread must exist (and be `resource_id`'s when given)."""
        thread = yield from call(self.storage.get_thread, thread_id)
        if thread is None:
            raise ThreadNotFoundError(f"no thread {thread_id!r}")
        counter, tokens, kept = TokenCounter(), 0.0, 0

        def take(stored: StoredMessage) -> Take:
            nonlocal tokens, kept
            tokens += counter.count(stored.message)
            if kept and (tokens > budget or (last is not None and kept >= last)):
                return Take.STOP
            kept += 1
            return Take.KEEP

        return (yield from newest_first(self.storage, thread_id, resource_id, take, page=PAGE))

    # -- by id -----------------------------------------------------------------------------------
    def list_messages_by_id(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> list[BaseMessage]:
        """The messages with these ids, in thread order; unknown ids (and, with `resource_id`,
        another resource's) are left out (Mastra's ``listMessagesById``)."""
        return run_sync(self._messages_by_id(message_ids, resource_id))

    async def alist_messages_by_id(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> list[BaseMessage]:
        """Async `list_messages_by_id`."""
        return await run_async(self._messages_by_id(message_ids, resource_id))

    def _messages_by_id(
        self, message_ids: Sequence[str], resource_id: str | None
    ) -> Steps[list[BaseMessage]]:
        found = yield from call(
            self.storage.get_messages_by_id, list(message_ids), resource_id=resource_id
        )
        return [s.message for s in found]

    # -- a quiet point ---------------------------------------------------------------------------
    def settled(self, timeout: float | None = None) -> None:
        """Wait until the background work this memory started is done: titles, observations
        and reflections, vectors, and what that work enqueues (Mastra's ``settled``). A job
        that failed does not raise here (its failure was logged; `vector_backlog` says why a
        vector write failed). Call it before closing storage you own."""
        run_sync(self._settled(timeout))

    async def asettled(self, timeout: float | None = None) -> None:
        """Async `settled`."""
        await run_async(self._settled(timeout))

    def _settled(self, timeout: float | None) -> Steps[None]:
        deadline = None if timeout is None else time.monotonic() + timeout
        for _ in range(2):  # the second round joins what the first one's work enqueued
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            yield from call(self.writes.flush, left)
