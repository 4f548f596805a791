"""What each page of the memory explorer shows, read from a `Memory` (no HTML here), and its
small inline SVG plots (no JavaScript, no plotting library).

Every function takes the resource the page is scoped to and reads through the library's own
scoped calls, so a crafted URL naming another resource's thread finds nothing
(`ThreadNotFoundError`, shown as 404).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from ..browsing import Page
from ..errors import ThreadNotFoundError
from ..memory import Memory
from ..messages import SOURCE_KEY, mastra_role, message_text
from ..storage.records import ResourceSummary, Thread, scope_key
from ..tokens.counting import TokenCounter

WIDTH, HEIGHT, PAD = 640, 180, 32


def tokens_chart(per_turn: Sequence[float], thresholds: Sequence[tuple[str, float]] = ()) -> str:
    """Cumulative stored tokens over a thread's turns, with horizontal threshold lines
    (observational memory's); an empty string for a thread with no turns."""
    if not per_turn:
        return ""
    totals, running = [], 0.0
    for tokens in per_turn:
        running += tokens
        totals.append(running)
    top = max([*totals, *(v for _, v in thresholds), 1.0])
    step = (WIDTH - 2 * PAD) / max(len(totals) - 1, 1)

    def y(value: float) -> float:
        return HEIGHT - PAD - (HEIGHT - 2 * PAD) * value / top

    points = " ".join(f"{PAD + i * step:.1f},{y(v):.1f}" for i, v in enumerate(totals))
    lines = [
        f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="limit"/>'
        f'<text x="{WIDTH - PAD}" y="{y(v) - 4:.1f}" text-anchor="end">{escape(name)} '
        f"{v:,.0f}</text>"
        for name, v in thresholds
    ]
    return (
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="tokens per turn" '
        f'class="chart"><polyline points="{points}" class="series"/>{"".join(lines)}'
        f'<text x="{PAD}" y="{PAD - 10}">{totals[-1]:,.0f} tokens over {len(totals)} turns</text>'
        "</svg>"
    )


def bars(counts: Sequence[tuple[str, int]]) -> str:
    """Horizontal bars (recall hits by thread), label and count each."""
    if not counts:
        return ""
    top = max(c for _, c in counts) or 1
    height = 22 * len(counts) + 8
    rows = []
    for i, (label, count) in enumerate(counts):
        width = (WIDTH - 260) * count / top
        rows.append(
            f'<text x="0" y="{22 * i + 18}">{escape(label[:34])}</text>'
            f'<rect x="240" y="{22 * i + 5}" width="{width:.1f}" height="16" class="bar"/>'
            f'<text x="{248 + width:.1f}" y="{22 * i + 18}">{count}</text>'
        )
    return (
        f'<svg viewBox="0 0 {WIDTH} {height}" role="img" aria-label="hits by thread" '
        f'class="chart">{"".join(rows)}</svg>'
    )


PER_PAGE = 25

MESSAGES_PER_PAGE = 50


@dataclass(frozen=True)
class ThreadRow:
    thread: Thread
    messages: int
    tokens: float


@dataclass
class MessageRow:
    """A message as the thread page shows it: tool results folded into their call."""

    id: str
    role: str
    text: str
    created_at: datetime
    tokens: float
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)  # tool_call_id -> result text
    observed: bool = False
    embedded: bool | None = None  # None: not embedded by design (system, tool)


def _paged(items: list[Any], page: int, per_page: int = PER_PAGE) -> Page[Any]:
    start = page * per_page
    return Page(items[start : start + per_page], len(items), page, per_page)


def resources(memory: Memory, *, query: str = "", page: int = 0) -> Page[ResourceSummary]:
    """The resources that own threads, newest activity first, filtered by id (paged in the
    database: `MemoryStorage.page_resources`)."""
    found, total = memory.storage.page_resources(
        query=query, offset=page * PER_PAGE, limit=PER_PAGE
    )
    return Page(found, total, page, PER_PAGE)


