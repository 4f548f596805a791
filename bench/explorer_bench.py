"""The memory explorer's home page (resources, newest first) on a big database.

`MemoryStorage.page_resources` in SQL (one grouped query for the page, one for its totals)
against the listing it replaced (every thread read into Python, grouped there: the base
class's fallback, still what a non-SQL backend gets), on the same SQLite file: 100k threads
over 20k resources, one message each. Interleaved, the side going first alternating; every
repetition opens the database anew (SQLite's page cache empty) and serves ``GET /`` through the
explorer app (Starlette's test client: routing, the query, the template).

    python bench/explorer_bench.py [--threads 100000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from langchain_core.messages import HumanMessage
from starlette.testclient import TestClient

sys.path.insert(0, str(Path(__file__).parent))
from token_limiter_bench import p50_p95

from langchain_mastra_memory import Memory, MemoryStorage, SQLiteStorage
from langchain_mastra_memory.storage.records import ImportedThread
from langchain_mastra_memory.ui import create_app


class ListingStorage(SQLiteStorage):
    """The same database, answering `page_resources` as the explorer did before (Python)."""

    page_resources = MemoryStorage.page_resources


def fill(path: Path, threads: int, per_resource: int = 5) -> None:
    storage = SQLiteStorage(path)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    batch: list[ImportedThread] = []
    for n in range(threads):
        owner = f"user-{n // per_resource:06d}"
        at = start + timedelta(seconds=n)
        batch.append(
            ImportedThread(
                thread_id=f"t{n}", resource_id=owner, messages=[HumanMessage(f"hello {n}")],
                created_at=[at], thread_created_at=at, thread_updated_at=at,
            )
        )  # fmt: skip
        if len(batch) == 5000:
            storage.save_import(batch)
            batch = []
    if batch:
        storage.save_import(batch)
    storage.close()


def home(path: Path, storage_class: type[SQLiteStorage]) -> float:
    """Seconds to answer ``GET /`` from a database opened just now (opening it not timed)."""
    storage = storage_class(path)
    client = TestClient(create_app(Memory(storage=storage)), base_url="http://127.0.0.1")
    began = time.perf_counter()
    answer = client.get("/")
    took = time.perf_counter() - began
    assert answer.status_code == 200 and "user-" in answer.text
    storage.close()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp()) / "explorer.db"
    began = time.perf_counter()
    fill(path, args.threads)
    print(f"{args.threads:,} threads, {args.threads // 5:,} resources, "
          f"filled in {time.perf_counter() - began:.0f} s")  # fmt: skip
    sides = {"SQL (page_resources)": SQLiteStorage, "listing (before)": ListingStorage}
    times: dict[str, list[float]] = {name: [] for name in sides}
    for round_ in range(args.repeat):  # interleaved, the side going first alternating
        for name in list(sides) if round_ % 2 == 0 else reversed(list(sides)):
            times[name].append(home(path, sides[name]))
    sql50, sql95 = p50_p95(times["SQL (page_resources)"])
    print("| home page, GET / | p50 ms | p95 ms |\n|---|---|---|")
    for name, samples in times.items():
        p50, p95 = p50_p95(samples)
        print(f"| {name} | {p50 * 1000:.0f} | {p95 * 1000:.0f} |")
    old50, old95 = p50_p95(times["listing (before)"])
    print(f"\nSQL is {old50 / sql50:.1f}x faster at p50, {old95 / sql95:.1f}x at p95")


if __name__ == "__main__":
    main()
