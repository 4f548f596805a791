"""Recall's rules, kept only where every conversation gains: leave-one-conversation-out.

On the LoCoMo dev conversations (``recall_eval.py``'s metric: a resource per conversation, the
question over the whole resource, evidence recall@5 and @10), each rule of the default recall is
tried at a few settings, the others at their defaults, per conversation. Then five folds: the
setting is chosen on four conversations (best mean of @5 and @10) and measured on the fifth,
against the rule switched off. A rule earns its place when the held-out conversation gains in
at least four folds of five. Also measured, as re-orderings of the default's ranked pool
(`REORDERINGS`): a cap on hits per thread (for every question, or for list questions only),
maximal marginal relevance, a second search, neighbours' score shares, the named speaker's
turns first and pseudo-relevance feedback; and window vectors, whole-message vectors, the
candidate's own share of its window and the fusion's keyword share.

    python bench/recall_folds.py [--data ../shared/eval/locomo-dev] [--rules ...] [--vectors NPZ]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import DEFAULT_DATA, load_conversation, questions_of
from precomputed import Precomputed

import langchain_mastra_memory.recall.index as index_module
from langchain_mastra_memory import SQLiteStorage
from langchain_mastra_memory.messages import message_text
from langchain_mastra_memory.recall.embedders import CachedEmbeddings, MiniLMEmbeddings
from langchain_mastra_memory.recall.ranking import (
    RecallHit,
    asks,
    fuse,
    remember,
    remembered,
    windows,
)

RULES: dict[str, list[Any]] = {  # each rule's settings: the default first, then "off"
    "context_weight": [2.0, 0.0, 1.0, 3.0],
    "follow_ups": [10, 0, 5, 20],
    "thread_weight": [0.5, 0.0, 0.25, 1.0],
    "date_rule": [True, False],
    "thread_cap": [None, None, 1, 2, 3],  # not an option: a re-ordering measured here
    "mmr": [None, None, 0.9, 0.8, 0.7, 0.5],  # likewise: maximal marginal relevance, lambda
    "second_pass": [None, None, 1, 2, 3],  # likewise: slots of the top 10 a second search fills
    "neighbour_share": [None, None, 0.1, 0.2, 0.3],  # likewise: scores passed to neighbours
    "window": [None, None, "before", "around"],  # likewise: a vector per message's window
    "speaker": [None, None, 0.0, 0.05, 0.1, 0.2, 0.4],  # likewise: the named speaker's turns first
    "list_cap": [None, None, 1, 2, 3],  # likewise: thread_cap for questions asking for a list
    "feedback": [None, None, 0.0, 0.1, 0.25, 0.5],  # likewise: pseudo-relevance feedback (Rocchio)
    "asking_last": [None, None, 0.0, 0.05, 0.1, 0.2],  # likewise: question turns demoted
    "speaker_asking": [None, None, (0.1, 0.1), (0.2, 0.1), (0.2, 0.2), (0.4, 0.2)],  # both
    "keyword_share": [0.5, None, 0.3, 0.4, 0.6, 0.7],  # the keyword side's share of the fusion
    "own_share": [1.0, None, 1.5, 2.0, 3.0],  # the candidate's own vector's share of its window
    "whole": [None, None, "window", "window+piece", "mixed"],  # a vector of the whole message
}
POOL = 30


def capped(hits: Sequence[RecallHit], k: int, cap: int | None) -> list[RecallHit]:
    """The top `k` with at most `cap` hits of a thread before the others' (None: as ranked)."""
    if cap is None:
        return list(hits[:k])
    first: list[RecallHit] = []
    later: list[RecallHit] = []
    seen: dict[str, int] = {}
    for hit in hits:
        seen[hit.thread_id] = seen.get(hit.thread_id, 0) + 1
        (first if seen[hit.thread_id] <= cap else later).append(hit)
    return (first + later)[:k]


