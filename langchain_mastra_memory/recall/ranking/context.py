"""Ranking a candidate with the conversation around it: the built-in second stage.

A message is often about the question only with its neighbours: "My husband and I are trying
to be as good a family as my parents were" answers "Is Deborah married?" because of what was
said before it. So the first stage's top candidates are re-scored by the query's cosine with
their *conversation window* — the unit sum of the candidate's mean vector and that of the
message just before it in its thread (what it answers; for a question, the one after it: its
answer; each message's pieces averaged) — added, weighted, to their first-stage score min-max
normalised over the candidates. It reads vectors already stored (no model call: a window costs
a read, not an embedding) and moves only the candidates' order; the rest of the ranking follows
unchanged.

Two rules of conversation go with it. An answer follows its question: the message right after
each of the top candidates joins them (a question that matched "Is Deborah married?" is often
the turn before the one that answers it), at the pool's lowest first-stage score, so its own
window decides where it lands. And a session keeps to its topics: each thread is scored by the
sum of its candidates' scores among the ten best, and every candidate gains a share of
`thread_weight` in proportion to its thread's score over the best thread's.
(LoCoMo dev, recall@5 / @10: 0.668 / 0.753 without either, 0.690 / 0.764 with the thread rule,
0.694 / 0.778–0.779 with both; 0.700 / 0.782 with a question's window its answer.)

Each message's mean vector is kept in a process-wide LRU (`MESSAGE_VECTORS`, bounded in
bytes), filled when this process embeds a message and when a search reads one from the vector
store, so a resource searched again reads nothing: a vector store's read of ~100 messages
costs ~12 ms (Chroma), more than the rest of a search. Keys are (index, message id): only ids
that storage returned for the searching resource are ever looked up.

Examples:
    >>> import numpy as np
    >>> hits = [RecallHit("a", "t", 0.9), RecallHit("b", "t", 0.8)]
    >>> windows = {"a": np.array([0.0, 1.0]), "b": np.array([1.0, 0.0])}
    >>> [h.message_id for h in in_context(hits, windows, [1.0, 0.0], weight=2.0)]
    ['b', 'a']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from ...storage.records import Neighbour
from ..embedders import VectorCache
from ..vector import MessageVectors
from .fusion import RecallHit

MESSAGE_VECTORS = VectorCache(max_bytes=64 * 1024 * 1024)  # index, message id -> mean vector


def remember(index_name: str, pieces: MessageVectors) -> dict[str, np.ndarray]:
    """Keep each message's mean vector (its pieces' mean, unit length) for later windows;
    returns them."""
    means = {
        message_id: _unit(np.mean(np.asarray(vectors, dtype=np.float32), axis=0))
        for message_id, vectors in pieces.items()
        if len(vectors)
    }
    for message_id, mean in means.items():
        MESSAGE_VECTORS.put((index_name, message_id.encode()), mean)
    return means


def remembered(index_name: str, message_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """The mean vectors of these messages this process knows."""
    found = {}
    for message_id in message_ids:
        vector = MESSAGE_VECTORS.get_array((index_name, message_id.encode()))
        if vector is not None:
            found[message_id] = vector
    return found


THREAD_TOP = 10  # the candidates whose scores make their thread's score


def with_follow_ups(
    hits: Sequence[RecallHit], around: Sequence[Neighbour], top: int
) -> list[RecallHit]:
    """`hits`, then the user or assistant message right after each of the first `top` in its
    thread that is not a candidate yet, scored as the pool's lowest hit (`around`:
    `message_neighbours` of the hits)."""
    if not hits or top <= 0:
        return list(hits)
    position = {n.id: i for i, n in enumerate(around)}
    known = {h.message_id for h in hits}
    floor = min(h.score for h in hits)
    added = []
    for hit in hits[:top]:
        i = position.get(hit.message_id)
        if i is None or i + 1 >= len(around):
            continue
        after = around[i + 1]
        follow_up = after.id
        if (
            after.thread_id == around[i].thread_id
            and after.type in ("human", "ai")
            and follow_up not in known
        ):
            known.add(follow_up)
            added.append(RecallHit(follow_up, after.thread_id, floor))
    return [*hits, *added]


def by_thread(hits: Sequence[RecallHit], *, weight: float) -> list[RecallHit]:
    """`hits` (best first, scored) with each gaining ``weight * its thread's score / the best
    thread's``, a thread's score being the sum of its hits' among the first `THREAD_TOP`."""
    if weight <= 0 or not hits:
        return list(hits)
    threads: dict[str, float] = {}
    for hit in hits[:THREAD_TOP]:
        threads[hit.thread_id] = threads.get(hit.thread_id, 0.0) + hit.score
    best = max(threads.values())
    if best <= 0:
        return list(hits)
    scored = [
        replace(hit, score=hit.score + weight * threads.get(hit.thread_id, 0.0) / best)
        for hit in hits
    ]
    return sorted(scored, key=lambda h: -h.score)


