"""Which of a thread's stored messages a turn shows: by count, in windows that move in blocks,
or by a token budget.

**Windows that move in blocks**, so the start of a context stays put for many turns. A
provider's prompt cache serves the part of a turn's input that starts exactly as the previous
turn's did. A sliding window of the newest N messages (Mastra's rule) starts one message later
every message, so its first message changes every turn and the cache serves nothing past the
system message. A *block* window drops the oldest messages B at a time instead: with K messages
before the current turn it shows the newest ``N + (K - N) mod B`` of them (N to N + B - 1, all K
while K <= N). That is a function of K alone, so no state is kept: every process, shape and
restart computes the same window, and its first message stays the same while B more messages
arrive. The model always sees at least the N messages it was promised.

Examples:
    >>> [shown(k, last=4, block=2) for k in range(3, 10)]
    [3, 4, 5, 4, 5, 4, 5]

**History by a token budget** (Mastra's ``messageTokens``), dropped in chunks behind a boundary.

``message_tokens={"max_tokens": B, "at_max_remove_tokens": R}`` is a budget for what memory
sends: its system blocks (working memory, observations), the recalled messages, the history
and the current turn. While they fit, the history is every remembered message after the
thread's *boundary*. When they do not, at least R tokens (default a quarter of B) of the oldest
remembered messages are dropped, more if it takes more to fit, and the boundary moves past them.
So the history's first message stays put between drops (a provider's prompt cache serves the
start of every turn until the next drop), and the context is never over B unless the current
turn and memory's blocks alone are.

The boundary is the id of the last message dropped, kept in the thread's metadata
(``memory_token_boundary``): every shape (the hook, the middleware, LCEL, a chat history) and
every process reads the same one, from storage. A read-only run computes its own drop and
writes nothing. A tool call and its results are dropped together (a result never stands
without its call). Counts use tiktoken (`TokenCounter`; ``encoding``: the provider's, default
``o200k_base``) by Mastra's rule. ``last_messages`` stays a count cap on top when it is given;
without it the budget alone governs.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> budget = MessageTokens.parse({"max_tokens": 60, "at_max_remove_tokens": 10})
    >>> chat = [HumanMessage(f"question {i}", id=f"h{i}") for i in range(8)]
    >>> kept, dropped = fit(chat, budget, fixed=0.0)
    >>> [m.id for m in dropped], kept[0].id
    (['h0', 'h1', 'h2', 'h3'], 'h4')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from enum import Enum
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ..config.options import MessageTokens as MessageTokens
from ..errors import ThreadNotFoundError
from ..messages import ids_of, tool_call_ids
from ..storage.base import MemoryStorage
from ..storage.records import StoredMessage
from ..tokens.counting import TOKENS_PER_CONVERSATION
from ..twins import Steps, call

HistoryWindow = Literal["blocks", "sliding"]


def block_of(last: int) -> int:
    """The block a window of `last` messages drops at a time: half the window (at least 1), so
    the start moves once per ``last / 2`` messages and the window holds 1.25 `last` on average."""
    return max(1, (last + 1) // 2)


def shown(count: int, *, last: int, block: int) -> int:
    """How many of `count` messages a block window of `last` (dropping `block` at a time)
    shows: all while they fit, then ``last + (count - last) mod block``."""
    if count <= last:
        return count
    return last + (count - last) % block


def newest(
    messages: Sequence[BaseMessage], last: int | bool, window: HistoryWindow = "sliding"
) -> list[BaseMessage]:
    """The newest messages of `messages` a window of `last` shows (none for ``False`` or 0).

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> chat = [HumanMessage(str(i)) for i in range(7)]
        >>> [m.content for m in newest(chat, 4)], [m.content for m in newest(chat, 4, "blocks")]
        (['3', '4', '5', '6'], ['2', '3', '4', '5', '6'])
    """
    if last is False or not last:
        return []
    count = len(messages)
    keep = shown(count, last=last, block=block_of(last)) if window == "blocks" else last
    return list(messages[count - min(keep, count) :])


def stored_history(
    storage: MemoryStorage,
    thread_id: str,
    resource_id: str | None,
    last: int,
    window: HistoryWindow,
    current: Sequence[BaseMessage] = (),
) -> Steps[list[BaseMessage]]:
    """The thread's stored messages a window of `last` shows, oldest first, without the
    `current` turn's (a graph may have saved them already). A block window reads the newest
    page and the thread's count in one query. Run with `twins`."""
    skip = ids_of(current)
    if window == "sliding" or not last:
        stored = yield from call(
            storage.list_messages, thread_id, last=last + len(current), resource_id=resource_id
        )
        return newest([s.message for s in stored if s.message.id not in skip], last)
    block = block_of(last)
    page, total = yield from call(
        storage.page_messages,
        thread_id,
        resource_id=resource_id,
        limit=last + block - 1 + len(current),
        descending=True,
    )
    before = [s.message for s in reversed(page) if s.message.id not in skip]
    count = total - (len(page) - len(before))  # the messages before the current turn
    keep = shown(count, last=last, block=block)
    return before[len(before) - min(keep, len(before)) :]


