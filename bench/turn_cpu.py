"""Benchmark: CPU per agent turn, bare and with memory (issue 84's measuring harness).

One async process runs LangChain's `create_agent` with a scripted model (it checks its input
as providers do) in each configuration, interleaved run by run so a busy machine weighs on
all of them alike:

- ``bare``: the agent on LangGraph's `AsyncSqliteSaver`, no memory;
- ``memory``: ``memory.middleware()``, ``memory.checkpointer()`` and the working-memory tool,
  semantic recall off;
- ``memory+recall``: the same with semantic recall on (the default embedder).

Each run is N conversations of T turns at once (a fresh database each run, and texts no
earlier run said, so the embedding cache never answers); its CPU (the
process's, every thread: the vector writer's embeddings count) is divided by its turns, after
`flush()` so deferred work is paid inside the run. Printed: p50 / p95 ms of CPU per turn over
the runs, and each configuration's ratio to ``bare`` (p50 over p50, in the same process).

    python bench/turn_cpu.py [--conversations 16] [--turns 4] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from load_bench import scripted_model

CONFIGURATIONS = ("bare", "memory", "memory+recall")
TEXT = ("Yesterday I went to the farmers market with my sister and bought fresh tomatoes and "
        "basil for a dinner with friends")  # fmt: skip


async def one_run(kind: str, args: argparse.Namespace, folder: Path, run: int) -> float:
    """CPU seconds per turn of one run of `kind`."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from langchain_mastra_memory import Memory, SQLiteStorage

    seen: list[Any] = []
    problems: list[str] = []
    memory = None
    async with AsyncSqliteSaver.from_conn_string(str(folder / "bare.db")) as bare_saver:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kind == "bare":
                agent = create_agent(scripted_model(seen, problems), tools=[],
                                     checkpointer=bare_saver)  # fmt: skip
            else:
                memory = Memory(storage=SQLiteStorage(folder / "memory.db"), options={
                    "semantic_recall": kind == "memory+recall",
                    "working_memory": {"enabled": True}})  # fmt: skip
                agent = create_agent(scripted_model(seen, problems),
                                     tools=[memory.working_memory_tool()],
                                     middleware=[memory.middleware()],
                                     checkpointer=memory.checkpointer())  # fmt: skip
                # warm: the embedder and tokenizer load before the clock starts
                await memory.acontext([HumanMessage("warm up")], thread_id="w", resource_id="w")

        async def conversation(c: int) -> None:
            config = {"configurable": {"thread_id": f"t{c}", "resource_id": f"u{c}"}}
            for turn in range(args.turns):
                said = f"{TEXT} (run {run}, {c}.{turn}, {kind})"  # (new text: no cache hit)
                await agent.ainvoke({"messages": [HumanMessage(said)]}, config)

        gc.collect()
        cpu = time.process_time()
        await asyncio.gather(*(conversation(c) for c in range(args.conversations)))
        if memory is not None:
            assert await memory.aflush(120)  # (deferred embeddings are this run's CPU too)
        cpu = time.process_time() - cpu
        if memory is not None:
            await memory.aclose()
    if problems:
        raise SystemExit(f"{kind}: the model was sent what a provider refuses: {problems[:3]}")
    return cpu / (args.conversations * args.turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=16)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    per_turn: dict[str, list[float]] = {kind: [] for kind in CONFIGURATIONS}
    with tempfile.TemporaryDirectory() as root:
        for run in range(args.runs + 1):  # (run 0 warms the process and is not counted)
            for kind in CONFIGURATIONS:
                folder = Path(root) / f"{run}-{kind.replace('+', '-')}"
                folder.mkdir()
                spent = asyncio.run(one_run(kind, args, folder, run))
                if run:
                    per_turn[kind].append(spent * 1000)
    bare = statistics.median(per_turn["bare"])
    print(f"{args.conversations} conversations x {args.turns} turns, {args.runs} runs each, "
          "interleaved; CPU ms per turn (all threads)")  # fmt: skip
    print(f"{'configuration':16} {'p50':>8} {'p95':>8} {'x bare':>8}")
    for kind, values in per_turn.items():
        p50 = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]
        print(f"{kind:16} {p50:8.1f} {p95:8.1f} {p50 / bare:8.2f}")


if __name__ == "__main__":
    main()
