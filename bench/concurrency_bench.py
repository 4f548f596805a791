"""Benchmark: many conversations at once in one async process (issue 71's stall).

One process runs LangChain's `create_agent` with `memory.middleware()`, the working-memory
tool and `memory.checkpointer()` (its default saver on the storage), semantic recall on with
the default embedder (all-MiniLM-L6-v2), and a scripted model that validates its input as
OpenAI and Anthropic do. N conversations (one resource and thread each, real LoCoMo chat text)
run their turns at once on one event loop: more than the loop's default executor has threads
(min(32, cores + 4): 6 on 2 cores). Each run prints turns/s, turn p50 / p95 / max, turns over
10 s, the process's CPU seconds against the wall time, the "vector writer is still busy"
warnings, and, read back afterwards: messages of the final states lost or duplicated in memory,
messages memory kept that no state holds (extra), and model inputs holding another
conversation's text (crossed).

`--busy N` runs N processes spinning on the CPU beside the conversations (a loaded machine).

    python bench/concurrency_bench.py [--conversations 32] [--turns 10] [--runs 5]
        [--backend sqlite|postgres] [--dsn ...] [--busy 0] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing as mp
import re
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from contextvars import ContextVar
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from load_bench import scripted_model
from locomo_data import DEFAULT_DATA, turns_and_questions
from results import save

SCHEMA = "concurrency_bench"
MARK = re.compile(r"\[conv ([0-9a-f]+-\d+)\]")  # a conversation's marker in its messages
TALKING: ContextVar[str] = ContextVar("TALKING")  # the conversation whose turn this is


class Inputs(list):  # type: ignore[type-arg]
    """The model's inputs, each with the conversation whose turn sent it."""

    def append(self, messages: Any) -> None:
        super().append((TALKING.get(""), messages))


