"""Recall quality: evidence recall@k per recall mode, on real conversations and a synthetic set.

**LoCoMo** (``../shared/eval/locomo-dev/``, real multi-session chat; its README gives the
metric): one resource per conversation, one thread per session, every turn a message (the
speaker as the message's ``name``, its time the session's), and for each question of categories
1-4 the question is the recall query over the whole resource; evidence recall@k is the share of
its evidence turns among the k recalled messages (no neighbours), averaged over questions.
Compared: ``vector``, ``keyword`` and ``hybrid`` through `Memory`, and plain BM25 (rank_bm25
over whitespace tokens, the eval README's baseline).

**Synthetic** (second table): 30 planted facts over 12 sessions with paraphrased questions
(`recall_data.py`), recall@k of the fact's message, 3 seeds.

    python bench/recall_eval.py [--data ../shared/eval/locomo-dev] [--skip-synthetic]
                                [--precision float32|int8] [--postgres DSN] [--folds]
                                [--vectors NPZ]  (another model's vectors: precomputed.py)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import DEFAULT_DATA, conversation_turns, load_conversation, questions_of
from recall_data import FACTS, build

from langchain_mastra_memory import Memory, MemoryStorage, PostgresStorage, SQLiteStorage
from langchain_mastra_memory.recall.embedders import CachedEmbeddings, MiniLMEmbeddings

MODES = ("vector", "keyword", "hybrid")
CONFIGS = (  # (label, mode, context_weight): each first stage alone, then with its context stage
    ("vector", "vector", 0.0),
    ("vector + context", "vector", None),
    ("keyword", "keyword", 0.0),
    ("hybrid", "hybrid", 0.0),
    ("hybrid + context (default)", "hybrid", None),
)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


Scores = tuple[
    dict[str, list[float]],  # per configuration: recall@k over questions (then their count)
    dict[str, dict[int, float]],  # recall@10 by category
    dict[str, dict[str, tuple[float, float]]],  # recall@5 and @10 by conversation
    dict[str, list[float]],  # each search's ms
]


def locomo(
    path: Path, ks: tuple[int, ...], embedder: CachedEmbeddings, dsn: str | None = None
) -> Scores:
    """Per configuration: evidence recall@k averaged over questions (and the question count),
    recall@10 by LoCoMo category, recall@5 and @10 by conversation, and each search's
    milliseconds (query embedding included: the embedding cache is emptied before each). In
    PostgreSQL (a schema per conversation, vectors in pgvector) when `dsn` is given."""
    from rank_bm25 import BM25Okapi

    labels = [label for label, _, _ in CONFIGS]
    totals: dict[str, list[float]] = {m: [0.0] * len(ks) for m in (*labels, "BM25")}
    by_category: dict[str, dict[int, list[float]]] = {m: {} for m in labels}
    by_conversation: dict[str, dict[str, tuple[float, float]]] = {m: {} for m in labels}
    latency: dict[str, list[float]] = {m: [] for m in labels}
    questions = 0
    for file in sorted(path.glob("*.json")):
        data = json.loads(file.read_text())
        storage: MemoryStorage = SQLiteStorage(":memory:")
        if dsn:
            PostgresStorage(dsn, schema=f"eval_{file.stem}").drop_schema()
            storage = PostgresStorage(dsn, schema=f"eval_{file.stem}")
        started = time.perf_counter()
        memory, dia_of, texts = load_conversation(data, file.stem, storage, embedder, max(ks))
        ids = [t["dia_id"] for _n, _w, turns in conversation_turns(data) for t in turns]
        bm25 = BM25Okapi([t.split() for t in texts])
        qas = questions_of(data)
        index = memory.recall_index
        assert index is not None
        default = index.options
        for qa in qas:
            evidence = set(qa["evidence"])
            scores = bm25.get_scores(qa["question"].split())
            ranked = [ids[i] for i in sorted(range(len(ids)), key=lambda i: -scores[i])]
            for j, k in enumerate(ks):
                totals["BM25"][j] += len(evidence & set(ranked[:k])) / len(evidence)
        for label, mode, weight in CONFIGS:
            update = {
                "mode": mode,
                "context_weight": default.context_weight if weight is None else weight,
            }
            index.options = default.model_copy(update=update)
            own = [0.0, 0.0]  # this conversation's recall@5 and @10
            for qa in qas:
                evidence = set(qa["evidence"])
                embedder.cache.data.clear()
                begun = time.perf_counter()
                hits = index.search(qa["question"], resource_id=file.stem, limit=max(ks))
                latency[label].append((time.perf_counter() - begun) * 1000)
                found = [dia_of.get(h.message_id) for h in hits]
                for j, k in enumerate(ks):
                    totals[label][j] += len(evidence & set(found[:k])) / len(evidence)
                at10 = len(evidence & set(found[:10])) / len(evidence)
                by_category[label].setdefault(qa["category"], []).append(at10)
                own[0] += len(evidence & set(found[:5])) / len(evidence)
                own[1] += at10
            by_conversation[label][file.stem] = (own[0] / len(qas), own[1] / len(qas))
        questions += len(qas)
        print(
            f"  {file.name}: {len(texts)} turns, {len(qas)} questions, "
            f"{time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    rows = {m: [t / questions for t in v] + [questions] for m, v in totals.items()}
    categories = {
        m: {c: statistics.mean(v) for c, v in sorted(cats.items())}
        for m, cats in by_category.items()
    }
    return rows, categories, by_conversation, latency


def synthetic(seed: int, ks: tuple[int, ...]) -> dict[str, list[float]]:
    turns = build(seed)
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        options={"semantic_recall": {"top_k": max(ks)}},
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
    index = memory.recall_index
    assert index is not None
    results: dict[str, list[float]] = {}
    for mode in MODES:
        index.options = index.options.model_copy(update={"mode": mode})
        hits_at = [0] * len(ks)
        for i, (_fact, question, _distractor) in enumerate(FACTS):
            found = [
                h.message_id for h in index.search(question, resource_id="user", limit=max(ks))
            ]
            for j, k in enumerate(ks):
                hits_at[j] += evidence[i] in found[:k]
        results[mode] = [h / len(FACTS) for h in hits_at]
    return results


def table(title: str, rows: dict[str, list[float]], ks: tuple[int, ...]) -> None:
    print(f"\n{title}")
    print("| mode | " + " | ".join(f"@{k}" for k in ks) + " |")
    print("|---|" + "---:|" * len(ks))
    for mode, values in rows.items():
        print(f"| {mode} | " + " | ".join(f"{v:.3f}" for v in values[: len(ks)]) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument(
        "--precision", choices=["float32", "int8"], default="float32", help="of the embedder"
    )
    parser.add_argument("--postgres", metavar="DSN", help="LoCoMo in PostgreSQL + pgvector")
    parser.add_argument(
        "--folds", action="store_true", help="also each rule left out, one conversation at a time"
    )
    parser.add_argument(
        "--vectors", type=Path, help="another model's vectors of the texts (bench/precomputed.py)"
    )
    args = parser.parse_args()
    if args.vectors:  # (imported when asked: it loads numpy arrays of another model)
        from precomputed import Precomputed

        model: Embeddings = Precomputed(args.vectors)
        name = f"{model.model_name}, precomputed"  # type: ignore[attr-defined]
    else:
        model, name = (
            MiniLMEmbeddings(precision=args.precision),
            f"all-MiniLM-L6-v2 {args.precision}",
        )
    embedder = CachedEmbeddings(model)
    print(f"recall quality, {datetime.now():%Y-%m-%d}, {name}")
    if args.data.is_dir() and any(args.data.glob("*.json")):
        ks = (5, 10, 20, 50)
        rows, categories, conversations, latency = locomo(args.data, ks, embedder, args.postgres)
        count = int(next(iter(rows.values()))[-1])
        where = " in PostgreSQL" if args.postgres else ""
        title = f"LoCoMo ({args.data.name}, {count} questions){where}: evidence recall@k"
        table(title, rows, ks)
        print("\nrecall@10 by category, and each search's ms (query embedding included)")
        print("| mode | " + " | ".join(CATEGORIES.values()) + " | p50 ms | p95 ms |")
        print("|---|" + "---:|" * (len(CATEGORIES) + 2))
        for label, cats in categories.items():
            cells = [f"{cats.get(c, 0.0):.3f}" for c in CATEGORIES]
            p50, p95 = (statistics.quantiles(latency[label], n=100)[q] for q in (49, 94))
            print(f"| {label} | " + " | ".join(cells) + f" | {p50:.1f} | {p95:.1f} |")
        names = list(next(iter(conversations.values())))
        print("\nrecall@5 / @10 by conversation")
        print("| mode | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        for label, cells_of in conversations.items():
            print(f"| {label} | " + " | ".join(f"{a:.3f} / {b:.3f}" for a, b in cells_of.values())
                  + " |")  # fmt: skip
        if args.folds:  # (imported when asked)
            from recall_folds import measure, report

            report(measure(args.data, model if args.vectors else None))
    else:
        print(f"\nLoCoMo: no conversations in {args.data} (see ../shared/eval/README.md); skipped")
    if not args.skip_synthetic:
        runs = [synthetic(seed, (1, 3, 5)) for seed in args.seeds]
        mean = {m: [statistics.mean(r[m][j] for r in runs) for j in range(3)] for m in MODES}
        table(
            f"synthetic paraphrases ({len(FACTS)} facts x {len(args.seeds)} seeds)", mean, (1, 3, 5)
        )


if __name__ == "__main__":
    main()
