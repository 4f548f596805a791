"""Benchmark: semantic-recall ingest throughput and recall latency, embedded Chroma + SQLite.

For each size (default 10k and 100k stored messages of one resource across 100 threads):

- ingest, embedding included: `Memory.save_messages` with the offline all-MiniLM-L6-v2 model,
  measured on the first `--embed-sample` messages (the model dominates and scales linearly);
- ingest, embedding excluded: storage save + Chroma upsert of precomputed vectors;
- recall latency p50/p95 over 200 queries: vector search filtered to the resource plus the
  neighbour fetch from SQLite (query embedding excluded), and the same with the query embedded.

    python bench/recall_bench.py [--sizes 10000 100000] [--embed-sample 10000]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import ChromaVectorStore, Memory, SQLiteStorage
from langchain_mastra_memory.recall.embeddings import MiniLMEmbeddings
from langchain_mastra_memory.recall.index import _vector_records

WORDS = (
    "lisbon porto dog beagle allergy peanut wedding sister cello orchestra climbing knee "
    "coffee oat milk benfica thinkpad laptop flat sea saving book author train seat aisle"
).split()


def texts(n: int, rng: random.Random) -> list[str]:
    return [
        f"{i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) for i in range(n)
    ]


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def run(n: int, embed_sample: int, rng: random.Random) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        storage = SQLiteStorage(Path(tmp) / "bench.db")
        vector = ChromaVectorStore(path=Path(tmp) / "chroma")
        memory = Memory(storage=storage, vector=vector, options={"semantic_recall": {"top_k": 4}})
        processor = memory.recall_index.processor  # type: ignore[union-attr]
        corpus = texts(n, rng)
        threads = 100
        for t in range(threads):
            memory.create_thread(resource_id="bench", thread_id=f"t{t}")
        row: dict[str, float] = {"messages": n}

        # ingest with embedding, on a sample (the model dominates; it scales linearly)
        sample = corpus[: min(embed_sample, n)]
        start = time.perf_counter()
        for b in range(0, len(sample), 100):
            chunk = sample[b : b + 100]
            msgs = [HumanMessage(x) if i % 2 == 0 else AIMessage(x) for i, x in enumerate(chunk)]
            memory.save_messages(msgs, thread_id=f"t{(b // 100) % threads}", resource_id="bench")
        row["ingest_embedded_per_s"] = len(sample) / (time.perf_counter() - start)
        row["embedded_sample"] = len(sample)

        # ingest without embedding: precomputed unit vectors through the same storage + Chroma
        rest = corpus[len(sample) :]
        vectors = np.random.default_rng(0).normal(size=(len(rest), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        start = time.perf_counter()
        for b in range(0, len(rest), 1000):
            chunk = rest[b : b + 1000]
            msgs = [HumanMessage(x) if i % 2 == 0 else AIMessage(x) for i, x in enumerate(chunk)]
            stored = storage.save_messages(
                msgs, thread_id=f"t{(b // 1000) % threads}", resource_id="bench"
            )
            vector.upsert(
                processor.index_name(), _vector_records(stored, vectors[b : b + len(chunk)])
            )
            storage.mark_embedded([s.message.id for s in stored])
        if rest:
            row["ingest_vectors_per_s"] = len(rest) / (time.perf_counter() - start)

        embedder = MiniLMEmbeddings()
        queries = [
            f"question {i} about {rng.choice(WORDS)} and {rng.choice(WORDS)}" for i in range(200)
        ]
        qvecs = embedder.embed_array(queries)
        window = processor.options.window
        search_only, with_embedding = [], []
        for q, v in zip(queries, qvecs, strict=True):
            start = time.perf_counter()
            hits = vector.query(processor.index_name(), v.tolist(), top_k=4, resource_id="bench")
            storage.message_windows(
                [h.message_id for h in hits],
                before=window.before,
                after=window.after,
                resource_id="bench",
            )
            search_only.append(time.perf_counter() - start)
            start = time.perf_counter()
            qv = embedder.embed_query(q + " again")
            hits = vector.query(processor.index_name(), qv, top_k=4, resource_id="bench")
            storage.message_windows(
                [h.message_id for h in hits],
                before=window.before,
                after=window.after,
                resource_id="bench",
            )
            with_embedding.append(time.perf_counter() - start)
        row["search_p50_ms"] = percentile(search_only, 50) * 1e3
        row["search_p95_ms"] = percentile(search_only, 95) * 1e3
        row["with_embedding_p50_ms"] = percentile(with_embedding, 50) * 1e3
        row["with_embedding_p95_ms"] = percentile(with_embedding, 95) * 1e3
        return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--embed-sample", type=int, default=2_000)
    args = parser.parse_args()
    rng = random.Random(0)
    print(
        "| stored messages | ingest, embedding included | ingest, vectors given "
        "| search + neighbours p50 / p95 | with query embedding p50 / p95 |"
    )
    print("|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        r = run(n, args.embed_sample, rng)
        print(
            f"| {n:,} | {r['ingest_embedded_per_s']:.0f} msg/s "
            f"(first {int(r['embedded_sample']):,}) "
            f"| {r.get('ingest_vectors_per_s', float('nan')):.0f} msg/s "
            f"| {r['search_p50_ms']:.1f} / {r['search_p95_ms']:.1f} ms "
            f"| {r['with_embedding_p50_ms']:.1f} / {r['with_embedding_p95_ms']:.1f} ms |",
            flush=True,
        )


if __name__ == "__main__":
    main()
