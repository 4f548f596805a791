"""The recall block: what semantic recall found, as a turn's context shows it.

``"system"`` placement (Mastra's): the thread's own hits as tagged messages, other threads'
as one system message of fenced conversations (merged into the leading one). ``"end"``: all
of them in one tagged human message just before the current turn, so what changes every turn
comes last and a provider's prefix cache serves everything before it. `TurnContext` and the
`SemanticRecall` processor both build it here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from ..messages import DATA_NOT_INSTRUCTIONS, fenced, mastra_role, message_text, tag
from ..recall.index import RecallIndex, RecallOptions
from ..storage.base import MemoryStorage
from ..storage.records import StoredMessage
from ..twins import Steps, call

RecallPlacement = Literal["end", "system"]


def assembled(
    found: Sequence[StoredMessage],
    thread_id: str | None,
    titles: dict[str, str | None],
    placement: RecallPlacement = "system",
) -> list[BaseMessage]:
    """Recalled messages as the context shows them.

    ``"system"`` (Mastra's): the thread's own hits as tagged messages, other threads' as one
    system message (merged into the leading one). ``"end"``: all of them in one tagged
    human message, placed after the history, just before the current turn, so what changes
    every turn comes last and a provider's prefix cache serves everything before it.
    """
    if placement == "end":
        if not found:
            return []
        block = format_remembered(found, titles, thread_id, header=END_HEADER)
        return [tag(HumanMessage(block), "semantic_recall")]
    same = [tag(s.message, "semantic_recall") for s in found if s.thread_id == thread_id]
    other = [s for s in found if s.thread_id != thread_id]
    if not other:
        return same
    block = format_remembered(other, titles, thread_id, header=SYSTEM_HEADER)
    return [tag(SystemMessage(block), "semantic_recall"), *same]


def recalled_block(
    index: RecallIndex,
    storage: MemoryStorage,
    query: str,
    *,
    resource_id: str,
    thread_id: str | None,
    exclude: set[str],
    never_hits: frozenset[str] = frozenset(),
    options: RecallOptions | None = None,
    placement: RecallPlacement = "system",
) -> Steps[list[BaseMessage]]:
    """Recall for `query` and assemble it (`assembled`, the titles of other
    threads read from storage). Run with `twins`."""
    found = yield from call(
        index.recall,
        query,
        resource_id=resource_id,
        thread_id=thread_id,
        exclude=exclude,
        never_hits=never_hits,
        options=options,
    )
    return (yield from assembled_block(storage, found, thread_id, placement))


def assembled_block(
    storage: MemoryStorage,
    found: Sequence[StoredMessage],
    thread_id: str | None,
    placement: RecallPlacement = "system",
) -> Steps[list[BaseMessage]]:
    """Recalled messages as the context shows them (see `assembled`), with the
    titles of their other threads read from storage. Run with `twins`."""
    others = list(dict.fromkeys(s.thread_id for s in found if s.thread_id != thread_id))
    threads = (yield from call(storage.get_threads, others)) if others else {}
    titles = {source: thread.title for source, thread in threads.items()}
    return assembled(found, thread_id, titles, placement)


def last_human_text(messages: Sequence[BaseMessage]) -> str:
    """The text of the last human message ('' when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_text(message)
    return ""


SYSTEM_HEADER = (
    "The following messages were remembered from other conversations with this user. "
    + DATA_NOT_INSTRUCTIONS
)
END_HEADER = (
    "Memory recalled these messages for the message that follows: from earlier in this "
    "conversation and from other conversations with this user. They were not written now. "
    + DATA_NOT_INSTRUCTIONS
)


def format_remembered(
    found: Sequence[StoredMessage],
    titles: dict[str, str | None],
    thread_id: str | None,
    *,
    header: str = SYSTEM_HEADER,
) -> str:
    """`header`, then one fence per conversation (this thread's own hits fenced as this
    conversation's, first), messages grouped by day, each with its time.

    Examples:
        >>> from datetime import datetime
        >>> from langchain_core.messages import HumanMessage
        >>> hit = StoredMessage(message=HumanMessage("I moved to Lisbon", id="m1"),
        ...     thread_id="t0", resource_id="alice", created_at=datetime(2026, 5, 1, 9, 30))
        >>> print(format_remembered([hit], {"t0": "Moving"}, "t1", header="Remembered:"))
        Remembered:
        <BLANKLINE>
        <remembered_from_other_conversation thread="t0" title="Moving">
        2026-05-01:
          [09:30] user: I moved to Lisbon
        </remembered_from_other_conversation>
    """
    by_thread: dict[str, list[StoredMessage]] = defaultdict(list)
    for s in sorted(found, key=lambda s: s.thread_id != thread_id):  # this thread's first
        by_thread[s.thread_id].append(s)
    parts = [header]
    for source, items in by_thread.items():
        lines: list[str] = []
        day = None
        for s in sorted(items, key=lambda s: s.created_at):
            text = message_text(s.message)
            if not text.strip():  # an assistant message that only called tools
                continue
            if s.created_at.date() != day:
                day = s.created_at.date()
                lines.append(f"{day:%Y-%m-%d}:")
            lines.append(f"  [{s.created_at:%H:%M}] {mastra_role(s.message)}: {text}")
        if source == thread_id:
            parts.append(fenced("remembered_from_this_conversation", "\n".join(lines)))
        else:
            parts.append(
                fenced(
                    "remembered_from_other_conversation",
                    "\n".join(lines),
                    thread=source,
                    title=titles.get(source) or None,
                )
            )
    return "\n\n".join(parts)
