"""The ranking stages between a search's pieces and the messages recall returns:

- fusion: a message scored by its best piece, vector and keyword results fused (`RecallHit`);
- the context stage: the built-in second stage, a candidate ranked with the conversation
  around it;
- dates: the dates a query names, and the messages of those days;
- a reranker: any LangChain document compressor as the second stage.

Of recall it imports the contract (`recall.vector`) and `recall.embedders` only (below recall:
storage's records, messages); the front (`index`) runs the stages.

Dates a recall query names: "on October 13, 2023", "in June", "in 2022".

A question that names a calendar date is about what was said then: the recall pool's messages
created on that date (within `DAY_SPAN` days of a named day, in a named month, in a named year)
are moved ahead of the others, each side keeping its order. A month named without a year
matches that month of any year; relative words ("last week") are not read (a query does not
know when it is asked). A month needs a day or a year beside it, or a word such as "in" before
it, so "May I ask..." names no date.

Examples:
    >>> named_date("When did Melanie go camping in June?")
    NamedDate(year=None, month=6, day=None)
    >>> named_date("What painting did she show on October 13, 2023?")
    NamedDate(year=2023, month=10, day=13)
    >>> named_date("May I ask what you cooked?") is None
    True

Turning search results into recall's ranking: a message scored by its best piece, the two
sides of a hybrid search fused, working-memory tool traffic hidden from what is recalled.

Ranking a candidate with the conversation around it: the built-in second stage.

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

Recall's second stage: any LangChain document compressor reorders the first stage's best
candidates, and the two rankings are fused.

The first stage (vector, keyword or hybrid search) is fast and finds most of what was said,
but ranks it coarsely; a reranker (a cross-encoder, Cohere's or Voyage's rerank API,
FlashRank, ...) reads the question beside each candidate and ranks better, at a cost per
candidate. So it scores only the first stage's top `rerank_pool` (each a `Document`: the
speaker and the date before the text, the ids in its metadata), and its order is fused with
the first stage's by weighted reciprocal rank (``1 / (60 + rank)``): a candidate both stages
like wins, and a reranker that drops a candidate (a compressor may) leaves it its first-stage
share. No reranker ships inside the package: none of the registries' packages bundles
cross-encoder weights usable offline (see the docs' "Semantic recall").

Examples:
    >>> from langchain_core.documents import Document
    >>> first = [RecallHit("m1", "t1", 0.9), RecallHit("m2", "t1", 0.8)]
    >>> reranked = [Document("...", metadata={"message_id": "m2"})]
    >>> [h.message_id for h in fuse_ranks(first, reranked, weight=2.0)]
    ['m2', 'm1']
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ..errors import ConfigurationError
from ..messages import mastra_role, message_text, without_tool_calls
from ..storage.records import Neighbour, StoredMessage
from ..working_memory.config import TOOL_NAME as WORKING_MEMORY_TOOL
from .embedders import VectorCache
from .vector import MessageVectors, VectorHit

# its old submodules (a package until 0.2) still import, with a warning (`MOVED`)
__path__: list[str] = []

CreatedAt = dict[str, datetime]  # message id -> when it was created

DAY_SPAN = 15  # a named day matches messages this many days either side

MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)

_MONTH_DATE = re.compile(
    r"(?:\b(?P<lead>in|on|of|during|since|by|until|before|after|early|mid|late|last|this)\s+)?"
    r"(?:\b(?P<day_before>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?)?"
    rf"\b(?P<month>{'|'.join(MONTHS)})\b"
    r"(?:\s+(?P<day_after>\d{1,2})(?:st|nd|rd|th)?\b)?"
    r"(?:,?\s+(?P<year>(?:19|20)\d\d)\b)?",
    re.IGNORECASE,
)

_YEAR = re.compile(
    r"\b(?:in|of|during|since|by|until|before|after)\s+(?P<year>(?:19|20)\d\d)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class NamedDate:
    """A calendar date a query names, as precise as it was named."""

    year: int | None
    month: int | None
    day: int | None

    def holds(self, moment: datetime) -> bool:
        """Whether a message created at `moment` was said on this date."""
        if self.year is not None and self.month is None:
            return moment.year == self.year
        year = self.year if self.year is not None else moment.year
        if self.day is None:
            return moment.month == self.month and moment.year == year
        try:
            named = date(year, self.month or 1, self.day)
        except ValueError:  # "February 30": no such day
            return False
        return abs((moment.date() - named).days) <= DAY_SPAN


def named_date(query: str) -> NamedDate | None:
    """The first calendar date `query` names (see the module docstring), or None."""
    for found in _MONTH_DATE.finditer(query):
        day = found.group("day_before") or found.group("day_after")
        year = found.group("year")
        if not (day or year or found.group("lead")):
            continue  # a bare month name: "May I ...", "march on"
        day_number = int(day) if day and 1 <= int(day) <= 31 else None
        month = MONTHS.index(found.group("month").lower()) + 1
        return NamedDate(int(year) if year else None, month, day_number)
    if found_year := _YEAR.search(query):
        return NamedDate(int(found_year.group("year")), None, None)
    return None


def dated_first(
    hits: Sequence[RecallHit], created: Mapping[str, datetime], when: NamedDate
) -> list[RecallHit]:
    """`hits` with those created on `when` first; each side keeps its order."""
    on = [h for h in hits if h.message_id in created and when.holds(created[h.message_id])]
    if not on:
        return list(hits)
    chosen = {h.message_id for h in on}
    return on + [h for h in hits if h.message_id not in chosen]


def created_dates(stored: Iterable[StoredMessage]) -> CreatedAt:
    """When each of these stored messages was created, by id."""
    return {s.message.id or "": s.created_at for s in stored}


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


MESSAGE_VECTORS = VectorCache(max_bytes=64 * 1024 * 1024)  # index, message id -> mean vector


def remember(index_name: str, pieces: MessageVectors) -> dict[str, np.ndarray]:
    """Keep each message's mean vector (its pieces' mean, unit length) for later windows;
    returns them. The means are made as one matrix (a message of one piece is its vector):
    a mean per message was ~12 us each, 1.8 ms of a recall's 150 candidates and neighbours."""
    ids = [message_id for message_id, vectors in pieces.items() if len(vectors)]
    if not ids:
        return {}
    arrays = [np.asarray(pieces[message_id], dtype=np.float32) for message_id in ids]
    sums = np.stack([a[0] if len(a) == 1 else a.sum(axis=0) for a in arrays])
    means = dict(zip(ids, unit_rows(sums), strict=True))
    MESSAGE_VECTORS.put_many([((index_name, m.encode()), mean) for m, mean in means.items()])
    return means


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """`matrix`'s rows at unit length, in place (a zero row stays zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, np.where(norms > 0, norms, 1.0), out=matrix)
    return matrix


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
    result, adds nothing; a candidate with none at all gets no window. Summed as one weighted
    gather over the means (a sum per candidate was ~1 ms a recall)."""
    row = {message_id: n for n, message_id in enumerate(means)}
    picked: dict[str, list[tuple[int, float]]] = {}
    for candidate, around in window_ids.items():
        parts = [(row[candidate], own_share)] if candidate in row else []
        parts += [(row[m], 1.0) for m in around if m in row]
        if parts:
            picked[candidate] = parts
    if not picked:
        return {}
    width, empty = max(map(len, picked.values())), len(row)  # padding: a zero row past the
    gather = np.full((len(picked), width), empty, dtype=np.intp)  # means, weighing nothing
    weights = np.zeros((len(picked), width), dtype=np.float32)
    for n, parts in enumerate(picked.values()):
        gather[n, : len(parts)] = [at for at, _ in parts]
        weights[n, : len(parts)] = [share for _, share in parts]
    block = np.stack([*means.values(), np.zeros_like(next(iter(means.values())))])
    summed = np.einsum("cw,cwd->cd", weights, block[gather].astype(np.float32, copy=False))
    return dict(zip(picked, unit_rows(summed), strict=True))


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


