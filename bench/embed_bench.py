"""Benchmark: the default embedder's query latency and batch throughput.

- **Query**: one short question (10 tokens) embedded, p50 / p95 over repetitions, with the
  process-wide embedding cache cleared before each (so every call runs the model).
- **Batch ingest**: what indexing embeds, in one call: LoCoMo's real turns as whole texts (34
  tokens on average), and the same turns cut into the pieces semantic recall embeds
  (`embedding_pieces`: sentences, up to 8 per message); texts per second, the median of three
  interleaved runs.

Both precisions of ours are measured: float32 (the default) and int8 (`precision="int8"`).

The peer is sentence-transformers (torch) on the same model when it is importable, measured in
the same run and interleaved with ours (its threads left at torch's default); without it the
peer columns say so.

    python bench/embed_bench.py [--repeat 41] [--texts 512]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from langchain_core.messages import HumanMessage

from langchain_mastra_memory.messages import embedding_pieces
from langchain_mastra_memory.recall.embedders import EMBEDDING_CACHE, MiniLMEmbeddings

QUERY = "What did Caroline research about adoption agencies?"
EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo-dev"


def locomo_turns(limit: int) -> list[str]:
    texts: list[str] = []
    for path in sorted(EVAL.glob("*.json")):
        conversation = json.loads(path.read_text())
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                texts += [turn["text"] for turn in value]
    return texts[:limit]


def sentence_transformers_peer() -> Callable[[list[str]], object] | None:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    from langchain_mastra_memory.recall.embedders.minilm import find_model_dir

    model = SentenceTransformer(str(find_model_dir()), device="cpu")
    return lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True)


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--texts", type=int, default=512)
    args = parser.parse_args()
    ours = MiniLMEmbeddings()
    int8 = MiniLMEmbeddings(precision="int8")
    peer = sentence_transformers_peer()
    sides: dict[str, Callable[[list[str]], object]] = {
        "ours (float32, default)": ours.embed_array,
        'ours (precision="int8")': int8.embed_array,
    }
    if peer is not None:
        sides["sentence-transformers"] = peer
    for encode in sides.values():  # warm up
        encode([QUERY] * 4)

    query: dict[str, list[float]] = {name: [] for name in sides}
    for round_ in range(args.repeat):
        for name in list(sides) if round_ % 2 == 0 else list(sides)[::-1]:
            EMBEDDING_CACHE.clear()
            start = time.perf_counter()
            sides[name]([QUERY])
            query[name].append(time.perf_counter() - start)

    turns = locomo_turns(args.texts)
    pieces = [p for t in turns for p in embedding_pieces(HumanMessage(t))]
    rates: dict[str, dict[str, float]] = {name: {} for name in sides}
    for label, texts in (("turns", turns), ("pieces", pieces)):
        elapsed: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(3):  # interleaved; the median of three (the machine is shared)
            for name in sides:
                start = time.perf_counter()
                sides[name](texts)
                elapsed[name].append(time.perf_counter() - start)
        for name in sides:
            rates[name][label] = len(texts) / sorted(elapsed[name])[1]

    tokens = sum(len(e.ids) for e in ours.tokenizer.encode_batch(turns)) / len(turns)
    piece_tokens = sum(len(e.ids) for e in ours.tokenizer.encode_batch(pieces)) / len(pieces)
    print(f"embedder speed, {time.strftime('%F')}, {ours.threads} worker threads for batches")
    print(
        f"| embedder | query p50 / p95 | turns/s ({len(turns)}, {tokens:.0f} tokens avg) "
        f"| pieces/s ({len(pieces)}, {piece_tokens:.0f} tokens avg) |"
    )
    print("|---|---:|---:|---:|")
    for name in sides:
        p50, p95 = percentiles(query[name])
        print(
            f"| {name} | {p50 * 1e3:.1f} / {p95 * 1e3:.1f} ms | {rates[name]['turns']:.0f} "
            f"| {rates[name]['pieces']:.0f} |"
        )
    if peer is None:
        print("| sentence-transformers | not installed (torch) | | |")
    else:
        for name in list(sides)[:2]:
            ratio = percentiles(query["sentence-transformers"])[0] / percentiles(query[name])[0]
            print(f"query p50: {name} is {ratio:.1f}x faster than sentence-transformers")


if __name__ == "__main__":
    main()