def threads(memory: Memory, resource_id: str, *, query: str = "", page: int = 0) -> Page[ThreadRow]:
    """The resource's threads (archived too), newest first, searchable by title and metadata."""
    found = memory.page_threads(resource_id=resource_id, per_page=None, archived=None).items
    needle = query.lower()
    if needle:
        found = [
            t
            for t in found
            if needle in (t.title or "").lower() or needle in json.dumps(t.metadata).lower()
        ]
    shown = _paged(found, page)
    stats = memory.storage.thread_stats([t.id for t in shown.items])
    rows = [ThreadRow(t, *stats[t.id]) for t in shown.items]
    return Page(rows, shown.total, page, PER_PAGE)


def thread(memory: Memory, resource_id: str, thread_id: str) -> Thread:
    """The thread, when `resource_id` owns it (else `ThreadNotFoundError`: a 404)."""
    found = memory.get_thread(thread_id, resource_id=resource_id)
    if found is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r} for {resource_id!r}")
    return found


def observed_ids(memory: Memory, resource_id: str, thread_id: str) -> set[str]:
    """Ids of the thread's messages that an active observation group covers."""
    covered: set[str] = set()
    for key in (
        scope_key("thread", resource_id=resource_id, thread_id=thread_id),
        scope_key("resource", resource_id=resource_id, thread_id=None),
    ):
        for group in memory.storage.observation_log(key):
            covered.update(group.message_ids)
    return covered


def messages(
    memory: Memory, resource_id: str, thread_id: str, *, page: int = 0
) -> Page[MessageRow]:
    """A page of the thread's messages, oldest first, tool results folded into their calls."""
    thread(memory, resource_id, thread_id)
    stored, total = memory.storage.page_messages(
        thread_id,
        resource_id=resource_id,
        limit=MESSAGES_PER_PAGE,
        offset=page * MESSAGES_PER_PAGE,
    )
    embedded = _with_vectors(memory, resource_id, [s.message.id or "" for s in stored])
    observed = observed_ids(memory, resource_id, thread_id)
    counter = TokenCounter()
    rows: list[MessageRow] = []
    by_call: dict[str, MessageRow] = {}
    for item in stored:
        message = item.message
        if isinstance(message, ToolMessage) and message.tool_call_id in by_call:
            by_call[message.tool_call_id].results[message.tool_call_id] = message_text(message)
            continue
        role = mastra_role(message)
        row = MessageRow(
            id=message.id or "",
            role=role,
            text=message_text(message),
            created_at=item.created_at,
            tokens=item.token_count or counter.count(message),
            tool_calls=list(getattr(message, "tool_calls", None) or []),
            observed=message.id in observed,
            embedded=(message.id in embedded)
            if embedded is not None and role in ("user", "assistant")
            else None,
        )
        for call in row.tool_calls:
            by_call[call["id"]] = row
        rows.append(row)
    return Page(rows, total, page, MESSAGES_PER_PAGE)


def _with_vectors(memory: Memory, resource_id: str, message_ids: list[str]) -> set[str] | None:
    """Which of these messages the vector store holds (None: this memory keeps no vectors)."""
    index = memory.recall_index
    if index is None or index.vector is None or not message_ids:
        return None if index is None or index.vector is None else set()
    return index.vector.present(index.upkeep.index_name(), resource_id, message_ids)


def tokens_per_turn(memory: Memory, resource_id: str, thread_id: str) -> list[float]:
    """The thread's stored tokens, turn by turn (a turn starts at each user message)."""
    thread(memory, resource_id, thread_id)
    turns: list[float] = []
    for stored in memory.storage.list_messages(thread_id, resource_id=resource_id):
        if isinstance(stored.message, HumanMessage) or not turns:
            turns.append(0.0)
        turns[-1] += stored.token_count or 0.0
    return turns


@dataclass(frozen=True)
class RecallRow:
    rank: int
    message: BaseMessage
    thread_id: str
    thread_title: str | None
    created_at: datetime
    fused: float
    cosine: float | None
    bm25: float | None
    neighbours: list[BaseMessage]


