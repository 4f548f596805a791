"""Benchmark: what `memory.wrap(model)` adds to a turn, at a 10k-message thread.

One resource holding `--size` stored messages in threads of 500 (their vectors written
directly, as an imported history); the turns go to one of its threads; hybrid recall over the
whole resource, last 40 messages. Each turn times the bare scripted model and
the wrapped one on the same new question, interleaved (which goes first alternates); the
difference is the overhead. The query embedding is excluded (served from the embedding cache,
warmed before the turn) and reported beside, measured alone. Between turns the loop pauses
`--think` seconds, as a user does: the background writer embeds the previous turn meanwhile.

    python bench/turn_bench.py [--size 10000] [--turns 60] [--think 0.3]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))
from recall_bench import build_then_reopen, sentence

from langchain_mastra_memory import Memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--think", type=float, default=0.3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        index, _data = build_then_reopen(args.size, 1, Path(tmp))
        storage = index.storage
        thread = storage.list_threads(resource_id="r0", limit=1)[0].id
        memory = Memory(
            storage=storage,
            vector=index.vector,
            embedder=index.embedder.embedder if index.embedder else None,
            options={"semantic_recall": {"top_k": 4, "message_range": 1}, "last_messages": 40},
        )
        assert memory.recall_index is not None and memory.recall_index.embedder is not None
        cached = memory.recall_index.embedder
        model = FakeListChatModel(responses=["Sure, noted."])
        chat = memory.wrap(model)
        config = {"configurable": {"thread_id": thread, "resource_id": "r0"}}
        words = random.Random(1)
        overhead, bare_times, embed_times = [], [], []
        for turn in range(args.turns):
            question = f"turn {turn}: " + sentence(words, 5, 12)
            start = time.perf_counter()
            vector = cached.embedder.embed_query(question)
            embed_times.append(time.perf_counter() - start)
            cached.cache.put(cached._key(question), vector)
            timings = {}
            for side in ("bare", "wrapped") if turn % 2 else ("wrapped", "bare"):
                start = time.perf_counter()
                if side == "bare":
                    model.invoke([HumanMessage(question)])
                else:
                    chat.invoke(question, config)
                timings[side] = time.perf_counter() - start
            if turn >= 5:  # warm-up turns left out
                overhead.append(timings["wrapped"] - timings["bare"])
                bare_times.append(timings["bare"])
            time.sleep(args.think)
        memory.flush()

    def ms(values: list[float], q: int) -> str:
        return f"{np.percentile(values, q) * 1e3:.1f} ms"

    print(f"memory.wrap(model) overhead, {args.size:,} messages in the resource")
    print("| bare model p50 | overhead p50 | overhead p95 | query embedding p50 (beside) |")
    print("|---:|---:|---:|---:|")
    row = [ms(bare_times, 50), ms(overhead, 50), ms(overhead, 95), ms(embed_times, 50)]
    print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