def asks(text: str) -> bool:
    """Whether a message's text ends by asking something (then it is about its answer)."""
    return text.rstrip().endswith(("?", "\uff1f"))  # (and the full-width "？")


def neighbours(candidates: Sequence[str], around: Sequence[Neighbour]) -> dict[str, list[str]]:
    """Each candidate with the id of the message it is about in its thread, if any (`around`:
    `message_neighbours` of the candidates, one message before and one after each): the message
    just before it, what it answers — or, for a candidate that asks a question, the one just
    after it, its answer. Otherwise the reply is left out: a turn is about what it answers more
    than about the reply to it (LoCoMo dev, recall@5 / @10: 0.640 / 0.737 with the one before,
    0.628 / 0.723 with both; later, with the rules below, a question's answer instead of what
    came before it: 0.694 / 0.779 → 0.700 / 0.782)."""
    position = {n.id: i for i, n in enumerate(around)}
    found: dict[str, list[str]] = {}
    for candidate in candidates:
        if (i := position.get(candidate)) is None:
            continue
        j = i + 1 if asks(around[i].text) else i - 1
        other = around[j] if 0 <= j < len(around) else None
        same_thread = other is not None and other.thread_id == around[i].thread_id
        found[candidate] = [other.id] if other is not None and same_thread else []
    return found


def windows(
    window_ids: Mapping[str, Sequence[str]],
    means: Mapping[str, np.ndarray],
    *,
    own_share: float = 1.0,
) -> dict[str, np.ndarray]:
    """Each candidate's conversation window as one unit vector: its own and its neighbour's
    mean vectors summed, its own weighing `own_share` times as much (1: equal; other shares
    measured and dropped, bench/recall_folds.py). A message without vectors, such as a tool
    result, adds nothing; a candidate with none at all gets no window."""
    found = {}
    for candidate, around in window_ids.items():
        own = [own_share * means[candidate]] if candidate in means else []
        parts = own + [means[m] for m in around if m in means]
        if parts:
            found[candidate] = _unit(np.sum(parts, axis=0))
    return found


def in_context(
    hits: Sequence[RecallHit],
    window_vectors: Mapping[str, np.ndarray],
    query_vector: Sequence[float],
    *,
    weight: float,
) -> list[RecallHit]:
    """`hits` reordered by ``normalised first-stage score + weight * cos(query, window)`` (a hit
    without a window adds nothing); the scores become those sums."""
    if not hits:
        return []
    query = _unit(np.asarray(query_vector, dtype=np.float32))
    top, bottom = max(h.score for h in hits), min(h.score for h in hits)
    spread = top - bottom
    scored = []
    for hit in hits:
        score = (hit.score - bottom) / spread if spread > 0 else 1.0
        window = window_vectors.get(hit.message_id)
        if window is not None:
            score += weight * float(window @ query)
        scored.append(RecallHit(hit.message_id, hit.thread_id, score))
    return sorted(scored, key=lambda h: -h.score)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
