"""Benchmark: recall latency at scale, per mode and layout, and how true the ANN hits are.

Layouts: every message owned by ONE resource (the hard case: a partition of N vectors), and
the same messages spread over many resources. Measured per query: search + neighbour windows
through `RecallIndex.recall` for ``vector``, ``keyword`` and ``hybrid`` (first stages alone)
and the default, hybrid with its context stage (its vectors read back from Chroma every
time: the cache of message vectors is cleared between queries, as the others'), with the query
embedding excluded (query vectors are computed first and served from the embedding cache),
p50 / p95 over the queries, BLAS pinned to one thread. The queried partitions are warmed first
(`ChromaVectorStore.warm`, as an app does at start): those that fit are searched exactly in
memory. ANN quality: the share of the exact top-10 (a numpy scan of the partition) among the
store's top-10.

Vectors are synthetic but clustered (1,000 topics plus noise, queries near stored messages), so
neighbours are meaningful; texts are 8-30 words drawn Zipf-like from a 5,000-word vocabulary
(as chat is: a few very common words, many rare ones), questions 4-8 of them.

    python bench/recall_bench.py [--sizes 10000 100000] [--spread 100] [--queries 200]
    python bench/recall_bench.py --sizes 1000000 --spread 1000 --layouts spread
"""

from __future__ import annotations

import argparse
import multiprocessing
import pickle
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.messages import AIMessage, HumanMessage
from threadpoolctl import threadpool_limits

from langchain_mastra_memory import ChromaVectorStore, SQLiteStorage
from langchain_mastra_memory.recall.embedders import EMBEDDING_CACHE, MiniLMEmbeddings
from langchain_mastra_memory.recall.index import RecallIndex, RecallOptions
from langchain_mastra_memory.recall.ranking import MESSAGE_VECTORS
from langchain_mastra_memory.recall.vector import VectorRecord

VOCABULARY = [f"w{i}" for i in range(5000)]
ZIPF = [1 / (rank + 1) for rank in range(len(VOCABULARY))]


def sentence(words: random.Random, low: int, high: int) -> str:
    return " ".join(words.choices(VOCABULARY, weights=ZIPF, k=words.randint(low, high)))


DIM = 384
CONTEXT = RecallOptions().context_weight
MODES = (  # (column, mode, context_weight): the first stages, and the default with its context
    ("vector", "vector", 0.0),
    ("keyword", "keyword", 0.0),
    ("hybrid", "hybrid", 0.0),
    ("hybrid + context", "hybrid", CONTEXT),
)


