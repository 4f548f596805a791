"""Retrieval-quality evaluation: recall@k of the evidence message, per recall mode.

Builds the multi-session set of `recall_data.py` (30 facts over 12 sessions of one user, with
distractors), stores it through `Memory`, then asks each paraphrased question from a new
session and checks whether the message that stated the fact is among the top k hits.

Modes: ``vector`` (all-MiniLM-L6-v2 + Chroma), ``keyword`` (SQLite FTS5, BM25), ``hybrid``
(reciprocal-rank fusion of both), and the ``last-N`` baseline (is the evidence among the last
40 messages, i.e. plain message history with no recall).

    python bench/recall_eval.py [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).parent))
from recall_data import FACTS, build

from langchain_mastra_memory import Memory, SQLiteStorage

KS = (1, 3, 5)


def evaluate(seed: int) -> dict[str, dict[int, float]]:
    turns = build(seed)
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        options={"semantic_recall": {"mode": "vector", "top_k": max(KS)}},
    )
    evidence: dict[int, str] = {}
    for session in sorted({t.session for t in turns}):
        memory.create_thread(resource_id="user", thread_id=f"s{session}")
        batch = [t for t in turns if t.session == session]
        saved = memory.save_messages(
            [HumanMessage(t.text) if t.role == "user" else AIMessage(t.text) for t in batch],
            thread_id=f"s{session}",
            resource_id="user",
        )
        for turn, message in zip(batch, saved, strict=True):
            if turn.fact is not None:
                evidence[turn.fact] = message.id or ""
    assert memory.recall_index is not None
    processor = memory.recall_index.processor
    last = {
        m.id
        for m in memory.get_messages(
            thread_id=f"s{max(t.session for t in turns)}", last_messages=40
        )
    }
    results: dict[str, dict[int, float]] = {}
    for mode in ("vector", "keyword", "hybrid"):
        processor.options = processor.options.model_copy(update={"mode": mode})
        hits_at = {k: 0 for k in KS}
        for i, (_fact, question, _distractor) in enumerate(FACTS):
            ids = [
                h.message_id for h in processor.search(question, resource_id="user", limit=max(KS))
            ]
            for k in KS:
                hits_at[k] += evidence[i] in ids[:k]
        results[mode] = {k: hits_at[k] / len(FACTS) for k in KS}
    base = sum(evidence[i] in last for i in range(len(FACTS))) / len(FACTS)
    results["last-40 (no recall)"] = {k: base for k in KS}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args()
    runs = [evaluate(seed) for seed in args.seeds]
    print(f"recall@k of the evidence message, {len(FACTS)} questions x {len(args.seeds)} seeds")
    print("| mode | " + " | ".join(f"recall@{k}" for k in KS) + " |")
    print("|---|" + "---:|" * len(KS))
    for mode in runs[0]:
        cells = [statistics.mean(r[mode][k] for r in runs) for k in KS]
        print(f"| {mode} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")


if __name__ == "__main__":
    main()
