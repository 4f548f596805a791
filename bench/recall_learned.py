"""How far the signals recall already has can go: a re-scorer learned on four conversations.

Every rule measured by ``recall_folds.py`` re-weighs one signal by hand. This asks what all of
them together can do at best. Over the default's ranked pool (its top 30 on LoCoMo dev), each
candidate gets every cheap signal a search has or could have without a model call: its rank
and score in the default's order, each side's own score (best-piece cosine, BM25), the query's
cosine with its mean vector and with the messages before and after it, whether it or the one
before it asks a question, its length, and the share of the question's words (weighted by how
rare they are in the conversation) it holds. A linear scorer is learned from pairs (an
evidence turn against a non-evidence turn of the same question, one of them in the top 15:
RankNet's pairwise logistic loss) on four conversations and measured on the fifth, against the
default's own order. A rule made of it would earn its place as the others do: gains on at
least four of five held-out folds, at @5 and at @10.

    python bench/recall_learned.py [--data ../shared/eval/locomo-dev] [--ablate] [--vectors NPZ]

The last row learns from the pairs @10 counts instead: an evidence turn and a non-evidence
turn on either side of the top 10's edge.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import DEFAULT_DATA, load_conversation, questions_of
from precomputed import Precomputed

from langchain_mastra_memory import SQLiteStorage
from langchain_mastra_memory.recall.embedders import CachedEmbeddings, MiniLMEmbeddings
from langchain_mastra_memory.recall.ranking import RecallHit, asks, remember, remembered
from langchain_mastra_memory.storage.keywords import query_words
from langchain_mastra_memory.storage.records import Neighbour

POOL = 30  # the default's pool (rerank_pool)
PAIR_DEPTH = 15  # a pair is learned from when one of its two is within this rank
FEATURES = (
    "rank", "score", "vector", "keyword", "own", "before", "after",
    "asks", "answers", "length", "words",
)  # fmt: skip


class Question(NamedTuple):
    """One question's pool as the scorer sees it."""

    rows: np.ndarray  # `FEATURES` per candidate, in the default's order
    labels: np.ndarray  # whether each candidate is an evidence turn
    total: int  # the question's evidence turns
    category: int  # LoCoMo's: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop
    threads: list[str]  # each candidate's


def _words(text: str) -> set[str]:
    return set(query_words(text, max_terms=10_000))


def candidates(data: dict, stem: str, embedder: CachedEmbeddings) -> list[Question]:
    """Per question of one conversation: its pool's features (rows in the default's order),
    which rows are evidence, and how many evidence turns it has."""
    memory, dia_of, texts = load_conversation(data, stem, SQLiteStorage(":memory:"), embedder, POOL)
    index = memory.recall_index
    assert index is not None
    name = index.upkeep.index_name()
    counts = Counter(w for text in texts for w in _words(text))
    rarity = {w: math.log(1 + (len(texts) - n + 0.5) / (n + 0.5)) for w, n in counts.items()}
    rarest = max(rarity.values())
    found: list[Question] = []
    for qa in questions_of(data):
        question = qa["question"]
        hits = index.search(question, resource_id=stem, limit=POOL)
        sides = index.side_scores(question, resource_id=stem)
        ids = [h.message_id for h in hits]
        around = memory.storage.message_neighbours(ids, resource_id=stem)
        means = remembered(name, [n.id for n in around])
        if missing := [n.id for n in around if n.id not in means]:
            means |= remember(name, index.vector.vectors(name, stem, missing))
        query = np.asarray(embedder.embed_query(question), dtype=np.float32)
        query /= np.linalg.norm(query)
        asked = {w: rarity.get(w, rarest) for w in _words(question)}
        rows = features(hits, sides, around, means, query, asked)
        evidence = set(qa["evidence"])
        labels = np.array([dia_of.get(h.message_id) in evidence for h in hits])
        threads = [h.thread_id for h in hits]
        found.append(Question(rows, labels, len(evidence), qa["category"], threads))
    return found


