"""Benchmark: recall as a user meets it, cold: right after an import, and after a restart.

100,000 messages of chat-shaped text in ONE resource (100 threads), SQLite + the default
embedded Chroma, three `Memory` objects over the same file (one per recall mode, each with its
default vector store, as an application builds them), a near-free embedder (a text's digest
seeds its vector: the embedding model's cost is `embed_bench.py`'s; ``--embedder minilm``
puts the default model in, its query embedding inside each timed turn). Timed: the whole
`memory.recall(...)` (history, semantic recall, processors) of the first 60 turns after the
writes were flushed, the three modes interleaved turn by turn, then the warm figures beside
them (after `warm()`: the peer), in a process that then exits as an application does; then
the first turns in a new process over the same files (a restart: nothing warmed).
p50 / p95 per mode, and cold/warm ratios; beside them, the floor: one exact int8 scan of the
same pieces (their vectors made again, int8 as the exact search holds them, scanned by the same
SimSIMD kernel) for each warm question, in the same process, and each mode's warm p50 over the
floor's p50. Two runs: ``--runs 2``.

    python bench/cold_recall_bench.py [--messages 100000] [--queries 60] [--runs 2]
    python bench/cold_recall_bench.py --messages 10000 --embedder minilm
    python bench/cold_recall_bench.py --pieces 3.4   # long chat text: 3.4 sentences a message
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory.messages import MAX_PIECES, embedding_pieces

sys.path.insert(0, str(Path(__file__).parent))
from results import save

MODES = ("vector", "keyword", "hybrid")
WORDS = [f"w{i}" for i in range(3000)]
ZIPF = [1 / (rank + 1) for rank in range(len(WORDS))]


class DigestEmbeddings(Embeddings):
    """A unit vector seeded by the text's digest (384 dimensions): near-free, deterministic."""

    model = "digest-384"
    symmetric = True  # a query is embedded as a document is

    def _one(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        return (vector / np.linalg.norm(vector)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def embedder(kind: str) -> Embeddings:
    """The near-free digest embedder, or the default model (MiniLM: its query embedding is
    then part of each timed turn, as an application's is)."""
    if kind == "minilm":
        from langchain_mastra_memory.recall.embedders import default_embedder

        return default_embedder()
    return DigestEmbeddings()


def memories(db: Path, kind: str = "digest", last_messages: int = 40) -> dict[str, object]:
    """The application's three `Memory` objects over `db`, one per recall mode, each keeping
    the last `last_messages` of the thread (40: the default) in a turn's history."""
    from langchain_mastra_memory import Memory, SQLiteStorage

    storage = SQLiteStorage(db)
    return {
        mode: Memory(
            storage=storage,
            embedder=embedder(kind),
            options={
                "last_messages": last_messages,
                "semantic_recall": {"mode": mode, "scope": "resource"},
            },
        )
        for mode in MODES
    }


@contextmanager
def timing_searches() -> Iterator[list[float]]:
    """Milliseconds of each ranked search (`RecallIndex._ranked`: the search, its filters and
    the archived threads' lookup) made meanwhile, timed inside the recall call that made it."""
    from langchain_mastra_memory.recall.index import RecallIndex

    took: list[float] = []
    ranked = RecallIndex._ranked

    def timed(self: RecallIndex, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        hits = yield from ranked(self, *args, **kwargs)
        took.append((time.perf_counter() - start) * 1000)
        return hits

    RecallIndex._ranked = timed  # type: ignore[method-assign]
    try:
        yield took
    finally:
        RecallIndex._ranked = ranked  # type: ignore[method-assign]


def turns(memory_by_mode: dict[str, object], queries: int, seed: int) -> dict[str, list[float]]:
    """`queries` recall turns per mode, interleaved; milliseconds each, the whole call
    (``<mode>``) and the search inside it (``<mode>:search``)."""
    rng = random.Random(seed)
    took: dict[str, list[float]] = {}
    with timing_searches() as searches:
        for _ in range(queries):
            question = HumanMessage(" ".join(rng.choices(WORDS, weights=ZIPF, k=6)))
            thread = f"t{rng.randrange(100)}"
            for mode in MODES:
                before = len(searches)
                start = time.perf_counter()
                memory_by_mode[mode].recall(  # type: ignore[attr-defined]
                    thread_id=thread, resource_id="alice", new_messages=[question]
                )
                took.setdefault(mode, []).append((time.perf_counter() - start) * 1000)
                took.setdefault(f"{mode}:search", []).append(sum(searches[before:]))
    return took


def chat_text(rng: random.Random, pieces: float) -> str:
    """A message of 8-30 words, or (`pieces` > 1) of sentences of 4-14 words, as many as
    ``1 + Poisson(pieces - 1)`` (at most `MAX_PIECES`): each sentence is one embedded piece."""
    if pieces <= 1:
        return " ".join(rng.choices(WORDS, weights=ZIPF, k=rng.randint(8, 30)))
    sentences, extra = 1, math.exp(-(pieces - 1))
    draw = rng.random()
    while draw > extra and sentences < MAX_PIECES:  # Knuth's Poisson draw
        sentences, draw = sentences + 1, draw * rng.random()
    return " ".join(
        " ".join(rng.choices(WORDS, weights=ZIPF, k=rng.randint(4, 14))) + "."
        for _ in range(sentences)
    )


def questions(queries: int, seed: int) -> list[str]:
    """The questions `turns` asks with `seed`, in order."""
    rng = random.Random(seed)
    asked = []
    for _ in range(queries):
        asked.append(" ".join(rng.choices(WORDS, weights=ZIPF, k=6)))
        rng.randrange(100)  # (the thread `turns` draws)
    return asked


def scan_floor(messages: int, queries: int, pieces: float, seed: int) -> list[float]:
    """Milliseconds of one exact int8 scan of the imported pieces (the same vectors: the
    digest embedder's, made again from the same texts) for each question `turns` asks with
    `seed`: what reading the partition once costs, the bound a vector search cannot beat."""
    from langchain_mastra_memory.recall.exact.matrix import best, int8_scores, small

    digest = DigestEmbeddings()
    texts = [text for _, text, _ in imported_pieces(messages, pieces)]
    rows = small(np.asarray(digest.embed_documents(texts), dtype=np.float32))
    took = []
    for question in questions(queries, seed):
        query = np.asarray(digest.embed_query(question), dtype=np.float32)
        start = time.perf_counter()
        best(int8_scores(rows, query), 512)
        took.append((time.perf_counter() - start) * 1000)
    return took


def imported_pieces(messages: int, pieces: float) -> list[tuple[str, str, str]]:
    """(vector id, message id, thread) of every piece `ingest` writes, in order, with the
    piece's text as the id: what Chroma's floor adds."""
    rng, found = random.Random(7), []
    for t in range(100):
        for i in range(messages // 100):
            message = (HumanMessage if i % 2 == 0 else AIMessage)(chat_text(rng, pieces))
            for n, piece in enumerate(embedding_pieces(message)):
                found.append((f"t{t}-{i}" + (f"#{n}" if n else ""), piece, f"t{t}"))
    return found


def chroma_floor(messages: int, pieces: float = 1.0) -> float:
    """Messages/s of Chroma's own `add` of the vectors `ingest` writes (the digest embedder's,
    made beforehand, not timed), as few batches as Chroma takes, into one new collection
    built as memory builds a resource's partition: what writing them into Chroma costs at
    least."""
    import chromadb

    from langchain_mastra_memory.recall.engines.chroma import HNSW

    written = imported_pieces(messages, pieces)
    vectors = DigestEmbeddings().embed_documents([text for _, text, _ in written])
    with tempfile.TemporaryDirectory() as folder:
        settings = chromadb.Settings(anonymized_telemetry=False)
        client = chromadb.PersistentClient(folder, settings=settings)
        col = client.create_collection("floor", metadata=HNSW, embedding_function=None)
        batch, start = client.get_max_batch_size(), time.perf_counter()
        for at in range(0, len(written), batch):
            part = written[at : at + batch]
            col.add(
                ids=[vector_id for vector_id, _, _ in part],
                embeddings=vectors[at : at + batch],
                metadatas=[
                    {
                        "message_id": vector_id.split("#")[0],
                        "thread_id": thread,
                        "resource_id": "alice",
                        "role": "user",
                        "created_at": 0.0,
                    }
                    for vector_id, _, thread in part
                ],
            )
        took = time.perf_counter() - start
    return messages / took


def ingest(memory: object, messages: int, pieces: float = 1.0) -> dict[str, float]:
    """Write `messages` over 100 threads in batches of 50 and flush; messages/s and the
    embedded pieces per message."""
    rng = random.Random(7)
    start = time.perf_counter()
    per, embedded = messages // 100, 0
    for t in range(100):
        memory.create_thread(thread_id=f"t{t}", resource_id="alice")  # type: ignore[attr-defined]
        batch = [
            (HumanMessage if i % 2 == 0 else AIMessage)(chat_text(rng, pieces)) for i in range(per)
        ]
        embedded += sum(len(embedding_pieces(m)) for m in batch)
        for at in range(0, per, 50):
            memory.save_messages(  # type: ignore[attr-defined]
                batch[at : at + 50], thread_id=f"t{t}", resource_id="alice"
            )
    assert memory.flush(3600)  # type: ignore[attr-defined]
    return {"per_s": messages / (time.perf_counter() - start), "pieces": embedded / messages}


def after_import(
    db: Path,
    messages: int,
    queries: int,
    kind: str = "digest",
    pieces: float = 1.0,
    last_messages: int = 40,
) -> dict[str, object]:
    """In this process: the application's three Memory objects, an import through one of
    them, then the first turns (cold), then warm ones."""
    by_mode = memories(db, kind, last_messages)
    rate = ingest(by_mode["hybrid"], messages, pieces)
    cold = turns(by_mode, queries, seed=1)
    for memory in by_mode.values():
        index = memory.recall_index  # type: ignore[attr-defined]
        if index.vector is not None:
            index.vector.warm(index.upkeep.index_name(), "alice")
    warm = turns(by_mode, queries, seed=2)
    floor = scan_floor(messages, queries, pieces, seed=2)
    return {"ingest_per_s": rate, "cold": cold, "warm": warm, "floor": floor}


def in_a_process(call: str) -> Any:
    """``call`` (an expression over this module, ``b``) in a new process, which then exits as
    an application does (its exit handlers run); its JSON result."""
    code = (
        "import json, sys; sys.path.insert(0, 'bench'); import cold_recall_bench as b; "
        f"print(json.dumps({call}))"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def restarted(
    db: Path, queries: int, kind: str = "digest", last_messages: int = 40
) -> dict[str, list[float]]:
    """In a new process over the same files: the first turns."""
    took: dict[str, list[float]] = in_a_process(
        f"b.turns(b.memories(b.Path({str(db)!r}), {kind!r}, {last_messages}), {queries}, seed=3)"
    )
    return took


def percentiles(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument(
        "--embedder",
        choices=("digest", "minilm"),
        default="digest",
        help="digest: near-free (recall alone); minilm: the default model, query embedding "
        "included in each turn",
    )
    parser.add_argument(
        "--pieces", type=float, default=1.0, help="embedded pieces (sentences) per message"
    )
    parser.add_argument(
        "--last-messages", type=int, default=40, help="the history a turn reads (40: default)"
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help="also write each run's figures here (bench/results/cold_recall.json: the docs' "
        "plot, `plot_figures.py`)",
    )
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory() as folder:
            db = Path(folder) / "memory.db"
            imported = in_a_process(
                f"b.after_import(b.Path({str(db)!r}), {args.messages}, {args.queries}, "
                f"{args.embedder!r}, {args.pieces}, {args.last_messages})"
            )
            restart = restarted(db, args.queries, args.embedder, args.last_messages)
        chroma = in_a_process(f"b.chroma_floor({args.messages}, {args.pieces})")
        rate = imported["ingest_per_s"]
        print(
            f"run {run}: {args.messages:,} messages, one resource, {rate['pieces']:.2f} pieces "
            f"per message, last {args.last_messages} messages a turn; ingest "
            f"{rate['per_s']:.0f} messages/s ({args.embedder} embedder), Chroma's own add of "
            f"the same vectors {chroma:.0f}/s: {rate['per_s'] / chroma:.2f}x its floor"
        )
        floor = percentiles(imported["floor"])
        print(
            f"  {'mode':8} {'after import p50/p95':>22} {'after restart p50/p95':>23} "
            f"{'warm p50/p95':>15} {'search p50/p95 (warm)':>22} {'cold p95 / warm p95':>20} "
            f"{'warm p50 / floor':>17}"
        )
        figures: dict[str, Any] = {"floor": floor, "ingest_per_s": rate, "chroma_add_per_s": chroma}
        for mode in MODES:
            cold = percentiles(imported["cold"][mode])
            again = percentiles(restart[mode])
            warm = percentiles(imported["warm"][mode])
            search = percentiles(imported["warm"][f"{mode}:search"])
            figures[mode] = {
                "after_import": cold,
                "after_restart": again,
                "warm": warm,
                "warm_search": search,
            }
            print(
                f"  {mode:8} {cold[0]:9.1f} / {cold[1]:6.1f} ms {again[0]:10.1f} / "
                f"{again[1]:6.1f} ms {warm[0]:6.1f} / {warm[1]:5.1f} ms "
                f"{search[0]:9.1f} / {search[1]:5.1f} ms "
                f"{max(cold[1], again[1]) / warm[1]:14.2f}x {warm[0] / floor[0]:16.1f}x"
            )
        print(
            f"  floor: one exact int8 scan of the same pieces, {floor[0]:.2f} / "
            f"{floor[1]:.2f} ms p50 / p95"
        )
        runs.append(figures)
    if args.json is not None:
        setting = (
            f"{args.messages:,} messages in one resource, {args.pieces:g} embedded piece(s) a "
            f"message, last {args.last_messages} a turn, {args.embedder} embedder, SQLite + Chroma"
        )
        save("cold_recall", {"setting": setting, "runs": runs}, path=args.json)


if __name__ == "__main__":
    main()
