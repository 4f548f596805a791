"""The budget walk shared by `TokenLimiter` and `TokenLimiterProcessor` (Mastra's rule).

Walk from the newest message back, keeping each message while the running total stays within
the limit, and stop at the first that does not fit. System messages are always kept and count
first. An ``AIMessage`` with tool calls and the ``ToolMessage``s answering them are one unit:
kept or dropped together. A ``ToolMessage`` whose call is not in the list (an orphan) is
dropped, since no model API accepts a tool result without its call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage

from ..errors import TripWire
from ..messages import ensure_message, system_positions, tool_call_ids
from ..tokens.counting import TOKENS_PER_CONVERSATION, TokenCounter


@dataclass(frozen=True)
class LimitResult:
    """What the walk kept, and the numbers behind it."""

    messages: list[BaseMessage]
    total_tokens: float
    system_tokens: float
    dropped: int


def limit_messages(
    messages: Sequence[BaseMessage],
    counter: TokenCounter,
    limit: int,
    *,
    new_messages: Sequence[BaseMessage] = (),
) -> LimitResult:
    """Keep the newest messages within `limit` tokens (see the module docstring).

    `new_messages` (Mastra's ``newMessages``) are counted against the budget first, newest
    first, but are not part of the result.

    Raises:
        TripWire: the system messages alone (plus the conversation's 24) exceed the limit.
    """
    systems = system_positions(messages)
    system_tokens = sum(counter.count(messages[i]) for i in systems)
    total = TOKENS_PER_CONVERSATION + system_tokens
    if total > limit:
        msg = (
            f"the system messages alone need {total:g} tokens "
            f"({system_tokens:g} + {TOKENS_PER_CONVERSATION} for the conversation), "
            f"over the limit of {limit}"
        )
        raise TripWire(msg, {"system_tokens": system_tokens, "limit": limit, "total_tokens": total})

    room = True
    for message in reversed(new_messages):
        cost = counter.count(message)
        if total + cost > limit:
            room = False
            break
        total += cost

    kept: list[int] = []
    pending: dict[str, list[int]] = {}  # tool results seen, waiting for their call
    for i in range(len(messages) - 1, -1, -1) if room else ():
        message = ensure_message(messages[i], where="the messages to limit")
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, ToolMessage):
            pending.setdefault(message.tool_call_id, []).append(i)
            continue
        unit = [i]
        for call_id in tool_call_ids(message):
            unit += pending.pop(call_id, [])
        tentative = total
        for j in sorted(unit, reverse=True):  # newest first, as Mastra adds them
            tentative += counter.count(messages[j])
        if tentative > limit:
            break
        total = tentative
        kept += unit
    result = [messages[i] for i in sorted(set(kept).union(systems))]
    return LimitResult(result, total, system_tokens, len(messages) - len(result))
