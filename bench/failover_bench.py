"""Benchmark: how long a PostgreSQL failover holds the turns up, and how many fail.

A primary and a synchronous standby (`tests/pg_cluster.py`: the session server's binaries,
``pg_basebackup``); `create_agent` with `memory.middleware()`, semantic recall in pgvector,
over the application's own LangGraph `PostgresSaver` pool, all on one multi-host DSN
(``target_session_attrs=read-write``). `--conversations` conversations run their turns on
threads; once each has 3 acknowledged turns the primary is killed (``pg_ctl stop -m
immediate``) and the standby promoted 0.5 s later. Measured per run: the outage (from the kill
to the first turn served that started after it) and the turns that failed.

The two sides, interleaved (the side going first alternating): the application's pool checking
connections with memory's `check_alive` (it sweeps the idle connections the first time one is
dead), and with psycopg_pool's own `ConnectionPool.check_connection` (which meets the dead ones
one at a time, sleeping 1, 2, 4, 8 s between them). Memory's own pools use `check_alive` on
both sides. A fresh cluster each run.

    python bench/failover_bench.py [--runs 3] [--conversations 4] [--json PATH]
"""

from __future__ import annotations

import argparse
import itertools
import logging
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from pg_cluster import Cluster  # noqa: E402
from results import save  # noqa: E402

SIDES = ("check_alive", "check_connection")


def model() -> Any:
    """A reply per call, each a new message with an id of its own."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    count = itertools.count()

    class Replies(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "failover-bench"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Replies:
            return self

        def _generate(self, messages: Any, *a: Any, **k: Any) -> ChatResult:
            n = next(count)
            reply = AIMessage(f"noted {n}", id=f"ai-{n}")
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return Replies()


def one_run(side: str, conversations: int) -> dict[str, float]:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from langchain_mastra_memory import Memory, PostgresStorage
    from langchain_mastra_memory.storage.postgres.connections import check_alive

    with tempfile.TemporaryDirectory(prefix="lmm-failover-") as root:
        cluster = Cluster.start(Path(root) / "ha", {"standby1": {"sync": True}})
        dsn = cluster.dsn("primary", "standby1")
        check = check_alive if side == "check_alive" else ConnectionPool.check_connection
        pool = ConnectionPool(dsn, max_size=8, check=check, kwargs={
            "autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
            "connect_timeout": 3})  # fmt: skip
        saver = PostgresSaver(pool)
        saver.setup()
        memory = Memory(storage=PostgresStorage(dsn, connect_timeout=3, pool_timeout=60),
                        options={"semantic_recall": True})  # fmt: skip
        agent = create_agent(model(), middleware=[memory.middleware()], checkpointer=saver)
        acked: dict[int, int] = dict.fromkeys(range(conversations), 0)
        served: list[tuple[float, float]] = []  # (started, done) of acknowledged turns
        failed: list[float] = []
        killed: list[float] = []
        lock = threading.Lock()

        def conversation(c: int) -> None:
            config = {"configurable": {"thread_id": f"t{c}", "user_id": f"u{c}"}}
            deadline = time.monotonic() + 120
            for turn in itertools.count():
                after = [d for s, d in served if killed and s > killed[0]]
                if (killed and acked[c] >= 6 and len(after) >= conversations) or (
                    time.monotonic() > deadline
                ):
                    return
                started = time.monotonic()
                try:
                    message = HumanMessage(f"conversation {c}, turn {turn}")
                    agent.invoke({"messages": [message]}, config)
                    with lock:
                        acked[c] += 1
                        served.append((started, time.monotonic()))
                except Exception:
                    failed.append(time.monotonic())
                    time.sleep(0.1)

        workers = [threading.Thread(target=conversation, args=(c,)) for c in range(conversations)]
        for worker in workers:
            worker.start()
        while min(acked.values()) < 3:
            time.sleep(0.05)
        killed.append(time.monotonic())
        cluster.kill("primary")
        time.sleep(0.5)
        cluster.promote("standby1")
        for worker in workers:
            worker.join(180)
        memory.close(30)
        pool.close()
        cluster.close()
    first = min(d for s, d in served if s > killed[0])
    return {"outage_s": first - killed[0], "failed": float(len(failed))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the figures here (bench/results/failover.json: the "
                        "docs' plot, `plot_figures.py`)")  # fmt: skip
    args = parser.parse_args()
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)  # (each reconnect attempt warns)
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for n in range(args.runs):
        for side in SIDES if n % 2 == 0 else SIDES[::-1]:  # interleaved, the first alternating
            result = one_run(side, args.conversations)
            runs[side].append(result)
            print(f"run {n + 1} {side}: outage {result['outage_s']:.2f} s, "
                  f"{result['failed']:.0f} turns failed", flush=True)  # fmt: skip
    summary = {}
    for side in SIDES:
        outages = sorted(r["outage_s"] for r in runs[side])
        p95 = outages[min(len(outages) - 1, round(0.95 * (len(outages) - 1)))]
        summary[side] = {"p50_s": statistics.median(outages), "p95_s": p95,
                         "failed": [r["failed"] for r in runs[side]]}  # fmt: skip
        print(f"{side}: outage p50 {summary[side]['p50_s']:.2f} s, p95 {p95:.2f} s, failed "
              f"turns {summary[side]['failed']}")  # fmt: skip
    ratio = summary["check_connection"]["p50_s"] / summary["check_alive"]["p50_s"]
    print(f"psycopg's own check / check_alive, outage p50: {ratio:.1f}x")
    if args.json is not None:
        setting = (f"{args.conversations} conversations on threads, create_agent + "
                   "memory.middleware() over the app's PostgresSaver pool; the primary killed, "
                   "its synchronous standby promoted 0.5 s later")  # fmt: skip
        save("failover", {"setting": setting, "runs": runs, "summary": summary}, path=args.json)


if __name__ == "__main__":
    main()