def features(
    hits: list[RecallHit],
    sides: dict[str, dict[str, float]],
    around: list[Neighbour],
    means: dict[str, np.ndarray],
    query: np.ndarray,
    asked: dict[str, float],
) -> np.ndarray:
    """One row of `FEATURES` per hit, in the default's order."""
    position = {n.id: i for i, n in enumerate(around)}

    def neighbour(i: int, step: int) -> Neighbour | None:
        j = i + step
        same = 0 <= j < len(around) and around[j].thread_id == around[i].thread_id
        return around[j] if same else None

    def cosine(n: Neighbour | None) -> float:
        return float(means[n.id] @ query) if n is not None and n.id in means else 0.0

    vector, keyword = sides.get("vector", {}), sides.get("keyword", {})
    v_low = min(vector.values(), default=0.0)
    v_spread = (max(vector.values(), default=1.0) - v_low) or 1.0
    k_top = max(keyword.values(), default=1.0) or 1.0
    s_low = min(h.score for h in hits)
    s_spread = (max(h.score for h in hits) - s_low) or 1.0
    rows = []
    for rank, hit in enumerate(hits):
        i = position[hit.message_id]
        me, before, after = around[i], neighbour(i, -1), neighbour(i, 1)
        held = _words(me.text)
        rows.append([
            -math.log1p(rank),
            (hit.score - s_low) / s_spread,
            (vector[hit.message_id] - v_low) / v_spread if hit.message_id in vector else 0.0,
            keyword.get(hit.message_id, 0.0) / k_top,
            cosine(me), cosine(before), cosine(after),
            float(asks(me.text)),
            float(before is not None and asks(before.text)),
            math.log1p(len(held)),
            sum(r for w, r in asked.items() if w in held) / (sum(asked.values()) or 1.0),
        ])  # fmt: skip
    return np.array(rows)


def learn(
    questions: list[Question], columns: list[int], *, across_ten: bool = False, l2: float = 1e-3
) -> np.ndarray:
    """Weights of a linear scorer from pairwise logistic loss (gradient descent; the features
    scaled by their mean absolute difference). The pairs: one of the two within the top
    `PAIR_DEPTH`, or with `across_ten` one in the top 10 and the other below it (what @10
    counts)."""
    pairs = []
    for rows, labels, *_ in questions:
        x = rows[:, columns]
        for i in np.flatnonzero(labels):
            for j in np.flatnonzero(~labels):
                if ((i < 10) != (j < 10)) if across_ten else min(i, j) < PAIR_DEPTH:
                    pairs.append(x[i] - x[j])
    if not pairs:
        return np.zeros(len(columns))
    diff = np.array(pairs)
    scale = np.abs(diff).mean(axis=0)
    scale[scale == 0] = 1.0
    z, w = diff / scale, np.zeros(len(columns))
    for _ in range(2000):
        wrong = 1.0 / (1.0 + np.exp(z @ w))
        w -= 0.5 * (-(z.T @ wrong) / len(z) + l2 * w)
    return w / scale


def recall(
    questions: list[Question], columns: list[int], w: np.ndarray | None
) -> tuple[float, float]:
    """Evidence recall@5 and @10: the default's order (`w` None) or the learned scorer's."""
    at5 = at10 = 0.0
    for rows, labels, total, *_ in questions:
        order = (
            np.arange(len(rows))
            if w is None
            else np.argsort(-(rows[:, columns] @ w), kind="stable")
        )
        at5 += labels[order[:5]].sum() / total
        at10 += labels[order[:10]].sum() / total
    return at5 / len(questions), at10 / len(questions)


def perfect(questions: list[Question]) -> tuple[float, float]:
    """Evidence recall@5 and @10 of the pool with every evidence turn first."""
    at5 = statistics.mean(min(5, q.labels.sum()) / q.total for q in questions)
    at10 = statistics.mean(min(10, q.labels.sum()) / q.total for q in questions)
    return at5, at10


