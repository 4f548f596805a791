"""Benchmark: CPU per agent turn, bare and with memory, and where memory's share goes.

One process runs LangChain's `create_agent` with a scripted model (it checks its input as
providers do) in each configuration, built once as a server builds them and kept for the
whole run (a steady state: the embedder, tokenizer, pools and connections are warm), and
interleaved run by run so a busy machine weighs on all of them alike:

- ``bare``: the agent on LangGraph's own saver (`AsyncSqliteSaver` / `SqliteSaver`, or
  `AsyncPostgresSaver` / `PostgresSaver` with ``--backend postgres``), no memory;
- ``memory``: ``memory.middleware()``, ``memory.checkpointer()`` and the working-memory tool,
  semantic recall off;
- ``memory+recall``: the same with semantic recall on (the default embedder and vector store).

Each run is N conversations of T turns at once: asyncio tasks (``ainvoke``), or with ``--sync``
N threads (``invoke``). Every run uses new threads of the same N resources (their histories
grow as a returning user's do) with real chat lines (LoCoMo), each marked so no earlier run
said it and the embedding cache never answers for it or for the model's reply. A run's CPU
(the process's, every thread: the vector writer's embeddings count; after `flush()`, so
deferred work is paid inside the run) is divided by its turns.
With PostgreSQL, the server's CPU (its processes, read from ``/proc``) is printed beside.

Printed: p50 / p95 ms of CPU per turn over the runs and each configuration's ratio to ``bare``
(p50 over p50, in the same process); the embedding model's forward passes on their own (their
CPU, timed around each ONNX Runtime call on the thread that makes it, and the texts they embed a
turn) and memory's CPU apart from them, against the bare turn; then, per memory configuration,
the p50 of each group of threads, which is where memory's steps run: the event loop (or the
conversations' threads: the agent's loop and memory's planning; with ``--sync`` the query's
embedding too), memory's I/O pool (storage reads and writes, the checkpointer's, vector
searches), the embedding pool (a turn's query), the embedder's own threads (a call of several
batches: the writer's pieces), the vector writer (the rest of its embeddings, its vector writes)
and the vector engine's own threads (Chroma's).

    python bench/turn_cpu.py [--conversations 16] [--turns 4] [--runs 5] [--sync]
                             [--backend sqlite|postgres] [--dsn ...] [--data LOCOMO_DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, ExitStack
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from load_bench import scripted_model
from locomo_data import DEFAULT_DATA, turns_and_questions
from results import save

CONFIGURATIONS = ("bare", "memory", "memory+recall")
GROUPS = (  # thread name pattern -> the step it runs
    (r"MainThread|conversation", "agent + memory's planning"),
    (r"lmm-io|langchain-mastra-memory", "memory's I/O pool"),  # (the second: sync steps beside)
    (r"lmm-embed", "query embeddings"),
    (r"minilm", "embedding batches"),
    (r"lmm-backlog-writer", "vector writer"),
    (r"native:(tokio|sqlx)", "vector engine (Chroma)"),
    (r"_connection_worker_thread|asyncio", "bare saver / other pools"),
)
TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu() -> Counter[tuple[str, str]]:
    """CPU seconds so far of each live thread of this process, keyed by (tid, name)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: Counter[tuple[str, str]] = Counter()
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            comm = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
        except OSError:  # (ended meanwhile)
            continue
        name = names.get(int(tid), f"native:{comm}")
        out[(tid, name)] += (int(fields[11]) + int(fields[12])) / TICK
    return out


def by_group(before: Counter[tuple[str, str]], after: Counter[tuple[str, str]]) -> Counter[str]:
    """CPU seconds between two `thread_cpu` readings, by `GROUPS` (a thread that ended in
    between is missing: the total is measured separately)."""
    spent: Counter[str] = Counter()
    for key, seconds in after.items():
        group = next((g for pattern, g in GROUPS if re.search(pattern, key[1])), "other")
        spent[group] += seconds - before.get(key, 0.0)
    return spent


