"""Benchmark: memory on a Mastra store's tables (`MastraStorage`) beside our own layout and
beside Mastra itself, on one SQLite file of 100,000 messages in ONE resource (100 threads).

The store is written as Mastra's agent writes it (a user row and an assistant row per turn, v2
content, every tenth turn with a tool call and its result), then opened by `MastraStorage` (the
catch-up that reads it in is timed: rows/s), and copied to our own layout (`copy_memory` into a
`SQLiteStorage`). Timed, interleaved per repetition, a random thread each time:

- **list**: a thread's last 40 messages: `MastraStorage.list_messages(thread, last=40)`, the same
  on our layout, and Mastra's own `memory.recall({ threadId, perPage: 40 })` on the same file (a
  live Mastra 1.31 process, its store kept open; its time measured inside Node, so the pipe to
  it is not counted);
- **recall**: the whole call a turn makes, `memory.recall(thread_id, resource_id,
  new_messages=[question])` (the last 40, a keyword search over the resource's 100k, the
  neighbours) on `MastraStorage` and on our layout.

p50 / p95 per side and the ratios to our layout (target: within 1.5x) and to Mastra's.

    python bench/mastra_store_bench.py [--messages 100000] [--threads 100] [--reps 200]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from results import percentiles, save

WORDS = [f"w{i}" for i in range(3000)]


def js(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def mastra_rows(messages: int, threads: int) -> tuple[list[tuple], list[tuple]]:
    """Threads and message rows as Mastra's agent writes them."""
    rng = random.Random(7)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    thread_rows, message_rows = [], []
    per_thread = messages // threads
    clock = start
    for t in range(threads):
        made = clock
        for n in range(0, per_thread, 2):
            clock += timedelta(seconds=1)
            words = " ".join(rng.choices(WORDS, k=12))
            ms = int(clock.timestamp() * 1000)
            user = {
                "format": 2,
                "parts": [{"type": "text", "text": f"user {words}", "createdAt": ms}],
                "content": f"user {words}",
            }
            message_rows.append(
                (f"u{t}-{n}", f"t{t}", json.dumps(user), "user", "v2", js(clock), "alice")
            )
            clock += timedelta(seconds=1)
            parts: list[dict[str, Any]] = []
            if n % 20 == 0:
                parts = [
                    {
                        "type": "tool-invocation",
                        "toolInvocation": {
                            "state": "result",
                            "toolCallId": f"c{t}-{n}",
                            "toolName": "search",
                            "args": {"q": words[:20]},
                            "result": {"hits": 3},
                        },
                    },
                    {"type": "step-start"},
                ]
            parts.append({"type": "text", "text": f"reply {words}"})
            reply = {
                "format": 2,
                "parts": parts,
                "content": f"reply {words}",
                "metadata": {"modelId": "m", "provider": "p"},
            }
            message_rows.append(
                (f"a{t}-{n}", f"t{t}", json.dumps(reply), "assistant", "v2", js(clock), "alice")
            )
        thread_rows.append((f"t{t}", "alice", "", None, js(made), js(clock)))
    return thread_rows, message_rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from mastra_side import LiveMastra, MastraSide

    from langchain_mastra_memory import Memory, SQLiteStorage
    from langchain_mastra_memory.storage.mastra import MastraStorage
    from langchain_mastra_memory.storage.mastra.layout import MASTRA_TABLES
    from langchain_mastra_memory.storage.mastra.migration import copy_memory

    folder = Path(tempfile.mkdtemp(prefix="lmm-mastra-bench-"))
    path = folder / "mastra.db"
    threads, rows = mastra_rows(args.messages, args.threads)
    with sqlite3.connect(path) as conn:
        conn.executescript(MASTRA_TABLES)
        conn.executemany("INSERT INTO mastra_threads VALUES (?, ?, ?, ?, ?, ?)", threads)
        conn.executemany("INSERT INTO mastra_messages VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    began = time.perf_counter()
    shared = MastraStorage(f"file:{path}")  # reads Mastra's rows in (the catch-up)
    catch_up = time.perf_counter() - began
    began = time.perf_counter()
    ours = SQLiteStorage(folder / "memory.db")
    copy_memory(shared, ours)
    copied = time.perf_counter() - began
    print(f"{len(rows)} Mastra rows in {len(threads)} threads of one resource")
    print(
        f"catch-up (MastraStorage opening Mastra's file): {catch_up:.1f} s, "
        f"{len(rows) / catch_up:.0f} rows/s; copy to our layout: {copied:.1f} s"
    )

    options = {
        "semantic_recall": {"mode": "keyword", "scope": "resource", "top_k": 3, "message_range": 1},
        "last_messages": 40,
    }
    memories = {
        "mastra-tables": Memory(storage=shared, options=options),
        "our layout": Memory(storage=ours, options=options),
    }
    storages = {"mastra-tables": shared, "our layout": ours}
    times: dict[str, list[float]] = {f"list {k}": [] for k in storages}
    times |= {f"recall {k}": [] for k in memories}
    times["list Mastra itself"] = []
    rng = random.Random(11)
    with LiveMastra(MastraSide.installed()) as live:
        for rep in range(args.reps + 5):  # the first five warm up, untimed
            thread = f"t{rng.randrange(args.threads)}"
            question = HumanMessage(" ".join(rng.choices(WORDS, k=6)))
            order = list(storages)
            rng.shuffle(order)
            for name in order:
                began = time.perf_counter()
                listed = storages[name].list_messages(thread, last=40)
                spent = (time.perf_counter() - began) * 1e3
                assert len(listed) >= 40, (name, len(listed))
                if rep >= 5:
                    times[f"list {name}"].append(spent)
            answer = live.run(
                {"op": "recall", "db": str(path), "thread": thread, "resource": "alice", "last": 40}
            )
            assert "error" not in answer, answer
            if rep >= 5:
                times["list Mastra itself"].append(float(answer["ms"]))
            rng.shuffle(order)
            for name in order:
                began = time.perf_counter()
                memories[name].recall(
                    thread_id=thread, resource_id="alice", new_messages=[question]
                )
                spent = (time.perf_counter() - began) * 1e3
                if rep >= 5:
                    times[f"recall {name}"].append(spent)
    figures: dict[str, Any] = {
        "messages": len(rows),
        "threads": len(threads),
        "catch_up_rows_per_s": len(rows) / catch_up,
        "sides": {},
    }
    print("\n| timed | p50 ms | p95 ms | vs our layout (p50 / p95) |")
    print("|---|---|---|---|")
    for name, ms in times.items():
        p50, p95 = percentiles(ms)
        kind = name.split(" ")[0]
        base50, base95 = percentiles(times[f"{kind} our layout"])
        figures["sides"][name] = {"p50_ms": p50, "p95_ms": p95}
        print(f"| {name} | {p50:.2f} | {p95:.2f} | {p50 / base50:.2f}x / {p95 / base95:.2f}x |")
    p50, _ = percentiles(times["list mastra-tables"])
    mastra50, _ = percentiles(times["list Mastra itself"])
    print(
        f"\nlisting the last 40 on Mastra's tables here / Mastra's own recall: "
        f"{p50 / mastra50:.2f}x (p50)"
    )
    save("mastra_store", figures, path=args.json)
    shared.close()
    ours.close()


if __name__ == "__main__":
    main()