def clustered(n: int, rng: np.random.Generator, centers: np.ndarray) -> np.ndarray:
    picks = centers[rng.integers(0, len(centers), n)]
    vectors = picks + 0.35 * rng.normal(size=(n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build(n: int, resources: int, tmp: Path, seed: int = 0) -> tuple[RecallIndex, dict]:
    rng = np.random.default_rng(seed)
    words = random.Random(seed)
    centers = rng.normal(size=(1000, DIM)).astype(np.float32)
    storage = SQLiteStorage(tmp / "bench.db")
    vector = ChromaVectorStore(path=tmp / "chroma")
    embedder = MiniLMEmbeddings()
    index = RecallIndex(storage, vector, embedder, options=RecallOptions(top_k=4))
    name = index.upkeep.index_name()
    vectors = clustered(n, rng, centers)
    owners = [f"r{i % resources}" for i in range(n)]
    kept: dict[str, list[tuple[str, np.ndarray]]] = {}
    per_thread = 500
    for r in range(resources):
        mine = [i for i in range(r, n, resources)]
        for start in range(0, len(mine), per_thread):
            chunk = mine[start : start + per_thread]
            thread = f"r{r}-t{start // per_thread}"
            storage.create_thread(thread_id=thread, resource_id=f"r{r}")
            texts = [sentence(words, 8, 30) for _ in chunk]
            messages = [(HumanMessage if j % 2 == 0 else AIMessage)(t) for j, t in enumerate(texts)]
            stored = storage.save_messages(messages, thread_id=thread, resource_id=f"r{r}")
            records = [
                VectorRecord(s.message.id or "", vectors[i], thread, owners[i], "user", 0.0)
                for s, i in zip(stored, chunk, strict=True)
            ]
            vector.upsert(name, records)
            storage.mark_embedded([s.message.id for s in stored if s.message.id])
            for s, i in zip(stored, chunk, strict=True):
                kept.setdefault(owners[i], []).append((s.message.id or "", vectors[i]))
    return index, {"kept": kept, "rng": rng, "embedder": embedder, "words": words}


def _build_and_save(n: int, resources: int, tmp: Path) -> None:
    _index, data = build(n, resources, tmp)
    with (tmp / "kept.pkl").open("wb") as handle:
        pickle.dump(data["kept"], handle)


def build_then_reopen(n: int, resources: int, tmp: Path) -> tuple[RecallIndex, dict]:
    """Build in a child process, then open the files here, as an app starting on an existing
    history does: right after a bulk load, Chroma is still settling in the loading process
    (hybrid p50 ran 2x slower at 100k), which no user's process sees."""
    child = multiprocessing.get_context("spawn").Process(
        target=_build_and_save, args=(n, resources, tmp)
    )
    child.start()
    child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"building the benchmark data failed ({child.exitcode})")
    storage = SQLiteStorage(tmp / "bench.db")
    vector = ChromaVectorStore(path=tmp / "chroma")
    embedder = MiniLMEmbeddings()
    index = RecallIndex(storage, vector, embedder, options=RecallOptions(top_k=4))
    with (tmp / "kept.pkl").open("rb") as handle:
        kept = pickle.load(handle)
    data = {"kept": kept, "rng": np.random.default_rng(1), "embedder": embedder}
    data["words"] = random.Random(1)
    return index, data


def measure(index: RecallIndex, data: dict, queries: int) -> dict[str, tuple[float, ...]]:
    rng, kept, words = data["rng"], data["kept"], data["words"]
    owners = list(kept)
    asked = []
    matrices: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}  # one per owner, not per query
    for q in range(queries):
        owner = owners[q % len(owners)]
        if owner not in matrices:
            ids, vecs = zip(*kept[owner], strict=True)
            matrices[owner] = (ids, np.asarray(vecs, dtype=np.float32))
        ids, matrix = matrices[owner]
        near = matrix[rng.integers(0, len(matrix))] + 0.2 * rng.normal(size=DIM)
        near = (near / np.linalg.norm(near)).astype(np.float32)
        text = f"question {q}: " + sentence(words, 4, 8)
        asked.append((owner, text, near, ids, matrix))
    rows: dict[str, tuple[float, ...]] = {}
    name = index.upkeep.index_name()
    assert index.vector is not None and index.embedder is not None
    started = time.perf_counter()
    held = [index.vector.warm(name, owner) for owner in dict.fromkeys(a[0] for a in asked)]
    print(  # as an app warms its users' partitions at start (a hot one loads anyway)
        f"  {sum(held)} of {len(held)} partitions held in memory for exact search, loaded in "
        f"{time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    overlap = []
    for owner, _text, near, ids, matrix in asked:  # ANN quality against an exact scan
        exact = {ids[i] for i in np.argsort(-(matrix @ near))[:10]}
        hits = index.vector.query(name, near.tolist(), top_k=10, resource_id=owner)
        overlap.append(len(exact & {h.message_id for h in hits}) / 10)
    default = index.options
    for label, mode, context in MODES:
        index.options = default.model_copy(update={"mode": mode, "context_weight": context})
        timings = []
        for owner, text, near, _ids, _m in asked:
            EMBEDDING_CACHE.clear()  # process-wide caches cleared between repetitions ...
            MESSAGE_VECTORS.clear()  # (the context stage reads its vectors back each time)
            index.embedder.cache.put(index.embedder._key(text), near)  # ... but the query's
            with threadpool_limits(limits=1, user_api="blas"):
                start = time.perf_counter()
                index.recall(text, resource_id=owner, thread_id=None, exclude=set())
                timings.append(time.perf_counter() - start)
        rows[label] = (np.percentile(timings, 50) * 1e3, np.percentile(timings, 95) * 1e3)
    rows["ann"] = (float(np.mean(overlap)),)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--spread", type=int, default=100, help="resources in the spread layout")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--layouts", nargs="+", choices=["one", "spread"], default=["one", "spread"]
    )
    args = parser.parse_args()
    print(f"recall latency (search + neighbours, query embedding excluded), {time.strftime('%F')}")
    columns = " | ".join(f"{label} p50 / p95" for label, _, _ in MODES)
    print(f"| messages | layout | {columns} | ANN recall@10 |")
    print("|---:|---|" + "---:|" * (len(MODES) + 1))
    for n in args.sizes:
        layouts = {"one": 1, "spread": args.spread}
        for resources in [layouts[name] for name in args.layouts]:
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                index, data = build_then_reopen(n, resources, Path(tmp))
                built = time.perf_counter() - started
                r = measure(index, data, args.queries)
            layout = "one resource" if resources == 1 else f"{resources} resources"
            cells = " | ".join(f"{r[m][0]:.1f} / {r[m][1]:.1f} ms" for m, _, _ in MODES)
            print(f"| {n:,} | {layout} | {cells} | {r['ann'][0]:.3f} |", flush=True)
            print(f"  (built in {built:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