def server_cpu(dsn: str | None) -> float:
    """CPU seconds so far of the local PostgreSQL server's processes (0 without one)."""
    if dsn is None:
        return 0.0
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() not in ("postgres", "postmaster"):
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def memory_for(kind: str, args: argparse.Namespace, folder: Path) -> Any:
    from langchain_mastra_memory import Memory, PostgresStorage, SQLiteStorage

    storage = (
        SQLiteStorage(folder / f"{kind.replace('+', '-')}.db")
        if args.backend == "sqlite"
        else PostgresStorage(args.dsn, schema=f"turn_cpu_{kind.replace('+', '_')}")
    )
    options = {"semantic_recall": kind == "memory+recall", "working_memory": {"enabled": True}}
    return Memory(storage=storage, options=options)


def agent_for(kind: str, memory: Any, saver: Any, seen: list[Any], problems: list[str]) -> Any:
    from langchain.agents import create_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if memory is None:
            return create_agent(scripted_model(seen, problems), tools=[], checkpointer=saver)
        return create_agent(scripted_model(seen, problems),
                            tools=[memory.working_memory_tool()],
                            middleware=[memory.middleware(save=False)],  # the checkpointer saves
                            checkpointer=memory.checkpointer())  # fmt: skip


TEXTS: list[str] = []  # real chat (LoCoMo's dev split: 2,760 turns), read by `main`


class ModelPasses:
    """The default embedder's forward passes, timed: CPU seconds (the calling thread's, around
    each ONNX Runtime call: the session runs on one thread) and texts, over every thread."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.texts = 0
        self._lock = threading.Lock()

    def install(self) -> None:
        from langchain_mastra_memory.recall.embedders.minilm import MiniLMEmbeddings

        encode = MiniLMEmbeddings._encode
        passes = self

        def timed(embedder: Any, encodings: Any) -> Any:
            started = time.thread_time()
            try:
                return encode(embedder, encodings)
            finally:
                spent = time.thread_time() - started
                with passes._lock:
                    passes.cpu += spent
                    passes.texts += len(encodings)

        MiniLMEmbeddings._encode = timed  # type: ignore[method-assign]

    def reading(self) -> tuple[float, int]:
        with self._lock:
            return self.cpu, self.texts


MODEL = ModelPasses()


def sides_of(
    args: argparse.Namespace, folder: Path, saver: Any, seen: list[Any], problems: list[str]
) -> dict[str, tuple[Any, Any]]:
    """Each configuration's (agent, memory or None), built once for the whole run."""
    sides: dict[str, tuple[Any, Any]] = {}
    for kind in CONFIGURATIONS:
        memory = None if kind == "bare" else memory_for(kind, args, folder)
        sides[kind] = (agent_for(kind, memory, saver, seen, problems), memory)
    return sides


def said(run: int, c: int, turn: int, kind: str) -> str:
    """A real chat line, marked first so the model's reply (its first 60 characters) and the
    text itself are new to the embedding cache."""
    n = (run * 97 + c * 13 + turn) % len(TEXTS)
    return f"[{kind} {run}.{c}.{turn}] {TEXTS[n]}"


def config_of(run: int, c: int) -> dict[str, Any]:
    return {"configurable": {"thread_id": f"r{run}-{c}", "resource_id": f"u{c}"}}


async def aconversation(agent: Any, kind: str, run: int, c: int, turns: int) -> None:
    from langchain_core.messages import HumanMessage

    for turn in range(turns):
        await agent.ainvoke(
            {"messages": [HumanMessage(said(run, c, turn, kind))]}, config_of(run, c)
        )


def conversation(agent: Any, kind: str, run: int, c: int, *, turns: int) -> None:
    from langchain_core.messages import HumanMessage

    for turn in range(turns):
        agent.invoke({"messages": [HumanMessage(said(run, c, turn, kind))]}, config_of(run, c))


def p95(values: list[float]) -> float:
    """The 95th percentile of the runs (the one run's value when there is one)."""
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


