"""Benchmark: MemoryCheckpointer against the bare saver it wraps (put and get_tuple).

A thread of `--turns` turns is checkpointed; each checkpoint's ``messages`` channel holds the
whole conversation so far (as a graph's does), two messages longer than the last. The adapter
mirrors the new messages into memory (SQLite storage, semantic recall off). Ratios compare
the same saver class, wrapped and bare, in the same run.

    python bench/checkpointer_bench.py [--turns 500]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_mastra_memory import Memory, SQLiteStorage, TokenCounter


def drive(saver, turns: int, thread: str) -> tuple[float, float]:
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "resource_id": "bench"}}
    messages: list = []
    put_time = get_time = 0.0
    for i in range(turns):
        messages = [
            *messages,
            HumanMessage(f"question {i}", id=f"{thread}-h{i}"),
            AIMessage(f"answer {i}", id=f"{thread}-a{i}"),
        ]
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": messages}
        checkpoint["channel_versions"] = {"messages": i + 1}
        start = time.perf_counter()
        config = saver.put(
            config, checkpoint, {"step": i, "source": "loop", "parents": {}}, {"messages": i + 1}
        )
        put_time += time.perf_counter() - start
        config["configurable"]["resource_id"] = "bench"
        start = time.perf_counter()
        saver.get_tuple(config)
        get_time += time.perf_counter() - start
    return put_time / turns, get_time / turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    args = parser.parse_args()
    print(
        "| inner saver | put: bare | put: with memory | put overhead "
        "| get_tuple: bare | get_tuple: with memory |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    TokenCounter()  # load the tokenizer once, outside the timings (a one-time 0.5 s)
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("InMemorySaver", "SqliteSaver"):
            bare_put, bare_get = drive(make_saver(name, Path(tmp), "bare"), args.turns, "bare")
            memory = Memory(storage=SQLiteStorage(Path(tmp) / f"memory-{name}.db"))
            wrapped = memory.checkpointer(make_saver(name, Path(tmp), "wrapped"))
            wrapped_put, wrapped_get = drive(wrapped, args.turns, "wrapped")
            print(
                f"| {name} | {bare_put * 1e3:.2f} ms | {wrapped_put * 1e3:.2f} ms "
                f"| {wrapped_put / bare_put - 1:+.0%} | {bare_get * 1e3:.3f} ms "
                f"| {wrapped_get * 1e3:.3f} ms |",
                flush=True,
            )


def make_saver(name: str, directory: Path, tag: str):
    if name == "InMemorySaver":
        return InMemorySaver()
    return SqliteSaver(sqlite3.connect(directory / f"{tag}.db", check_same_thread=False))


if __name__ == "__main__":
    main()
