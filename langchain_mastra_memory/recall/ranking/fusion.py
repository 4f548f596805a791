"""Turning search results into recall's ranking: a message scored by its best piece, the two
sides of a hybrid search fused, working-memory tool traffic hidden from what is recalled."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ...messages import without_tool_calls
from ...storage.records import StoredMessage
from ...working_memory.config import TOOL_NAME as WORKING_MEMORY_TOOL
from ..vector import VectorHit

HYBRID_POOL = 150  # candidates from each side before fusing (normalising over a deep pool)
PIECES_PER_HIT = 2  # vector pieces asked for per message wanted
EQUAL_SHARES = (0.5, 0.5)  # (vector, keyword): chosen on the folds (bench/recall_folds.py)


@dataclass(frozen=True)
class RecallHit:
    """One search result before neighbours are loaded."""

    message_id: str
    thread_id: str
    score: float


def best_piece_per_message(hits: Sequence[VectorHit]) -> list[RecallHit]:
    """Piece hits as message hits: each message scored by its best piece, best first."""
    best: dict[str, float] = {}
    for hit in hits:
        if hit.score > best.get(hit.message_id, -math.inf):
            best[hit.message_id] = hit.score
    ranked = sorted(best.items(), key=lambda item: -item[1])
    return [RecallHit(message_id, "", score) for message_id, score in ranked]


def fuse(
    vector_hits: Sequence[RecallHit],
    keyword_hits: Sequence[RecallHit],
    k: int,
    shares: tuple[float, float] = EQUAL_SHARES,
) -> list[RecallHit]:
    """Hybrid ranking: each side's scores min-max normalised over its candidate pool (a
    message the side did not return counts 0 there), then summed by `shares` (vector,
    keyword; averaged by default). Unlike reciprocal-rank fusion, a clear winner on one side
    stays a winner, and near-ties stay near."""
    fused: dict[str, float] = defaultdict(float)
    threads: dict[str, str] = defaultdict(str)
    for share, hits in zip(shares, (vector_hits, keyword_hits), strict=True):
        if not hits:
            continue
        top, bottom = max(h.score for h in hits), min(h.score for h in hits)
        spread = top - bottom
        for hit in hits:
            fused[hit.message_id] += share * ((hit.score - bottom) / spread if spread > 0 else 1.0)
            threads[hit.message_id] = threads[hit.message_id] or hit.thread_id
    best = sorted(fused, key=lambda m: -fused[m])[:k]
    return [RecallHit(m, threads[m], fused[m]) for m in best]


def hide_working_memory(found: Sequence[StoredMessage]) -> list[StoredMessage]:
    """`found` without working-memory tool traffic: its calls are stripped from assistant
    messages (dropped when nothing is left) and its results removed, as Mastra hides them."""
    calls = {
        c["id"]
        for s in found
        if isinstance(s.message, AIMessage)
        for c in s.message.tool_calls
        if c["name"] == WORKING_MEMORY_TOOL and c.get("id")
    }
    out: list[StoredMessage] = []
    for s in found:
        message: BaseMessage | None = s.message
        if isinstance(message, ToolMessage):
            if message.name == WORKING_MEMORY_TOOL or message.tool_call_id in calls:
                continue
        elif isinstance(message, AIMessage):
            message, _ = without_tool_calls(message, lambda name, _id: name == WORKING_MEMORY_TOOL)
        if message is s.message:
            out.append(s)
        elif message is not None:
            out.append(replace(s, message=message))
    return out