class Results:
    """CPU ms per turn, per configuration, run by run; and per thread group."""

    def __init__(self) -> None:
        self.total: dict[str, list[float]] = {k: [] for k in CONFIGURATIONS}
        self.server: dict[str, list[float]] = {k: [] for k in CONFIGURATIONS}
        self.model: dict[str, list[float]] = {k: [] for k in CONFIGURATIONS}  # ms a turn
        self.texts: dict[str, list[float]] = {k: [] for k in CONFIGURATIONS}  # embedded a turn
        self.groups: dict[str, dict[str, list[float]]] = {k: {} for k in CONFIGURATIONS}

    def measured(
        self, kind: str, turns: int, dsn: str | None
    ) -> tuple[Callable[[], None], Callable[[bool], None]]:
        """Around one run: `start()` before, `stop(warm)` after (counted unless `warm`)."""
        state: dict[str, Any] = {}

        def start() -> None:
            gc.collect()
            state.update(cpu=time.process_time(), threads=thread_cpu(), server=server_cpu(dsn),
                         model=MODEL.reading())  # fmt: skip

        def stop(warm: bool) -> None:
            cpu = time.process_time() - state["cpu"]
            if warm:
                return
            self.total[kind].append(cpu / turns * 1000)
            self.server[kind].append((server_cpu(dsn) - state["server"]) / turns * 1000)
            model_cpu, texts = MODEL.reading()
            self.model[kind].append((model_cpu - state["model"][0]) / turns * 1000)
            self.texts[kind].append((texts - state["model"][1]) / turns)
            for group, seconds in by_group(state["threads"], thread_cpu()).items():
                self.groups[kind].setdefault(group, []).append(seconds / turns * 1000)

        return start, stop

    def apart(self, kind: str) -> list[float]:
        """Each run's CPU a turn less the model's forward passes in it."""
        return [t - m for t, m in zip(self.total[kind], self.model[kind], strict=True)]

    def figures(self, args: argparse.Namespace) -> dict[str, Any]:
        """What `print` shows, for `results.save`: p50 / p95 and the ratio to bare for each
        configuration, and each thread group's p50."""
        bare = statistics.median(self.total["bare"])
        shape = f"{args.conversations} conversations x {args.turns} turns"
        return {
            "setting": f"{shape}, {args.backend}, {'threads' if args.sync else 'asyncio'}",
            "runs": args.runs,
            "configurations": {
                kind: {"p50_ms": statistics.median(v), "p95_ms": p95(v),
                       "x_bare": statistics.median(v) / bare,
                       "model_p50_ms": statistics.median(self.model[kind]),
                       "texts_per_turn": statistics.median(self.texts[kind]),
                       "apart_from_model_p50_ms": statistics.median(self.apart(kind)),
                       "apart_from_model_x_bare": statistics.median(self.apart(kind)) / bare,
                       "server_p50_ms": statistics.median(self.server[kind])}
                for kind, v in self.total.items()
            },
            "groups_p50_ms": {
                kind: {g: statistics.median(v) for g, v in groups.items()}
                for kind, groups in self.groups.items()
            },
        }  # fmt: skip

    def print(self, args: argparse.Namespace) -> None:
        mode = "sync (threads)" if args.sync else "asyncio"
        print(f"{args.conversations} conversations x {args.turns} turns, {args.backend}, {mode}; "
              f"{args.runs} runs each, interleaved; CPU ms per turn")  # fmt: skip
        server = args.backend == "postgres"
        head = (f"{'configuration':16} {'p50':>7} {'p95':>7} {'x bare':>7} {'model':>7} "
                f"{'texts':>6} {'apart':>7} {'x bare':>7}")  # fmt: skip
        print(head + (f" {'server p50':>11} {'x bare (both)':>14}" if server else ""))
        bare = statistics.median(self.total["bare"])
        bare_both = bare + statistics.median(self.server["bare"])
        for kind, values in self.total.items():
            p50 = statistics.median(values)
            apart = statistics.median(self.apart(kind))
            model, texts = statistics.median(self.model[kind]), statistics.median(self.texts[kind])
            line = (f"{kind:16} {p50:7.1f} {p95(values):7.1f} {p50 / bare:7.2f} {model:7.1f} "
                    f"{texts:6.1f} {apart:7.1f} {apart / bare:7.2f}")  # fmt: skip
            if server:
                both = p50 + statistics.median(self.server[kind])
                line += f" {statistics.median(self.server[kind]):11.1f} {both / bare_both:14.2f}"
            print(line)
        print("(model: the embedding model's forward passes, ms a turn, and the texts they embedded"
              " a turn; apart: the rest of the CPU, against the bare turn)")  # fmt: skip
        print("\nwhere it goes (p50 ms per turn, by thread group)")
        names = [g for _, g in GROUPS] + ["other"]
        print(f"{'group':28}" + "".join(f"{k:>15}" for k in CONFIGURATIONS))
        for group in names:
            row = [statistics.median(self.groups[k].get(group) or [0.0]) for k in CONFIGURATIONS]
            if any(v >= 0.05 for v in row):
                print(f"{group:28}" + "".join(f"{v:15.1f}" for v in row))