def missed(questions: list[Question]) -> str:
    """Where the evidence ranked 11th to 30th is: by category, and for multi-hop questions
    whether its session has a message in the top 10."""
    by_category: Counter[int] = Counter()
    elsewhere = multi_hop = 0
    sessions = []
    for q in questions:
        top = set(q.threads[:10])
        if q.category == 1:
            sessions.append(len(top))
        for i in np.flatnonzero(q.labels):
            if i >= 10:
                by_category[q.category] += 1
                if q.category == 1:
                    multi_hop += 1
                    elsewhere += q.threads[i] not in top
    return (
        f"evidence ranked 11-30: {sum(by_category.values())} turns, by category "
        f"{dict(sorted(by_category.items()))}; of the {multi_hop} multi-hop ones, {elsewhere} in "
        f"a session with no message in the top 10 (which spans {statistics.mean(sessions):.1f} "
        "sessions on average for a multi-hop question)"
    )


def folds(table: dict[str, list[Question]], signals: list[str], across_ten: bool = False) -> None:
    """Learn on four conversations, measure on the fifth; print the folds and the verdict."""
    columns = [FEATURES.index(f) for f in signals]
    gains, cells, held_out = [], [], []
    for held in table:
        w = learn([q for c in table if c != held for q in table[c]], columns, across_ten=across_ten)
        base, on = recall(table[held], columns, None), recall(table[held], columns, w)
        gains.append((on[0] - base[0], on[1] - base[1]))
        held_out.append(on)
        cells.append(
            f"{held} {on[0]:.3f} / {on[1]:.3f} ({on[0] - base[0]:+.3f} / {on[1] - base[1]:+.3f})"
        )
    mean = [statistics.mean(g[i] for g in gains) for i in (0, 1)]
    wins = [sum(g[i] > 1e-9 for g in gains) for i in (0, 1)]
    verdict = "earns a place" if min(wins) >= 4 else "does not earn a place"
    reached = [statistics.mean(h[i] for h in held_out) for i in (0, 1)]
    gained = (
        f"{reached[0]:.3f} / {reached[1]:.3f} ({mean[0]:+.3f} / {mean[1]:+.3f}) "
        f"| {wins[0]}/5, {wins[1]}/5: {verdict}"
    )
    learned = " (pairs across the top 10's edge)" if across_ten else ""
    print(f"| {' + '.join(signals)}{learned} | " + " · ".join(cells) + f" | {gained} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--ablate", action="store_true", help="also each signal left out in turn")
    parser.add_argument(
        "--vectors", type=Path, help="another model's vectors of the texts (bench/precomputed.py)"
    )
    args = parser.parse_args()
    if not any(args.data.glob("*.json")):
        sys.exit(f"no conversations in {args.data} (see ../shared/eval/README.md)")
    embedder = CachedEmbeddings(Precomputed(args.vectors) if args.vectors else MiniLMEmbeddings())
    table = {}
    for file in sorted(args.data.glob("*.json")):
        table[file.stem] = candidates(json.loads(file.read_text()), file.stem, embedder)
        print(f"  {file.stem}: {len(table[file.stem])} questions", file=sys.stderr)
    best = {c: perfect(qs) for c, qs in table.items()}
    base = {c: recall(qs, [0], None) for c, qs in table.items()}
    print(
        f"a perfect order of the default's top {POOL} (what any re-order can reach): "
        + " · ".join(f"{c} {a:.3f} / {b:.3f}" for c, (a, b) in best.items())
        + f"; mean {statistics.mean(a for a, _ in best.values()):.3f} / "
        f"{statistics.mean(b for _, b in best.values()):.3f}"
    )
    print(missed([q for qs in table.values() for q in qs]))
    print("the default: " + " · ".join(f"{c} {a:.3f} / {b:.3f}" for c, (a, b) in base.items()))
    print(
        "\n| signals | held-out recall@5 / @10 (gain over the default) | mean (gain) "
        "| folds gaining |"
    )
    print("|---|---|---:|---|")
    sets = [["rank", "score"], list(FEATURES)]
    if args.ablate:
        sets += [[f for f in FEATURES if f != left] for left in FEATURES[2:]]
    for signals in sets:
        folds(table, signals)
    folds(table, list(FEATURES), across_ten=True)


if __name__ == "__main__":
    main()