def mmr(hits: Sequence[RecallHit], k: int, lam: float | None, vectors: dict) -> list[RecallHit]:
    """The top `k` chosen greedily by ``lam * score - (1 - lam) * the highest cosine to a hit
    chosen before`` (scores min-max normalised over the pool; a hit without a vector is
    never penalised). None: as ranked."""
    if lam is None or not hits:
        return list(hits[:k])
    top, bottom = hits[0].score, min(h.score for h in hits)
    spread = (top - bottom) or 1.0
    left, chosen = list(hits), []
    while left and len(chosen) < k:

        def value(hit: RecallHit) -> float:
            own = vectors.get(hit.message_id)
            near = max(
                (
                    float(own @ vectors[c.message_id])
                    for c in chosen
                    if own is not None and c.message_id in vectors
                ),
                default=0.0,
            )
            return lam * (hit.score - bottom) / spread - (1 - lam) * near

        best = max(left, key=value)
        chosen.append(best)
        left.remove(best)
    return chosen


def second_pass(
    index: Any, question: str, resource: str, hits: Sequence[RecallHit], k: int, m: int | None
) -> list[RecallHit]:
    """The first `k - m` hits, then the `m` best new messages of a second vector search with
    what the question asks beyond the first three hits (its vector with their directions
    taken out), then the rest. None: as ranked."""
    if m is None or not hits:
        return list(hits[:k])
    name = index.upkeep.index_name()
    query = np.asarray(index.embedder.embed_query(question), dtype=np.float32)
    residual = query.copy()
    basis: list[np.ndarray] = []
    for vector in remembered(name, [h.message_id for h in hits[:3]]).values():
        for b in basis:
            vector = vector - float(vector @ b) * b
        if np.linalg.norm(vector) > 1e-6:
            basis.append(vector / np.linalg.norm(vector))
    for b in basis:
        residual -= float(residual @ b) * b
    kept = list(hits[: k - m])
    known = {h.message_id for h in kept}
    pieces = index.vector.query(name, residual.tolist(), top_k=60, resource_id=resource)
    extra: list[RecallHit] = []
    for piece in pieces:
        if piece.message_id not in known and len(extra) < m:
            known.add(piece.message_id)
            extra.append(RecallHit(piece.message_id, "", piece.score))
    return kept + extra + [h for h in hits if h.message_id not in known]


def neighbour_share(
    index: Any, resource: str, hits: Sequence[RecallHit], k: int, share: float | None
) -> list[RecallHit]:
    """The pool re-scored with a share of its neighbours' scores: each hit gains `share` x
    the score of the message before it in its thread (twice that when that one asks a
    question: it is answered here) and half of `share` x the score of the one after it,
    when those are in the pool; the top `k` of that. None: as ranked."""
    if share is None or not hits:
        return list(hits[:k])
    score = {h.message_id: h.score for h in hits}
    around = index.storage.message_windows(list(score), before=1, after=1, resource_id=resource)
    gained = dict(score)
    for i, stored in enumerate(around):
        here = str(stored.message.id)
        if here not in score:
            continue
        if i > 0 and around[i - 1].thread_id == stored.thread_id:
            before = around[i - 1]
            weight = 2 * share if asks(message_text(before.message)) else share
            gained[here] += weight * score.get(str(before.message.id), 0.0)
        if i + 1 < len(around) and around[i + 1].thread_id == stored.thread_id:
            gained[here] += share / 2 * score.get(str(around[i + 1].message.id), 0.0)
    ranked = sorted(hits, key=lambda h: -gained[h.message_id])
    return ranked[:k] + [h for h in hits if h not in ranked[:k]]


def pool_messages(index: Any, resource: str, hits: Sequence[RecallHit]) -> dict[str, Any]:
    """The pool's messages by id, read in one call."""
    ids = [h.message_id for h in hits]
    stored = index.storage.message_windows(ids, before=0, after=0, resource_id=resource)
    return {str(s.message.id): s.message for s in stored}


def in_order(hits: Sequence[RecallHit]) -> dict[str, float]:
    """Each hit's score min-max normalised over the pool, made non-increasing along the list
    (the date rule puts a named date's messages first whatever their score): a re-scoring that
    adds nothing keeps the default's order."""
    best, bottom = max(h.score for h in hits), min(h.score for h in hits)
    spread = (best - bottom) or 1.0
    base, floor = {}, 1.0
    for h in hits:
        floor = min(floor, (h.score - bottom) / spread)
        base[h.message_id] = floor
    return base


def asking_last(
    index: Any, resource: str, hits: Sequence[RecallHit], k: int, w: float | None
) -> list[RecallHit]:
    """The pool re-scored: a hit that asks a question (its text ends with "?") loses `w`
    (scores as `in_order`); the top `k` of that. None: as ranked."""
    if w is None or not hits:
        return list(hits[:k])
    asking = {m for m, s in pool_messages(index, resource, hits).items() if asks(message_text(s))}
    base = in_order(hits)
    ranked = sorted(
        hits, key=lambda h: -(base[h.message_id] - (w if h.message_id in asking else 0))
    )
    return ranked[:k] + [h for h in hits if h not in ranked[:k]]