async def run_async(args: argparse.Namespace, folder: Path, results: Results) -> list[str]:
    seen: list[Any] = []
    problems: list[str] = []
    async with AsyncExitStack() as stack:
        if args.backend == "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

            saver = await stack.enter_async_context(
                AsyncSqliteSaver.from_conn_string(str(folder / "bare.db"))
            )
        else:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

            saver = await stack.enter_async_context(AsyncPostgresSaver.from_conn_string(args.dsn))
            await saver.setup()
        sides = sides_of(args, folder, saver, seen, problems)
        for _agent, memory in sides.values():
            if memory is not None:
                stack.push_async_callback(memory.aclose)
        for run in range(args.runs + 1):  # (run 0 warms the process and is not counted)
            for kind, (agent, memory) in sides.items():
                start, stop = results.measured(kind, args.conversations * args.turns, args.dsn)
                start()
                await asyncio.gather(*(
                    aconversation(agent, kind, run, c, args.turns)
                    for c in range(args.conversations)))  # fmt: skip
                if memory is not None:
                    assert await memory.aflush(120)  # (deferred embeddings are this run's too)
                stop(run == 0)
    return problems


def run_sync(args: argparse.Namespace, folder: Path, results: Results) -> list[str]:
    seen: list[Any] = []
    problems: list[str] = []
    with ExitStack() as stack:
        if args.backend == "sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver

            saver = stack.enter_context(SqliteSaver.from_conn_string(str(folder / "bare.db")))
        else:
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool

            settings = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
            pool = stack.enter_context(
                ConnectionPool(args.dsn, max_size=args.conversations, kwargs=settings)
            )
            saver = PostgresSaver(pool)
            saver.setup()
        sides = sides_of(args, folder, saver, seen, problems)
        for _agent, memory in sides.values():
            if memory is not None:
                stack.callback(memory.close)
        workers = stack.enter_context(
            ThreadPoolExecutor(args.conversations, thread_name_prefix="conversation")
        )
        for run in range(args.runs + 1):
            for kind, (agent, memory) in sides.items():
                start, stop = results.measured(kind, args.conversations * args.turns, args.dsn)
                start()
                list(workers.map(
                    partial(conversation, agent, kind, run, turns=args.turns),
                    range(args.conversations)))  # fmt: skip
                if memory is not None:
                    assert memory.flush(120)
                stop(run == 0)
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=16)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sync", action="store_true", help="threads and invoke, not asyncio")
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--dsn", default=None, help="PostgreSQL (default: a throwaway server)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="LoCoMo's JSON files")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the figures here (bench/results/turn_cpu.json: the "
                        "docs' plot, `plot_figures.py`)")  # fmt: skip
    args = parser.parse_args()
    TEXTS[:] = [text for text, _ in turns_and_questions(args.data)[0]]
    if not TEXTS:
        raise SystemExit(f"no chat turns in {args.data}")
    if args.backend == "postgres" and args.dsn is None:
        from langchain_mastra_memory.testing import throwaway_postgres

        args.dsn = throwaway_postgres()
    MODEL.install()
    results = Results()
    with tempfile.TemporaryDirectory() as root:
        if args.sync:
            problems = run_sync(args, Path(root), results)
        else:
            problems = asyncio.run(run_async(args, Path(root), results))
    if problems:
        raise SystemExit(f"the model was sent what a provider refuses: {problems[:3]}")
    results.print(args)
    if args.json is not None:
        save("turn_cpu", results.figures(args), path=args.json)


if __name__ == "__main__":
    main()
