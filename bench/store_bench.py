"""Benchmark: `memory.store()` search with ``query=`` beside LangGraph's `PostgresStore`.

The same items in both, in one PostgreSQL: every LoCoMo dev turn's text cycled to `--size`
items in ONE namespace (``("memories", "alice")``, value ``{"text": ..., "n": i}``, the
``text`` field indexed), embedded with the real MiniLM model (a cycled copy gets its turn's
vector plus noise, sigma 0.04 per dimension, as in pg_recall_bench). Both stores get the same
precomputed vectors through one table-lookup embedder, so the query embedding is excluded.
LangGraph's `PostgresStore` has its pgvector HNSW index (its default ``ann_index_config``).

Timed per query, interleaved (which store goes first alternates), LoCoMo questions, caches
cleared between repetitions: ``search(namespace, query=q, limit=10)`` p50 / p95; ANN@10: the
share of an exact float32 top-10 each returns.

    python bench/store_bench.py [--size 100000] [--queries 200] [--reps 2] [--dsn ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import turns_and_questions
from pg_recall_bench import NOISE, pct

from langchain_mastra_memory import Memory, PostgresStorage
from langchain_mastra_memory.recall.embedders import EMBEDDING_CACHE, MiniLMEmbeddings

NAMESPACE = ("memories", "alice")
CACHE = Path(tempfile.gettempdir()) / "lmm-locomo-turns.npz"


class Table(Embeddings):
    """Vectors computed beforehand, looked up by text (both stores embed through this)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text].tolist()


def items(size: int, embedder: MiniLMEmbeddings) -> tuple[list[str], np.ndarray, list[str]]:
    """Item texts, their vectors (float32, unit) and the questions."""
    turns, questions = turns_and_questions()
    base_texts = sorted({t for t, _ in turns})
    if CACHE.exists() and list(np.load(CACHE)["texts"]) == base_texts:
        base = np.load(CACHE)["vectors"]
    else:
        print(f"embedding {len(base_texts)} turns ...", file=sys.stderr)
        base = np.asarray(embedder.embed_documents(base_texts), dtype=np.float32)
        np.savez(CACHE, texts=np.asarray(base_texts), vectors=base)
    row = {t: i for i, t in enumerate(base_texts)}
    rng = np.random.default_rng(0)
    texts, vectors = [], np.empty((size, base.shape[1]), dtype=np.float32)
    for i in range(size):
        turn = turns[i % len(turns)][0]
        copy = i // len(turns)
        texts.append(turn if copy == 0 else f"{turn} ({copy})")
        v = base[row[turn]]
        if copy:
            v = v + NOISE * rng.standard_normal(v.size).astype(np.float32)
        vectors[i] = v / np.linalg.norm(v)
    return texts, vectors, questions


def load(store, texts: list[str], label: str) -> None:  # type: ignore[no-untyped-def]
    from langgraph.store.base import PutOp

    started = time.perf_counter()
    for start in range(0, len(texts), 1000):
        store.batch(
            [
                PutOp(NAMESPACE, f"m{i}", {"text": texts[i], "n": i})
                for i in range(start, min(start + 1000, len(texts)))
            ]
        )
    print(
        f"  {label}: {len(texts)} items in {time.perf_counter() - started:.0f} s", file=sys.stderr
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--reuse", action="store_true", help="the items a previous run left")
    args = parser.parse_args()
    if args.dsn is None:
        from langchain_mastra_memory.testing import throwaway_postgres

        args.dsn = throwaway_postgres()
    from langgraph.store.postgres import PostgresStore

    model = MiniLMEmbeddings()
    texts, matrix, questions = items(args.size, model)
    rng = np.random.default_rng(1)
    questions = [questions[i] for i in rng.permutation(len(questions))[: args.queries]]
    query_vectors = np.asarray(model.embed_documents(questions), dtype=np.float32)
    table = Table(dict(zip(texts, matrix, strict=True)))
    table.vectors.update(zip(questions, query_vectors, strict=True))
    index = {"dims": 384, "embed": table, "fields": ["text"]}

    schema = f"store_bench_{args.size}"
    storage = PostgresStorage(args.dsn, schema=schema)
    if not args.reuse:
        storage.drop_schema()
        storage = PostgresStorage(args.dsn, schema=schema)
    ours = Memory(storage=storage).store(index=index)
    with PostgresStore.from_conn_string(args.dsn, index=index) as theirs:  # type: ignore[arg-type]
        theirs.setup()
        if not args.reuse:
            with storage._transaction(write=True) as conn:
                conn.execute("DELETE FROM public.store")
                conn.execute("DELETE FROM public.store_vectors")
            load(ours, texts, "memory.store()")
            load(theirs, texts, "PostgresStore")
            with storage._transaction(write=True) as conn:
                conn.execute("ANALYZE")
                conn.execute("ANALYZE public.store_vectors")
        stores = {"memory.store()": ours, "PostgresStore": theirs}
        timings: dict[str, list[float]] = {name: [] for name in stores}
        found: dict[str, list[list[str]]] = {name: [] for name in stores}
        with threadpool_limits(limits=1):
            for rep in range(args.reps):
                EMBEDDING_CACHE.clear()
                for n, q in enumerate(questions):
                    order = list(stores) if (n + rep) % 2 == 0 else list(stores)[::-1]
                    for name in order:
                        started = time.perf_counter()
                        hits = stores[name].search(NAMESPACE, query=q, limit=10)
                        timings[name].append(time.perf_counter() - started)
                        if rep == 0:
                            found[name].append([h.key for h in hits])
    exact = [{f"m{j}" for j in np.argsort(-(matrix @ v))[:10]} for v in query_vectors]
    print(
        f"\n## store search, {args.size:,} items in one namespace, {len(questions)} queries x "
        f"{args.reps}\n\n| store | p50 ms | p95 ms | ANN@10 |\n|---|---:|---:|---:|"
    )
    for name, values in timings.items():
        p50, p95 = pct(values)
        recall = np.mean([len(e & set(f)) / 10 for e, f in zip(exact, found[name], strict=True)])
        print(f"| {name} | {p50 * 1e3:.1f} | {p95 * 1e3:.1f} | {recall:.3f} |")


if __name__ == "__main__":
    main()