def speaker_first(
    index: Any, question: str, resource: str, hits: Sequence[RecallHit], k: int, w: float | None
) -> list[RecallHit]:
    """The pool re-scored: a hit whose author (the message's ``name``) the question names, and
    the only one of the pool's authors it names, gains `w` (scores min-max normalised over the
    pool); the top `k` of that. None: as ranked."""
    import re

    if w is None or not hits:
        return list(hits[:k])
    stored = pool_messages(index, resource, hits)
    author = {m: getattr(s, "name", None) or "" for m, s in stored.items()}
    words = set(re.findall(r"[a-z]+", question.lower()))
    named = {a for a in set(author.values()) if a and a.lower() in words}
    if len(named) != 1:
        return list(hits[:k])
    base = in_order(hits)

    def gained(h: RecallHit) -> float:
        return base[h.message_id] + (w if author.get(h.message_id) in named else 0.0)

    ranked = sorted(hits, key=lambda h: -gained(h))
    return ranked[:k] + [h for h in hits if h not in ranked[:k]]


def asks_for_a_list(question: str) -> bool:
    """Whether a question asks for several things (``What books has ...``, ``How many``,
    ``Where has ... camped``): the answer is gathered over sessions."""
    import re

    q = question.lower()
    plural = re.match(r"^(what|which)\s+(kinds? of |types? of |sorts? of )?[a-z+/-]+s\b", q)
    return (
        bool(plural and not re.match(r"^what\s+(is|was|does|has)\b", q))
        or "how many" in q
        or bool(re.match(r"^(what|where|who|which)\b.*\b(has|have)\b", q))
        or " some " in q
    )


def feedback(
    index: Any, question: str, hits: Sequence[RecallHit], k: int, w: float | None
) -> list[RecallHit]:
    """Pseudo-relevance feedback (Rocchio): the query moved towards the pool's first three
    messages (``q + mean(top 3)``, unit), and each hit gains `w` x its message's cosine with
    that (scores min-max normalised over the pool); the top `k` of that. None: as ranked."""
    if w is None or not hits:
        return list(hits[:k])
    name = index.upkeep.index_name()
    known = remembered(name, [h.message_id for h in hits])
    query = np.asarray(index.embedder.embed_query(question), dtype=np.float32)
    top3 = [known[h.message_id] for h in hits[:3] if h.message_id in known]
    if not top3:
        return list(hits[:k])
    moved = query + np.mean(top3, axis=0)
    moved /= np.linalg.norm(moved)
    base = in_order(hits)

    def gained(h: RecallHit) -> float:
        own = known.get(h.message_id)
        near = float(own @ moved) / float(np.linalg.norm(own)) if own is not None else 0.0
        return base[h.message_id] + w * near

    ranked = sorted(hits, key=lambda h: -gained(h))
    return ranked[:k] + [h for h in hits if h not in ranked[:k]]


Pick = Callable[[list[RecallHit], str], list[RecallHit]]


def with_windows(memory: Any, resource: str, embedder: Any, reach: str) -> None:
    """Give every message one more piece: its window (the message before it in its thread,
    itself, and with ``around`` the one after), embedded as one text: what window vectors made
    at save time (``before``) or updated when the next message comes (``around``) would add."""
    from langchain_mastra_memory.recall.vector import VectorRecord

    index = memory.recall_index
    records = []
    for thread in memory.list_threads(resource_id=resource):
        stored = memory.storage.list_messages(thread.id)
        texts = [message_text(s.message) for s in stored]
        windows = [
            "\n".join(texts[max(0, i - 1) : i + (2 if reach == "around" else 1)])
            for i in range(len(texts))
        ]
        for s, vector in zip(stored, embedder.embed_documents(windows), strict=True):
            records.append(VectorRecord(s.message.id or "", vector, thread.id, resource,
                                        "user", 0.0, piece=WINDOW_PIECE))  # fmt: skip
    index.vector.upsert(index.upkeep.index_name(), records)


WINDOW_PIECE = 999  # past any sentence piece