def recall(memory: Memory, resource_id: str, query: str, mode: str) -> list[RecallRow]:
    """The recall playground: the hits of `query` in `mode`, each with its own score and both
    sides' (cosine, BM25) and its neighbours."""
    if not query.strip():
        return []
    hits = memory.search_messages(query, resource_id=resource_id, mode=mode, per_page=10)  # type: ignore[arg-type]
    sides = memory.searcher.side_scores(query, resource_id=resource_id)
    windows = memory.storage.message_windows(
        [h.message.id or "" for h in hits.items], before=1, after=1, resource_id=resource_id
    )
    rows = []
    for rank, hit in enumerate(hits.items, start=1):
        around = [s.message for s in windows if s.thread_id == hit.thread_id]
        near = _neighbours(around, hit.message.id or "")
        rows.append(
            RecallRow(
                rank,
                hit.message,
                hit.thread_id,
                hit.thread_title,
                hit.created_at,
                hit.score,
                sides.get("vector", {}).get(hit.message.id or ""),
                sides.get("keyword", {}).get(hit.message.id or ""),
                near,
            )
        )
    return rows


def _neighbours(thread_messages: list[BaseMessage], message_id: str) -> list[BaseMessage]:
    ids = [m.id for m in thread_messages]
    if message_id not in ids:
        return []
    at = ids.index(message_id)
    return [m for m in thread_messages[max(0, at - 1) : at + 2] if m.id != message_id]


@dataclass(frozen=True)
class ContextPart:
    name: str
    messages: list[BaseMessage]
    tokens: float


@dataclass(frozen=True)
class ContextPreview:
    parts: list[ContextPart]
    total: float
    left_out: list[tuple[BaseMessage, str]]  # stored history not sent, and why
    budget: float | None


PART_NAMES = {
    "working_memory": "Working memory",
    "observational_memory": "Observation log",
    "semantic_recall": "Recalled messages",
}


def context(memory: Memory, resource_id: str, thread_id: str, question: str) -> ContextPreview:
    """What the model would receive on the next turn of the thread (with `question` as the
    user's message), part by part, and the newest stored messages it would not see."""
    thread(memory, resource_id, thread_id)
    turn = [HumanMessage(question or "(the next message)", id="preview-turn")]
    sent = memory.context(turn, thread_id=thread_id, resource_id=resource_id)  # merged blocks
    counter = TokenCounter()
    grouped: dict[str, list[BaseMessage]] = {}  # the parts before they were merged
    injected = memory.working.message(resource_id=resource_id, thread_id=thread_id)
    remembered = memory.recall(new_messages=turn, thread_id=thread_id, resource_id=resource_id)
    for message in [*([injected] if injected else []), *remembered, *turn]:
        source = message.response_metadata.get(SOURCE_KEY)
        if message.id == "preview-turn":
            name = "Current turn"
        else:
            name = PART_NAMES.get(source, "Memory") if source else "History"
        grouped.setdefault(name, []).append(message)
    parts = [ContextPart(n, ms, counter.count_all(ms)) for n, ms in grouped.items()]
    shown = {m.id for m in sent}
    last = memory.options.last_messages
    window = None if last is False else int(last)
    stored = memory.storage.list_messages(thread_id, resource_id=resource_id, last=window)
    observed = observed_ids(memory, resource_id, thread_id)
    left_out = [
        (s.message, _why_not_sent(s.message, observed)) for s in stored if s.message.id not in shown
    ]
    limits = [float(getattr(p, "limit", 0)) for p in memory.processors if hasattr(p, "limit")]
    return ContextPreview(parts, counter.count_all(sent), left_out, min(limits, default=None))


def _why_not_sent(message: BaseMessage, observed: set[str]) -> str:
    """Why a stored message of the history window is not in the context."""
    if message.id in observed:
        return "covered by the observation log"
    if isinstance(message, ToolMessage) or getattr(message, "tool_calls", None):
        return "tool traffic removed by ToolCallFilter (the working-memory tool's, or yours)"
    return "over the token budget: TokenLimiter dropped the oldest messages"
