"""The budget walk shared by `TokenLimiter` and `TokenLimiterProcessor` (Mastra's rule).

Walk from the newest message back, keeping each message while the running total stays within
the limit, and stop at the first that does not fit. System messages are always kept and count
first. An ``AIMessage`` with tool calls and the ``ToolMessage``s answering them are one unit:
kept or dropped together. A ``ToolMessage`` whose call is not in the list (an orphan) is
dropped, since no model API accepts a tool result without its call.

With ``window="blocks"`` the kept part then starts at a stable point rather than at the oldest
message that fits, so the limited list starts the same way for many turns (a provider's prompt
cache serves it; `turn.windows` does the same for counted windows): among the oldest
third of what fits, the message whose id hashes to the most trailing zero bits (`stable_start`),
a property of the message itself, the same in every process and turn. The list never exceeds
the limit and holds at most a third fewer messages than fit (a window of five messages or fewer
is Mastra's). ``"sliding"`` is Mastra's walk alone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ..errors import TripWire
from ..messages import ensure_message, message_text, system_positions, tool_call_ids
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
    window: Literal["blocks", "sliding"] = "sliding",
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
    costs: dict[int, float] = {}
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
            costs[j] = counter.count(messages[j])
            tentative += costs[j]
        if tentative > limit:
            break
        total = tentative
        kept += unit
    if window == "blocks":
        start = stable_start(messages, sorted(kept))
        total -= sum(costs[i] for i in kept if i < start)
        kept = [i for i in kept if i >= start]
    result = [messages[i] for i in sorted(set(kept).union(systems))]
    return LimitResult(result, total, system_tokens, len(messages) - len(result))


def cut_level(message: BaseMessage) -> int:
    """How good a place `message` is to start a block window: the trailing zero bits of its
    id's hash (or its text's, without an id), 0 to 32: half the messages are level 0, a
    quarter level 1, an eighth level 2... A property of the message, the same everywhere."""
    key = (message.id or message_text(message)).encode()
    digest = int.from_bytes(hashlib.blake2b(key, digest_size=4).digest(), "little")
    return (digest & -digest).bit_length() - 1 if digest else 32


def stable_start(messages: Sequence[BaseMessage], kept: Sequence[int]) -> int:
    """Where a block window of the `kept` positions (ascending) starts: in the oldest third of
    them, the message of the highest `cut_level` (the oldest on a tie), never a tool result
    (it goes with its call) nor past the newest human message.

    While the conversation grows, that message stays in the range (and so stays the start)
    until it no longer fits or a message of a higher level comes into the range, rarer the
    longer the window: at 40 messages that fit, the start moves on 3 turns in 10, at 100 on
    1 in 8 (a sliding window's moves every turn), and the window holds 13% fewer messages than
    fit on average, never a third fewer.
    """
    if not kept:
        return 0
    humans = [i for i in kept if isinstance(messages[i], HumanMessage)]
    best, best_level = kept[0], -1
    for i in kept[: max(1, len(kept) // 3)]:
        if humans and i >= humans[-1]:
            break
        if isinstance(messages[i], ToolMessage):
            continue
        level = cut_level(messages[i])
        if level > best_level:
            best, best_level = i, level
    return best