def with_whole(memory: Any, resource: str, embedder: Any, use: str) -> None:
    """Give every message a vector of its whole indexed text ("Caroline: ..." in one vector,
    as a save could embed it beside its sentences), for the context stage's windows in place
    of its sentences' mean (``window``), also searched as one more piece (``window+piece``),
    or averaged with its sentences, weighing as much as all of them (``mixed``)."""
    from langchain_mastra_memory.messages import embedding_pieces, index_text
    from langchain_mastra_memory.recall.vector import VectorRecord

    index = memory.recall_index
    name, whole, records = index.upkeep.index_name(), {}, []
    for thread in memory.list_threads(resource_id=resource):
        for stored in memory.storage.list_messages(thread.id):
            pieces = embedding_pieces(stored.message)
            if not pieces:
                continue
            vector = embedder.embed_documents([index_text(stored.message)])[0]
            whole[stored.message.id] = [vector]
            if use == "mixed":
                whole[stored.message.id] = [
                    *embedder.embed_documents(pieces),
                    *[vector] * len(pieces),
                ]
            if use == "window+piece" and len(pieces) > 1:
                records.append(VectorRecord(stored.message.id or "", vector, thread.id, resource,
                                            "user", 0.0, piece=WINDOW_PIECE))  # fmt: skip
    remember(name, whole)  # the context stage reads these instead of the sentences' mean
    if records:
        index.vector.upsert(name, records)


@contextmanager
def patched(name: str, value: Any) -> Iterator[None]:
    """The recall index module's `name` replaced for the block (a stage measured otherwise)."""
    original = getattr(index_module, name)
    setattr(index_module, name, value)
    try:
        yield
    finally:
        setattr(index_module, name, original)


REORDERINGS: dict[str, Callable[[Any, str, str, list[RecallHit], Any], list[RecallHit]]] = {
    # rule -> (index, question, resource, the default's ranked pool, setting) -> the top 10
    "thread_cap": lambda at, q, who, h, v: capped(h, 10, v),
    "list_cap": lambda at, q, who, h, v: capped(h, 10, v if asks_for_a_list(q) else None),
    "neighbour_share": lambda at, q, who, h, v: neighbour_share(at, who, h, 10, v),
    "second_pass": lambda at, q, who, h, v: second_pass(at, q, who, h, 10, v),
    "speaker": lambda at, q, who, h, v: speaker_first(at, q, who, h, 10, v),
    "feedback": lambda at, q, who, h, v: feedback(at, q, h, 10, v),
    "asking_last": lambda at, q, who, h, v: asking_last(at, who, h, 10, v),
    "speaker_asking": lambda at, q, who, h, v: (
        list(h[:10])
        if v is None
        else speaker_first(at, q, who, asking_last(at, who, h, len(h), v[1]), 10, v[0])
    ),
    "mmr": lambda at, q, who, h, v: mmr(
        h, 10, v, remembered(at.upkeep.index_name(), [x.message_id for x in h])
    ),
}


def _reordered(how: Any, who: str, value: Any, hits: list[RecallHit], q: str) -> Any:
    return how(q, who, hits, value)


def recall_at(
    index: Any, qas: list[dict], dia_of: dict[str, str], resource: str, pick: Pick, limit: int
) -> tuple[float, float]:
    """Evidence recall@5 and @10 over `qas`, of the hits `pick` keeps of each search's."""
    at5 = at10 = 0.0
    for qa in qas:
        hits = index.search(qa["question"], resource_id=resource, limit=limit)
        found = [dia_of.get(h.message_id) for h in pick(hits, qa["question"])]
        evidence = set(qa["evidence"])
        at5 += len(evidence & set(found[:5])) / len(evidence)
        at10 += len(evidence & set(found[:10])) / len(evidence)
    return at5 / len(qas), at10 / len(qas)


