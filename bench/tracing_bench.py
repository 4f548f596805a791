"""Benchmark: what a tracer attached to the run costs memory's pre-model hook.

One resource with `--messages` stored messages (chat-shaped text, the default embedder and
embedded Chroma, hybrid recall, working memory, a `ToolCallFilter`); each turn runs the hook
(`memory.pre_model_hook()`, as `create_react_agent` calls it) on a new question twice,
interleaved, the order alternating: with a LangChain tracer in the config's callbacks (a
`BaseTracer` that keeps the runs in memory, as LangSmith's does before sending them) and with
no callbacks. The question's embedding is warmed first (the embedding cache), so both sides
time the same work. p50 / p95 per side and the ratio. Two runs: ``--runs 2``.

    python bench/tracing_bench.py [--messages 2000] [--turns 200] [--runs 2]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import Memory, SQLiteStorage, ToolCallFilter
from langchain_mastra_memory.testing import RecordingTracer  # keeps its runs in memory

TOPICS = ["lunch", "the garden", "a trip to Porto", "my sister", "the car", "running",
          "a new job", "the dog", "piano lessons", "the flat"]  # fmt: skip


def build(folder: Path, messages: int) -> Memory:
    memory = Memory(
        storage=SQLiteStorage(folder / "memory.db"),
        options={"working_memory": {"enabled": True}, "semantic_recall": True},
        processors=[ToolCallFilter()],
    )
    rng = random.Random(3)
    for t in range(messages // 100):
        memory.create_thread(thread_id=f"t{t}", resource_id="alice")
        memory.save_messages(
            [
                (HumanMessage if i % 2 == 0 else AIMessage)(
                    f"About {rng.choice(TOPICS)}: note {t}-{i} on {rng.choice(TOPICS)}."
                )
                for i in range(100)
            ],
            thread_id=f"t{t}",
            resource_id="alice",
        )
    memory.update_working_memory("# User\n- Name: Alice\n- City: Lisbon", resource_id="alice")
    assert memory.flush(600)
    return memory


def turns(memory: Memory, count: int, seed: int) -> dict[str, list[float]]:
    hook = memory.pre_model_hook()
    rng = random.Random(seed)
    took: dict[str, list[float]] = {"no tracer": [], "tracer": []}
    for turn in range(count):
        question = f"What did I say about {rng.choice(TOPICS)} and {rng.choice(TOPICS)}?"
        state = {"messages": [HumanMessage(question)]}
        base = {"configurable": {"thread_id": "now", "resource_id": "alice"}}
        hook.invoke(state, base)  # warms the question's embedding: both sides time the same
        sides = ["no tracer", "tracer"] if turn % 2 == 0 else ["tracer", "no tracer"]
        for side in sides:
            config = {**base, "callbacks": [RecordingTracer()]} if side == "tracer" else base
            start = time.perf_counter()
            hook.invoke(state, config)
            took[side].append((time.perf_counter() - start) * 1000)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        memory = build(Path(folder), args.messages)
        memory.create_thread(thread_id="now", resource_id="alice")
        for run in range(1, args.runs + 1):
            took = turns(memory, args.turns, seed=run)
            p = {side: np.percentile(ms, [50, 95]) for side, ms in took.items()}
            print(f"run {run}: {args.messages:,} messages, {args.turns} turns: the hook "
                  f"without a tracer {p['no tracer'][0]:.2f} / {p['no tracer'][1]:.2f} ms, "
                  f"with one {p['tracer'][0]:.2f} / {p['tracer'][1]:.2f} ms (p50 / p95); "
                  f"ratio {p['tracer'][0] / p['no tracer'][0]:.2f}x at p50")  # fmt: skip


if __name__ == "__main__":
    main()