BOUNDARY_KEY = "memory_token_boundary"


def boundary_of(metadata: Mapping[str, Any] | None) -> str | None:
    """The id of the last message a budget dropped from the thread (None: nothing yet)."""
    value = (metadata or {}).get(BOUNDARY_KEY)
    found = value.get("message_id") if isinstance(value, Mapping) else None
    return found if isinstance(found, str) and found else None


def after_boundary(history: Sequence[BaseMessage], boundary: str | None) -> list[BaseMessage]:
    """`history` without what the boundary dropped: the messages up to the boundary's, when the
    history holds it (an older window does not)."""
    if boundary is None:
        return list(history)
    for position in range(len(history) - 1, -1, -1):
        if history[position].id == boundary:
            return list(history[position + 1 :])
    return list(history)


def droppable_units(history: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """The history as droppable units, oldest first: a model message with tool calls and the
    results that answer it go together (a result never stands without its call); every other
    message alone."""
    units: list[list[BaseMessage]] = []
    for message in history:
        if isinstance(message, ToolMessage) and units and _answers(units[-1], message):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _answers(unit: list[BaseMessage], result: ToolMessage) -> bool:
    head = unit[0]
    return isinstance(head, AIMessage) and result.tool_call_id in tool_call_ids(head)


def fit(
    history: Sequence[BaseMessage], budget: MessageTokens, *, fixed: float
) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """``(kept, dropped)``: `history` as is while it and `fixed` tokens (the rest of what is
    sent) fit in the budget; else the oldest units dropped until at least
    ``at_max_remove_tokens`` are gone and the rest fits (all of it, if nothing else fits)."""
    counter = budget.counter
    sizes = [counter.count(m) for m in history]
    total = TOKENS_PER_CONVERSATION + fixed + sum(sizes)
    if total <= budget.max_tokens:
        return list(history), []
    dropped: list[BaseMessage] = []
    freed = 0.0
    units = droppable_units(history)
    position = 0
    while units and (freed < budget.at_max_remove_tokens or total - freed > budget.max_tokens):
        unit = units.pop(0)
        size = sum(sizes[position : position + len(unit)])
        position += len(unit)
        freed += size
        dropped.extend(unit)
    return [m for unit in units for m in unit], dropped


def boundary_metadata(dropped: Sequence[BaseMessage]) -> dict[str, Any] | None:
    """The thread metadata that keeps `dropped` dropped (None: nothing to keep)."""
    last = next((m.id for m in reversed(dropped) if m.id), None)
    return None if last is None else {BOUNDARY_KEY: {"message_id": last}}


PAGE = 64  # stored messages read at a time, newest first


class Take(Enum):
    """What a `newest_first` reader does with the message it is shown."""

    KEEP = "keep"  # keep it, read on
    SKIP = "skip"  # leave it out, read on
    LAST = "last"  # keep it, read no further
    STOP = "stop"  # leave it out, read no further


def newest_first(
    storage: Any,
    thread_id: str,
    resource_id: str | None,
    take: Callable[[StoredMessage], Take],
    *,
    page: int = PAGE,
) -> Steps[list[StoredMessage]]:
    """A thread's stored messages read newest first, `page` at a time, each shown to `take`
    until it says stop or the thread ends: the kept ones, oldest first (the one paging loop
    behind a budgeted history and a thread's summary)."""
    kept: list[StoredMessage] = []
    offset = 0
    while True:
        found, total = yield from call(
            storage.page_messages,
            thread_id,
            resource_id=resource_id,
            limit=page,
            offset=offset,
            descending=True,
        )
        for stored in found:
            verdict = take(stored)
            if verdict is Take.STOP:
                return kept[::-1]
            if verdict is not Take.SKIP:
                kept.append(stored)
            if verdict is Take.LAST:
                return kept[::-1]
        offset += len(found)
        if not found or offset >= total:
            return kept[::-1]


class BudgetedHistory:
    """A thread's history under a `MessageTokens` budget (for `TurnContext`): where it starts
    (the boundary, read from storage), what fits, and the boundary moved when it drops.
    Written once as steps (`twins`).

    Args:
        storage: memory's storage (threads' metadata, messages).
        budget: the parsed ``message_tokens``.
        cap: ``last_messages`` when it was given (a count cap on top), else None.
    """

    def __init__(self, storage: Any, budget: MessageTokens, cap: int | None) -> None:
        self.storage = storage
        self.budget = budget
        self.cap = cap

    def boundary(self, thread_id: str) -> Steps[str | None]:
        thread = yield from call(self.storage.get_thread, thread_id)
        return None if thread is None else boundary_of(thread.metadata)

    def of_state(
        self, thread_id: str, history: Sequence[BaseMessage], cap: int | None, window: Any
    ) -> Steps[list[BaseMessage]]:
        """A graph state's history (the hook, the middleware): after the boundary, capped."""
        boundary = yield from self.boundary(thread_id)
        kept = after_boundary(history, boundary)
        return kept if cap is None else newest(kept, cap, window)

    def stored(
        self,
        thread_id: str,
        resource_id: str | None,
        current: Sequence[BaseMessage],
        cap: int | None,
    ) -> Steps[list[BaseMessage]]:
        """The stored messages after the boundary, oldest first, without the `current` turn's:
        read newest first, a page at a time, until the boundary, the count cap, or more than
        the budget holds (anything older could not be shown)."""
        boundary = yield from self.boundary(thread_id)
        skip = set(ids_of(current))
        counter, tokens, kept = self.budget.counter, 0.0, 0

        def take(stored: StoredMessage) -> Take:
            nonlocal tokens, kept
            if stored.message.id == boundary:
                return Take.STOP
            if stored.message.id in skip:
                return Take.SKIP
            tokens += counter.count(stored.message)
            kept += 1
            full = (cap is not None and kept >= cap) or tokens > self.budget.max_tokens
            return Take.LAST if full else Take.KEEP

        found = yield from newest_first(self.storage, thread_id, resource_id, take)
        return [stored.message for stored in found]

    def fitted(
        self,
        thread_id: str,
        resource_id: str | None,
        history: Sequence[BaseMessage],
        beside: Sequence[BaseMessage],
        *,
        read_only: bool,
    ) -> Steps[list[BaseMessage]]:
        """`history` within the budget beside what else is sent (`beside`); a drop moves the
        thread's boundary (not in a read-only run, and not for a thread storage lacks)."""
        fixed = sum(self.budget.counter.count(m) for m in beside)
        kept, dropped = fit(history, self.budget, fixed=fixed)
        moved = boundary_metadata(dropped)
        if moved is not None and not read_only:
            with suppress(ThreadNotFoundError):  # a state's thread memory does not hold (yet)
                yield from call(
                    self.storage.update_thread, thread_id, metadata=moved, resource_id=resource_id
                )
        return kept