def measure(
    path: Path, model: Embeddings | None = None
) -> dict[str, dict[tuple[str, Any], tuple[float, float]]]:
    """Per conversation, per (rule, setting): evidence recall@5 and @10 (with `model`'s
    vectors, the default MiniLM's unless given)."""
    embedder = CachedEmbeddings(model or MiniLMEmbeddings())
    table: dict[str, dict[tuple[str, Any], tuple[float, float]]] = {}
    for file in sorted(path.glob("*.json")):
        data = json.loads(file.read_text())
        memory, dia_of, _ = load_conversation(
            data, file.stem, SQLiteStorage(":memory:"), embedder, POOL
        )
        index = memory.recall_index
        assert index is not None
        default, qas = index.options, questions_of(data)
        row: dict[tuple[str, Any], tuple[float, float]] = {}

        asked = (index, qas, dia_of, file.stem)
        for rule, settings in RULES.items():
            for value in dict.fromkeys(settings):
                if rule in REORDERINGS:
                    how = partial(REORDERINGS[rule], index)
                    pick = partial(_reordered, how, file.stem, value)
                    row[(rule, value)] = recall_at(*asked, pick, POOL)
                    continue
                if rule == "keyword_share":
                    weights = (0.5, 0.5) if value is None else (1 - value, value)
                    with patched("fuse", partial(fuse, shares=weights)):
                        row[(rule, value)] = recall_at(*asked, lambda h, q: h, 10)
                    continue
                if rule == "own_share":
                    own = 1.0 if value is None else value
                    with patched("windows", partial(windows, own_share=own)):
                        row[(rule, value)] = recall_at(*asked, lambda h, q: h, 10)
                    continue
                if rule in ("window", "whole") and value is not None:
                    again, again_dia, _ = load_conversation(
                        data, file.stem, SQLiteStorage(":memory:"), embedder, POOL
                    )
                    extra = with_windows if rule == "window" else with_whole
                    extra(again, file.stem, embedder, value)
                    row[(rule, value)] = recall_at(again.recall_index, qas, again_dia,
                                                   file.stem, lambda h, q: h, 10)  # fmt: skip
                    continue
                if rule in ("window", "whole"):
                    row[(rule, value)] = recall_at(*asked, lambda h, q: h, 10)
                    continue
                index.options = default.model_copy(update={rule: value})
                row[(rule, value)] = recall_at(*asked, lambda h, q: h, 10)
            index.options = default
        table[file.stem] = row
        print(f"  {file.stem}: {len(qas)} questions", file=sys.stderr)
    return table


def report(table: dict[str, dict[tuple[str, Any], tuple[float, float]]]) -> None:
    """The per-conversation table of every rule's settings, then the five folds' verdicts."""
    conversations = list(table)
    print("evidence recall@5 / @10 per conversation and setting (the default first)")
    print("| rule = setting | " + " | ".join(conversations) + " | mean |")
    print("|---|" + "---:|" * (len(conversations) + 1))
    for rule, settings in RULES.items():
        for value in dict.fromkeys(settings):
            cells = [table[c][(rule, value)] for c in conversations]
            mean = (statistics.mean(a for a, _ in cells), statistics.mean(b for _, b in cells))
            print(f"| {rule} = {value} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in cells)
                  + f" | {mean[0]:.3f} / {mean[1]:.3f} |")  # fmt: skip
    print("\nfolds: the setting chosen on four conversations, the fifth's gain over the rule off")
    for rule, settings in RULES.items():
        off, gains = settings[1], []
        for held in conversations:
            others = [c for c in conversations if c != held]
            chosen = max(
                dict.fromkeys(settings),
                key=lambda v: statistics.mean(sum(table[c][(rule, v)]) for c in others),
            )
            on, base = table[held][(rule, chosen)], table[held][(rule, off)]
            gains.append((chosen, on[0] - base[0], on[1] - base[1]))
        wins = [sum(g[i] > 1e-9 for g in gains) for i in (1, 2)]
        verdict = "kept" if min(wins) >= 4 else "kept at @10 only" if wins[1] >= 4 else "dropped"
        print(f"  {rule}: chosen {[g[0] for g in gains]}; held-out gain @5 "
              f"{[round(g[1], 3) for g in gains]} ({wins[0]}/5), @10 "
              f"{[round(g[2], 3) for g in gains]} ({wins[1]}/5): {verdict}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rules", nargs="*", choices=list(RULES), help="only these rules")
    parser.add_argument(
        "--vectors", type=Path, help="another model's vectors of the texts (bench/precomputed.py)"
    )
    args = parser.parse_args()
    for rule in set(RULES) - set(args.rules or RULES):
        del RULES[rule]
    if not any(args.data.glob("*.json")):
        sys.exit(f"no conversations in {args.data} (see ../shared/eval/README.md)")
    report(measure(args.data, Precomputed(args.vectors) if args.vectors else None))


if __name__ == "__main__":
    main()
