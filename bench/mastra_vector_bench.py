"""Benchmark: semantic recall on Mastra's own vector index (`MastraVectorStore`) beside Mastra's
own query of it, on one LibSQL file holding N vectors of ONE resource.

The index is Mastra's (`LibSQLVector`'s table and its libsql vector index), filled through
`MastraVectorStore.upsert` in batches of 1,000 (the write rate is printed), with the 64-dimension
hash embedder both sides share in the tests (`mastra_side.HashEmbeddings`) over sentences of
random words. Timed, interleaved per repetition with one query vector each time:

- **ours**: `MastraVectorStore.query(top_k=3, resource_id=...)` (an exact scan of the
  resource's vectors in libsql, through the worker process);
- **Mastra's**: `LibSQLVector.query({ topK: 3, filter: { resource_id } })` in a live Mastra
  process (its time measured inside Node): the query Mastra's semantic recall makes (the libsql
  vector index first, a filtered exact scan when that finds too few).

p50 / p95 per side and the ratio.

    python bench/mastra_vector_bench.py [--vectors 100000] [--reps 100]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from results import percentiles, save

WORDS = [f"w{i}" for i in range(3000)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from mastra_side import HashEmbeddings, LiveMastra, MastraSide

    from langchain_mastra_memory import MastraStorage, MastraVectorStore
    from langchain_mastra_memory.recall.vector import VectorRecord

    folder = Path(tempfile.mkdtemp(prefix="lmm-mastra-vectors-"))
    path = folder / "mastra.db"
    storage = MastraStorage(f"file:{path}")
    store = MastraVectorStore(storage)
    embedder = HashEmbeddings()
    rng = random.Random(7)
    began = time.perf_counter()
    for start in range(0, args.vectors, 1000):
        texts = [" ".join(rng.choices(WORDS, k=12)) for _ in range(min(1000, args.vectors - start))]
        records = [
            VectorRecord(f"m{start + i}", vector, f"t{(start + i) % 100}", "alice", "user",
                         1.77e9 + start + i, text=text)
            for i, (text, vector) in enumerate(
                zip(texts, embedder.embed_documents(texts), strict=True))
        ]  # fmt: skip
        store.upsert("any", records)
    written = time.perf_counter() - began
    print(f"{args.vectors} vectors written into Mastra's index: {written:.1f} s, "
          f"{args.vectors / written:.0f} vectors/s")  # fmt: skip
    times: dict[str, list[float]] = {"ours": [], "Mastra's": []}
    with LiveMastra(MastraSide.installed()) as live:
        for rep in range(args.reps + 5):  # the first five warm up, untimed
            vector = embedder.embed_query(" ".join(rng.choices(WORDS, k=6)))
            sides = ["ours", "Mastra's"]
            rng.shuffle(sides)
            for side in sides:
                if side == "ours":
                    began = time.perf_counter()
                    hits = store.query("any", vector, top_k=3, resource_id="alice")
                    spent = (time.perf_counter() - began) * 1e3
                    assert len(hits) == 3
                else:
                    answer = live.run({"op": "vector_query", "db": str(path), "index":
                                       "memory_messages_64", "vector": vector, "topK": 3,
                                       "resource": "alice"})  # fmt: skip
                    assert "error" not in answer, answer
                    assert len(answer["ids"]) == 3
                    spent = float(answer["ms"])
                if rep >= 5:
                    times[side].append(spent)
    figures: dict[str, Any] = {
        "vectors": args.vectors,
        "write_vectors_per_s": args.vectors / written,
    }
    print("\n| timed | p50 ms | p95 ms |")
    print("|---|---|---|")
    for side, ms in times.items():
        p50, p95 = percentiles(ms)
        figures[side] = {"p50_ms": p50, "p95_ms": p95}
        print(f"| {side} | {p50:.2f} | {p95:.2f} |")
    ours50, ours95 = percentiles(times["ours"])
    theirs50, theirs95 = percentiles(times["Mastra's"])
    print(f"\nours / Mastra's: {ours50 / theirs50:.2f}x (p50), {ours95 / theirs95:.2f}x (p95)")
    save("mastra_vectors", figures, path=args.json)
    store.close()
    storage.close()


if __name__ == "__main__":
    main()
