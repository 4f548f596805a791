"""Recall's rules, kept only where every conversation gains: leave-one-conversation-out.

On the LoCoMo dev conversations (``recall_eval.py``'s metric: a resource per conversation, the
question over the whole resource, evidence recall@5 and @10), each rule of the default recall is
tried at a few settings, the others at their defaults, per conversation. Then five folds: the
setting is chosen on four conversations (best mean of @5 and @10) and measured on the fifth,
against the rule switched off. A rule earns its place when the held-out conversation gains in
at least four folds of five. Also measured: a cap on hits per thread inside the top k (session
diversity for questions whose evidence spans sessions), as a re-ordering of the default's
ranked pool, `cap` hits per thread before any other.

    python bench/recall_folds.py [--data ../shared/eval/locomo-dev]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from recall_eval import DEFAULT_DATA, load_conversation, questions_of

from langchain_mastra_memory import SQLiteStorage
from langchain_mastra_memory.recall.embeddings import CachedEmbeddings, MiniLMEmbeddings
from langchain_mastra_memory.recall.ranking import RecallHit

RULES: dict[str, list[Any]] = {  # each rule's settings: the default first, then "off"
    "context_weight": [2.0, 0.0, 1.0, 3.0],
    "follow_ups": [10, 0, 5, 20],
    "thread_weight": [0.5, 0.0, 0.25, 1.0],
    "date_rule": [True, False],
    "thread_cap": [None, None, 1, 2, 3],  # not an option: a re-ordering measured here
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


Pick = Callable[[list[RecallHit]], list[RecallHit]]


def recall_at(
    index: Any, qas: list[dict], dia_of: dict[str, str], resource: str, pick: Pick, limit: int
) -> tuple[float, float]:
    """Evidence recall@5 and @10 over `qas`, of the hits `pick` keeps of each search's."""
    at5 = at10 = 0.0
    for qa in qas:
        hits = index.search(qa["question"], resource_id=resource, limit=limit)
        found = [dia_of.get(h.message_id) for h in pick(hits)]
        evidence = set(qa["evidence"])
        at5 += len(evidence & set(found[:5])) / len(evidence)
        at10 += len(evidence & set(found[:10])) / len(evidence)
    return at5 / len(qas), at10 / len(qas)


def measure(path: Path) -> dict[str, dict[tuple[str, Any], tuple[float, float]]]:
    """Per conversation, per (rule, setting): evidence recall@5 and @10."""
    embedder = CachedEmbeddings(MiniLMEmbeddings())
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
                if rule == "thread_cap":
                    row[(rule, value)] = recall_at(
                        *asked, lambda h, c=value: capped(h, 10, c), POOL
                    )
                    continue
                index.options = default.model_copy(update={rule: value})
                row[(rule, value)] = recall_at(*asked, lambda h: h, 10)
            index.options = default
        table[file.stem] = row
        print(f"  {file.stem}: {len(qas)} questions", file=sys.stderr)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if not any(args.data.glob("*.json")):
        sys.exit(f"no conversations in {args.data} (see ../shared/eval/README.md)")
    table = measure(args.data)
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


if __name__ == "__main__":
    main()
