"""One turn, assembled once: `TurnContext` and the pure pieces every integration shape shares.

The context sent to the model is ordered by how often each part changes (SPEC §3), so that a
provider's exact-prefix prompt cache serves most of it: the leading system message (the
caller's instructions, working memory, observations), then the recent history (append-only; its
window drops old messages in blocks, `turn.history`), then this turn's recalled
messages (one fenced message), then the current turn, which no processor touches. The user's
processors shape the history and the recalled block; `provider_rules.provider_safe` then makes
it a sequence OpenAI and Anthropic accept (one leading system message, tool calls and results in
pairs), and `provider_rules.cache_marked` can mark the stable part's end for Anthropic.
``recall_placement="system"`` keeps Mastra's order instead (recalled messages first, other
threads' in the system message). After the model answers, the turn (the new input and what the
model produced, tool traffic included) is saved; messages that memory itself injected are never
saved back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    BaseMessageChunk,
    HumanMessage,
    message_chunk_to_message,
)
from langchain_core.runnables import Runnable

from ..config.call_options import NONE, CallOptions
from ..config.options import MemoryOptions, MessageTokens
from ..errors import ConfigurationError, InvalidMessageError, ThreadNotFoundError
from ..messages import ensure_messages, ids_of
from ..processors import MemoryProcessor, TokenLimiter, ToolCallFilter
from ..provider_rules import cache_marked, provider_safe
from ..recall.index import RecallIndex, RecallOptions
from ..storage.base import MemoryStorage
from ..storage.records import StoredMessage, Thread
from ..tracing import traced
from ..twins import Steps, both, call, run_async, run_sync
from ..working_memory.config import TOOL_NAME as WORKING_MEMORY_TOOL
from ..working_memory.service import WorkingMemoryStore
from .history import BudgetedHistory, newest, stored_history
from .recall_block import assembled_block, last_human_text, recalled_block

if TYPE_CHECKING:
    from ..observational.service import ObservationalMemory

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
        seen = ids_of(sent)
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


class TurnContext:
    """The read side of a turn, for `Memory`: working memory, recall, history, processors,
    then the current turn, made provider-valid (`provider_rules.provider_safe`).

    Each algorithm is written once as steps (`twins`); the sync and async methods run them.
    """

    def __init__(
        self,
        storage: MemoryStorage,
        options: MemoryOptions,
        recall_index: RecallIndex | None,
        working_memory: WorkingMemoryStore,
        processors: Sequence[Runnable[Any, Any]],
        observations: ObservationalMemory | None = None,
    ) -> None:
        self.storage = storage
        self.observations = observations  # with observational memory: the log replaces history
        self.last_messages = options.last_messages
        self.read_only = options.read_only
        self.budget: BudgetedHistory | None = None  # message_tokens (`token_budget`)
        if options.message_tokens is not None:
            cap = options.history_cap()
            self.budget = BudgetedHistory(
                storage,
                MessageTokens.parse(options.message_tokens),  # type: ignore[arg-type]
                None if cap is None else int(cap),
            )
        self.window = options.history_window
        self.placement = options.recall_placement
        self.cache_breakpoints = options.cache_breakpoints
        self.recall_index = recall_index
        self.working_memory = working_memory
        self.processors = self._processors(processors)

    def _processors(self, processors: Sequence[Runnable[Any, Any]]) -> list[Runnable[Any, Any]]:
        """The user's processors, after hiding working-memory tool traffic (as Mastra does)."""
        if not self.working_memory.config.enabled:
            return list(processors)
        return [ToolCallFilter(exclude=[WORKING_MEMORY_TOOL]), *processors]

    # -- the algorithms, once ------------------------------------------------------------------
    def _remembered(
        self,
        thread_id: str,
        resource_id: str | None,
        new: Sequence[BaseMessage],
        history: Sequence[BaseMessage] | None,
        beside: Sequence[BaseMessage] = (),
        read_only: bool = False,
        wanted: CallOptions = NONE,
    ) -> Steps[list[BaseMessage]]:
        """Recalled messages and the history, shaped by the processors (`beside`: what else
        is sent with them, for a token budget: working memory; `read_only`: the thread's
        budget boundary stays where it is, whatever the call's options; `wanted`: the call's
        own options, as the facade read them: `call_options.carried`)."""
        last = self.last_messages if wanted.last_messages is None else wanted.last_messages
        budget = self.budget if self.observations is None else None
        cap = (
            None
            if budget is None
            else (budget.cap if wanted.last_messages is None else int(wanted.last_messages))
        )
        index, options = self._recall_for(wanted)
        if resource_id is None:
            resource_id = owner_of((yield from call(self.storage.get_thread, thread_id)), thread_id)
        found: list[StoredMessage] | None = None  # recalled while the history loaded
        if history is not None and budget is not None:
            messages = yield from budget.of_state(thread_id, history, cap, self.window)
        elif history is not None and self.observations is None:
            messages = newest(history, last, self.window)
        elif last is False and self.observations is None:
            messages = []
        elif index is not None and (query := recall_query((), new)[0]):
            # the turn gives the query: search while the history loads (the two are
            # independent; what the history holds is left out of the recall afterwards)
            # (the search, the longer of the two, runs in this thread: it starts at once)
            found, messages = yield from both(
                call(
                    index.recall,
                    query,
                    resource_id=resource_id,
                    thread_id=thread_id,
                    exclude=set(),
                    never_hits=ids_of(new),
                    options=options,
                ),
                self._history(thread_id, resource_id, new, last, cap),
            )
        else:
            messages = yield from self._history(thread_id, resource_id, new, last, cap)
        recalled: list[BaseMessage] = []
        if found is not None:
            shown = ids_of([*messages, *new])
            found = [s for s in found if s.message.id not in shown]
            recalled = yield from assembled_block(self.storage, found, thread_id, self.placement)
        elif index is not None:
            recalled = yield from self._recalled(thread_id, resource_id, messages, new, options)
        if budget is not None:  # the history within the budget, beside all else that is sent
            sent = [*beside, *recalled, *new]
            read_only = read_only or self.read_only or bool(wanted.read_only)
            messages = yield from budget.fitted(
                thread_id, resource_id, messages, sent, read_only=read_only
            )
        messages = [*messages, *recalled] if self.placement == "end" else [*recalled, *messages]
        for processor in self.processors:
            messages = yield from call(
                processor.invoke, messages, **processor_options(processor, new)
            )
        return messages

    def _history(
        self,
        thread_id: str,
        resource_id: str,
        new: Sequence[BaseMessage],
        last: int | bool,
        cap: int | None = None,
    ) -> Steps[list[BaseMessage]]:
        """The newest `last` stored messages of the thread, without the current turn's (with
        observational memory: the log, then the messages it does not cover yet; with a token
        budget: those after its boundary, `cap` at most)."""
        if self.observations is not None:
            return (yield from self.observations.history(thread_id, resource_id, new))
        try:
            if self.budget is not None:
                return (yield from self.budget.stored(thread_id, resource_id, new, cap))
            return (
                yield from stored_history(
                    self.storage, thread_id, resource_id, int(last), self.window, new
                )
            )
        except ThreadNotFoundError:
            return []

    def _recall_for(self, wanted: CallOptions) -> tuple[RecallIndex | None, RecallOptions | None]:
        """The index a call recalls through (None: no recall) and its own options (None: the
        index's)."""
        if wanted.semantic_recall is False or wanted.semantic_recall is None:
            return (None if wanted.semantic_recall is False else self.recall_index), None
        if self.recall_index is None:
            raise ConfigurationError(
                "memory_options.semantic_recall: this memory has no semantic recall to tune "
                '(enable it with Memory(options={"semantic_recall": True}))'
            )
        options = self.recall_index.options
        base = {**options.model_dump(exclude={"reranker"}), "reranker": options.reranker}
        return self.recall_index, RecallOptions.parse({**base, **wanted.semantic_recall})

    def _recalled(
        self,
        thread_id: str | None,
        resource_id: str,
        history: Sequence[BaseMessage],
        new: Sequence[BaseMessage],
        options: RecallOptions | None = None,
    ) -> Steps[list[BaseMessage]]:
        assert self.recall_index is not None
        query, exclude = recall_query(history, new)
        if not query:
            return []
        return (
            yield from recalled_block(
                self.recall_index,
                self.storage,
                query,
                resource_id=resource_id,
                thread_id=thread_id,
                exclude=exclude,
                never_hits=ids_of(new),
                options=options,
                placement=self.placement,
            )
        )

    def _context(
        self,
        new: Sequence[BaseMessage],
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage] | None,
        read_only: bool = False,
        wanted: CallOptions = NONE,
    ) -> Steps[list[BaseMessage]]:
        new = ensure_messages(new, where="new_messages")  # (a string: a clear error)
        ids = {"thread_id": thread_id, "resource_id": resource_id}
        return (
            yield from traced(
                self._assembled(new, ids, history, read_only, wanted),
                "memory",
                inputs={**ids, "new_messages": list(new)},
                metadata=ids,
                outputs=lambda sent: {"messages": sent},
                attributes={"gen_ai.conversation.id": thread_id},
            )
        )

    def _assembled(
        self,
        new: Sequence[BaseMessage],
        ids: dict[str, str],
        history: Sequence[BaseMessage] | None,
        read_only: bool = False,
        wanted: CallOptions = NONE,
    ) -> Steps[list[BaseMessage]]:
        """The context (`_context`'s, inside its run): `ids` are its thread and resource."""
        injected = yield from traced(
            call(self.working_memory.message, **ids),
            "working_memory",
            inputs=ids,
            metadata=ids,
            outputs=lambda message: {"message": message},
        )
        remembered = yield from self._remembered(
            ids["thread_id"],
            ids["resource_id"],
            new,
            history,
            [injected] if injected else [],
            read_only,
            wanted,
        )
        sent = provider_safe([*([injected] if injected else []), *remembered], new)
        return cache_marked(sent, new) if self.cache_breakpoints else sent

    # -- run sync or async ---------------------------------------------------------------------
    def remembered(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        new_messages: Sequence[BaseMessage] = (),
        history: Sequence[BaseMessage] | None = None,
        memory_options: CallOptions = NONE,
    ) -> list[BaseMessage]:
        """Recalled messages and the history, shaped by the processors (no current turn).
        Without `resource_id`, the thread's owner is looked up."""
        return run_sync(
            self._remembered(thread_id, resource_id, new_messages, history, wanted=memory_options)
        )

    async def aremembered(
        self,
        *,
        thread_id: str,
        resource_id: str | None = None,
        new_messages: Sequence[BaseMessage] = (),
        history: Sequence[BaseMessage] | None = None,
        memory_options: CallOptions = NONE,
    ) -> list[BaseMessage]:
        """Async `remembered`."""
        return await run_async(
            self._remembered(thread_id, resource_id, new_messages, history, wanted=memory_options)
        )

    def recalled(
        self,
        thread_id: str | None,
        resource_id: str,
        history: Sequence[BaseMessage],
        new: Sequence[BaseMessage],
    ) -> list[BaseMessage]:
        """What semantic recall adds for the last human message of `new` (or of `history`)."""
        return run_sync(self._recalled(thread_id, resource_id, history, new))

    def context(
        self,
        new: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage] | None = None,
        read_only: bool = False,
        memory_options: CallOptions = NONE,
    ) -> list[BaseMessage]:
        """The messages to send for a turn (`memory_options`: the call's own)."""
        return run_sync(
            self._context(new, thread_id, resource_id, history, read_only, memory_options)
        )

    async def acontext(
        self,
        new: Sequence[BaseMessage],
        *,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage] | None = None,
        read_only: bool = False,
        memory_options: CallOptions = NONE,
    ) -> list[BaseMessage]:
        """Async `context`."""
        return await run_async(
            self._context(new, thread_id, resource_id, history, read_only, memory_options)
        )


def owner_of(thread: Thread | None, thread_id: str) -> str:
    """The resource that owns `thread`; `ThreadNotFoundError` when there is none."""
    if thread is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")
    return thread.resource_id


def recall_query(
    history: Sequence[BaseMessage], new: Sequence[BaseMessage]
) -> tuple[str, set[str]]:
    """The recall query (last human text, '' if blank) and the ids already in the context."""
    query = last_human_text(new) or last_human_text(history)
    return query if query.strip() else "", set(ids_of([*history, *new]))


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