class Counter(logging.Handler):
    """Counts memory's "still busy" warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.busy = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.busy += "still busy" in record.getMessage()


def spin(stop: Any) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


async def one_run(args: argparse.Namespace, texts: list[str], storage: Any) -> dict[str, Any]:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from langchain_mastra_memory import Memory

    seen = Inputs()
    problems: list[str] = []
    memory = Memory(
        storage=storage,
        options={"semantic_recall": True, "working_memory": {"enabled": True}},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_agent(
            scripted_model(seen, problems),
            tools=[memory.working_memory_tool()],
            middleware=[memory.middleware()],
            checkpointer=memory.checkpointer(),
        )
    run = uuid.uuid4().hex[:6]
    # the embedder and tokenizer loaded before the clock starts, as in a warm server
    await memory.acontext([HumanMessage("warm up")], thread_id=f"w-{run}", resource_id="w")
    times: list[float] = []

    async def conversation(c: int) -> None:
        conv = f"{run}-{c}"
        TALKING.set(conv)
        config = {"configurable": {"thread_id": f"t-{conv}", "resource_id": f"u-{conv}"}}
        for turn in range(args.turns):
            text = (
                f"Remember this: my secret word is zeph{c}q [conv {conv}]"
                if turn == 0
                else f"{texts[(c * 97 + turn) % len(texts)]} [conv {conv}]"
            )
            started = time.perf_counter()
            await agent.ainvoke({"messages": [HumanMessage(text)]}, config)
            times.append(time.perf_counter() - started)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(conversation(c) for c in range(args.conversations)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await memory.aflush(120)
    lost = duplicated = extra = checked = 0
    for c in range(args.conversations):
        config = {"configurable": {"thread_id": f"t-{run}-{c}", "resource_id": f"u-{run}-{c}"}}
        state = (await agent.aget_state(config)).values["messages"]
        ids = [m.id for m in await memory.aget_messages(thread_id=f"t-{run}-{c}")]
        for message in state:
            checked += 1
            lost += ids.count(message.id) == 0
            duplicated += ids.count(message.id) > 1
        extra += len(set(ids) - {m.id for m in state})  # kept, though the state has not it
    crossed = marked = 0
    for conv, sent in seen:
        assert conv, "a model call outside a conversation"
        marks = set(MARK.findall(" ".join(str(x.content) for x in sent)))
        crossed += bool(marks - {conv})
        marked += conv in marks  # (the check reads markers: its own are there)
    return {
        "times": times,
        "wall": wall,
        "cpu": cpu,
        "lost": lost,
        "duplicated": duplicated,
        "extra": extra,
        "checked": checked,
        "crossed": crossed,
        "problems": len(problems),
        "inputs": len(seen),
        "marked": marked,
    }


def storage_for(args: argparse.Namespace, folder: Path, run: int) -> Any:
    from langchain_mastra_memory import PostgresStorage, SQLiteStorage

    if args.backend == "sqlite":
        return SQLiteStorage(folder / f"run{run}.db")
    return PostgresStorage(args.dsn, schema=f"{SCHEMA}_{run}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=32)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--busy", type=int, default=0, help="processes spinning beside")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo's JSON files")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the figures here (bench/results/concurrency.json: "
                        "the docs' plot, `plot_figures.py`)")  # fmt: skip
    args = parser.parse_args()
    if args.backend == "postgres" and args.dsn is None:
        from langchain_mastra_memory.testing import throwaway_postgres

        args.dsn = throwaway_postgres()
    counter = Counter()
    logging.getLogger("langchain_mastra_memory").addHandler(counter)
    texts = [t for t, _ in turns_and_questions(args.data)[0]]
    if not texts:
        raise SystemExit(f"no chat turns in {args.data}")
    stop = mp.get_context("spawn").Event()
    spinners = [
        mp.get_context("spawn").Process(target=spin, args=(stop,)) for _ in range(args.busy)
    ]
    for s in spinners:
        s.start()
    print(
        f"{args.conversations} conversations x {args.turns} turns, {args.backend}, "
        f"{args.busy} busy processes beside"
    )
    runs: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            for n in range(args.runs):
                counter.busy = 0
                storage = storage_for(args, Path(folder), n)
                if args.backend == "postgres":
                    storage.drop_schema()
                    storage = storage_for(args, Path(folder), n)
                result = asyncio.run(one_run(args, texts, storage))
                times = sorted(result["times"])
                p95 = statistics.quantiles(times, n=20)[18]
                print(
                    f"run {n + 1}: {len(times)} turns in {result['wall']:.1f} s = "
                    f"{len(times) / result['wall']:.1f} turns/s; turn p50 / p95 / max "
                    f"{statistics.median(times):.2f} / {p95:.2f} / {times[-1]:.2f} s; "
                    f"over 10 s: {sum(t > 10 for t in times)}; CPU {result['cpu']:.1f} s "
                    f"(wall / CPU {result['wall'] / result['cpu']:.2f}); still-busy warnings: "
                    f"{counter.busy}; lost {result['lost']}, duplicated {result['duplicated']} "
                    f"of {result['checked']}, extra {result['extra']}; "
                    f"crossed {result['crossed']} of {result['inputs']} inputs "
                    f"({result['marked']} with their own marker); "
                    f"provider refusals {result['problems']}",
                    flush=True,
                )
                runs.append({
                    "turns_per_s": len(times) / result["wall"],
                    "turn_s": [statistics.median(times), p95, times[-1]],
                    "over_10_s": sum(t > 10 for t in times),
                    "wall_per_cpu": result["wall"] / result["cpu"],
                    "busy_warnings": counter.busy,
                    **{k: result[k] for k in ("lost", "duplicated", "extra", "checked",
                                              "crossed", "inputs", "problems")},
                })  # fmt: skip
                storage.close()
    finally:
        stop.set()
        for s in spinners:
            s.join()
    if args.json is not None:
        setting = (
            f"{args.conversations} conversations x {args.turns} turns at once in one "
            f"async process, {args.backend}, {args.busy} busy processes beside"
        )
        save("concurrency", {"setting": setting, "runs": runs}, path=args.json)


if __name__ == "__main__":
    main()
