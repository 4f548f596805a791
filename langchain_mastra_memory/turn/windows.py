"""History windows that move in blocks, so the start of a context stays put for many turns.

A provider's prompt cache serves the part of a turn's input that starts exactly as the previous
turn's did. A sliding window of the newest N messages (Mastra's rule) starts one message later
every message, so its first message changes every turn and the cache serves nothing past the
system message. A *block* window drops the oldest messages B at a time instead: with K messages
before the current turn it shows the newest ``N + (K - N) mod B`` of them (N to N + B - 1, all
K while K <= N). That is a function of K alone, so no state is kept: every process, shape and
restart computes the same window, and its first message stays the same while B more messages
arrive. The model always sees at least the N messages it was promised.

Examples:
    >>> [shown(k, last=4, block=2) for k in range(3, 10)]
    [3, 4, 5, 4, 5, 4, 5]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from langchain_core.messages import BaseMessage

from ..messages import ids_of
from ..storage.base import MemoryStorage
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
