"""Benchmark: MemoryCheckpointer against the bare saver it wraps (put and get_tuple).

Medians over the calls (robust to GC pauses on a busy machine). A thread of `--turns`
turns is checkpointed; each checkpoint's ``messages`` channel holds the
whole conversation so far (as a graph's does), two messages longer than the last. The adapter
mirrors the new messages into memory (SQLite storage, semantic recall off). Ratios compare
the same saver class, wrapped and bare, in the same run.

    python bench/checkpointer_bench.py [--turns 500]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_mastra_memory import Memory, SQLiteStorage, TokenCounter


def drive(bare, wrapped, turns: int, run: str) -> dict[str, float]:
    """Checkpoint the same conversation into both savers, alternating which goes first, so both
    see the same machine noise; returns median put/get_tuple seconds of each."""
    savers = {"bare": bare, "wrapped": wrapped}
    configs = {
        name: {
            "configurable": {
                "thread_id": f"{name}-{run}",
                "checkpoint_ns": "",
                "resource_id": "bench",
            }
        }
        for name in savers
    }
    times: dict[str, list[float]] = {f"{n}_{op}": [] for n in savers for op in ("put", "get")}
    messages: list = []
    for i in range(turns):
        messages = [
            *messages,
            HumanMessage(f"question {i}", id=f"{run}-h{i}"),
            AIMessage(f"answer {i}", id=f"{run}-a{i}"),
        ]
        order = ["bare", "wrapped"] if i % 2 else ["wrapped", "bare"]
        for name in order:
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"messages": messages}
            checkpoint["channel_versions"] = {"messages": i + 1}
            start = time.perf_counter()
            config = savers[name].put(
                configs[name],
                checkpoint,
                {"step": i, "source": "loop", "parents": {}},
                {"messages": i + 1},
            )
            times[f"{name}_put"].append(time.perf_counter() - start)
            config["configurable"]["resource_id"] = "bench"
            configs[name] = config
            start = time.perf_counter()
            savers[name].get_tuple(config)
            times[f"{name}_get"].append(time.perf_counter() - start)
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument(
        "--postgres", metavar="DSN", help="also measure PostgresSaver on this server"
    )
    args = parser.parse_args()
    print(
        "| inner saver | put: bare | put: with memory | put overhead "
        "| get_tuple: bare | get_tuple: with memory |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    TokenCounter()  # load the tokenizer once, outside the timings (a one-time 0.5 s)
    with tempfile.TemporaryDirectory() as tmp:
        names = ["InMemorySaver", "SqliteSaver"] + (["PostgresSaver"] if args.postgres else [])
        for name in names:
            memory = Memory(storage=SQLiteStorage(Path(tmp) / f"memory-{name}.db"))
            wrapped = memory.checkpointer(make_saver(name, Path(tmp), "wrapped", args.postgres))
            r = drive(
                make_saver(name, Path(tmp), "bare", args.postgres),
                wrapped,
                args.turns,
                uuid.uuid4().hex[:8],
            )
            bare_put, wrapped_put, bare_get, wrapped_get = (
                r["bare_put"],
                r["wrapped_put"],
                r["bare_get"],
                r["wrapped_get"],
            )
            print(
                f"| {name} | {bare_put * 1e3:.2f} ms | {wrapped_put * 1e3:.2f} ms "
                f"| {wrapped_put / bare_put - 1:+.0%} | {bare_get * 1e3:.3f} ms "
                f"| {wrapped_get * 1e3:.3f} ms |",
                flush=True,
            )


def make_saver(name: str, directory: Path, tag: str, dsn: str | None = None):
    if name == "InMemorySaver":
        return InMemorySaver()
    if name == "PostgresSaver":
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        saver = PostgresSaver(conn)
        saver.setup()
        return saver
    return SqliteSaver(sqlite3.connect(directory / f"{tag}.db", check_same_thread=False))


if __name__ == "__main__":
    main()