RRF_K = 60  # reciprocal-rank fusion's constant (Cormack et al.; Elasticsearch's default)


def check_reranker(reranker: Any) -> Any:
    """`reranker` if it reorders documents as a LangChain `BaseDocumentCompressor` does."""
    if reranker is not None and not callable(getattr(reranker, "compress_documents", None)):
        msg = (
            f"semantic_recall reranker must be a LangChain BaseDocumentCompressor (with "
            f"compress_documents(documents, query)), got {type(reranker).__name__}"
        )
        raise ConfigurationError(msg)
    return reranker


def candidate_documents(
    hits: Sequence[RecallHit], by_id: Mapping[str, StoredMessage]
) -> list[Document]:
    """The candidates as the reranker reads them: ``speaker (date): text``, in first-stage
    order (`by_id`: their stored messages; a hit whose message is gone is left out)."""
    documents = []
    for hit in hits:
        if (found := by_id.get(hit.message_id)) is None:
            continue
        speaker = getattr(found.message, "name", None) or mastra_role(found.message)
        text = f"{speaker} ({found.created_at:%Y-%m-%d}): {message_text(found.message)}"
        metadata = {"message_id": hit.message_id, "thread_id": found.thread_id}
        documents.append(Document(page_content=text, metadata=metadata))
    return documents


def fuse_ranks(
    first: Sequence[RecallHit], reranked: Sequence[Document], *, weight: float
) -> list[RecallHit]:
    """`first` reordered by ``1/(RRF_K + first rank) + weight/(RRF_K + reranker rank)``; a
    candidate the reranker did not return keeps only its first-stage share. The hits' scores
    become the fused ones."""
    second: dict[str, int] = {}
    threads: dict[str, str] = {}
    for rank, document in enumerate(reranked):
        message_id = document.metadata.get("message_id")
        if isinstance(message_id, str):
            second.setdefault(message_id, rank)
            threads[message_id] = str(document.metadata.get("thread_id") or "")
    scored = []
    for rank, hit in enumerate(first):
        score = 1 / (RRF_K + rank)
        if hit.message_id in second:
            score += weight / (RRF_K + second[hit.message_id])
        thread_id = hit.thread_id or threads.get(hit.message_id, "")
        scored.append(RecallHit(hit.message_id, thread_id, score))
    return sorted(scored, key=lambda h: -h.score)
