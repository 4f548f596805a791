"""Benchmark: a thread's checkpoint bytes and put time, LangGraph's bare saver against
``memory.checkpointer()`` (each message once, `integrations.checkpointer.channel`).

1. Size by turn: a plain ``add_messages`` graph (``MessagesState``, one node replying),
   ~200-byte messages, one thread. SQLite: LangGraph's ``SqliteSaver`` on a file of its own
   against memory's file (its messages, checkpoints and lists together), each file's WAL
   folded in before it is measured. PostgreSQL: ``PostgresSaver`` in a schema of its own
   against memory's schema (``PostgresStorage``, its default saver), measured as the
   total size of each schema's tables and indexes. Both sides take the same turns,
   interleaved.
2. Put time as the thread grows: a state of N messages (100, 1,000, 10,000), then puts that
   each append a question and an answer, as a graph's loop does (read the latest checkpoint,
   put the next). Bare and wrapped alternate call by call; p50 and p95 of each; the
   wrapped saver is fresh for each size (nothing held from a run before).

    python bench/checkpoint_growth.py [--turns 300] [--every 50] [--puts 40]
        [--sizes 100 1000 10000] [--no-postgres] [--dsn postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from langchain_mastra_memory import Memory, PostgresStorage, SQLiteStorage

sys.path.insert(0, str(Path(__file__).parent))
from results import save

WORDS = random.Random(7).choices(
    "the a of to and in is it you that was for on are with as his they be at one have this "
    "from or had by hot word but what some we can out other were all there when up use your "
    "how said an each she which do their time if will way about many then them write would "
    "like so these her long make thing see him two has look more day could go come did number "
    "sound no most people my over know water than call first who may down side been now find"
    .split(), k=20_000)  # fmt: skip


def text(n: int) -> str:
    """~180 bytes of English-like words (varied: PostgreSQL compresses repeated text away)."""
    start = (n * 37) % (len(WORDS) - 40)
    return " ".join(WORDS[start : start + 40])[:180]


OPTIONS = {"semantic_recall": False, "last_messages": 10}


def one_node(checkpointer: Any) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node(
        "reply",
        lambda s: {"messages": [AIMessage(f"r{len(s['messages'])} {text(len(s['messages']))}")]},
    )
    graph.add_edge(START, "reply")
    return graph.compile(checkpointer=checkpointer)


def file_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return os.path.getsize(path)


def schema_size(dsn: str, schema: str) -> int:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
            (schema,),
        ).fetchone()
    return int(row[0])


def sizes_sqlite(turns: int, every: int) -> list[tuple[int, int, int]]:
    folder = Path(tempfile.mkdtemp(prefix="lmm-growth-"))
    bare = one_node(SqliteSaver(sqlite3.connect(folder / "bare.db", check_same_thread=False)))
    memory = Memory(storage=SQLiteStorage(folder / "memory.db"), options=OPTIONS)
    wrapped = one_node(memory.checkpointer())
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    rows = []
    for turn in range(1, turns + 1):
        message = {"messages": [HumanMessage(f"turn {turn} {text(turn)}")]}
        for app in (bare, wrapped) if turn % 2 else (wrapped, bare):
            app.invoke(message, config)
        if turn % every == 0:
            rows.append((turn, file_size(folder / "bare.db"), file_size(folder / "memory.db")))
    return rows


def sizes_postgres(dsn: str, turns: int, every: int) -> list[tuple[int, int, int]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    bare_schema, memory_schema = (f"growth_{n}_{uuid.uuid4().hex[:8]}" for n in "bm")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {bare_schema}")
    conn = psycopg.connect(
        dsn, autocommit=True, row_factory=dict_row, options=f"-c search_path={bare_schema}"
    )
    saver = PostgresSaver(conn)
    saver.setup()
    storage = PostgresStorage(dsn, schema=memory_schema)
    memory = Memory(storage=storage, options=OPTIONS)
    bare, wrapped = one_node(saver), one_node(memory.checkpointer())
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    rows = []
    try:
        for turn in range(1, turns + 1):
            message = {"messages": [HumanMessage(f"turn {turn} {text(turn)}")]}
            for app in (bare, wrapped) if turn % 2 else (wrapped, bare):
                app.invoke(message, config)
            if turn % every == 0:
                rows.append((turn, schema_size(dsn, bare_schema), schema_size(dsn, memory_schema)))
    finally:
        conn.close()
        storage.drop_schema()
        storage.close()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {bare_schema} CASCADE")
    return rows


def conversation(n: int, start: int = 0) -> list[Any]:
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"message {i} {text(i)}", id=f"m{i}")
        for i in range(start, start + n)
    ]


def put_times(size: int, puts: int, dsn: str | None = None) -> dict[str, list[float]]:
    """Seconds per put (and per read of the latest) at a state of `size` messages: SQLite,
    or with `dsn` PostgreSQL (`PostgresSaver` in a schema of its own against memory's)."""
    cleanup: list[Any] = []
    if dsn is None:
        folder = Path(tempfile.mkdtemp(prefix="lmm-puts-"))
        bare: Any = SqliteSaver(sqlite3.connect(folder / "bare.db", check_same_thread=False))
        memory = Memory(storage=SQLiteStorage(folder / "memory.db"), options=OPTIONS)
    else:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        schema = f"puts_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        conn = psycopg.connect(
            dsn, autocommit=True, row_factory=dict_row, options=f"-c search_path={schema}"
        )
        bare = PostgresSaver(conn)
        bare.setup()
        storage = PostgresStorage(dsn, schema=f"m{schema}")
        memory = Memory(storage=storage, options=OPTIONS)
        cleanup = [conn.close, storage.drop_schema, storage.close,
                   lambda: psycopg.connect(dsn, autocommit=True).execute(
                       f"DROP SCHEMA {schema} CASCADE")]  # fmt: skip
    wrapped = memory.checkpointer()
    savers = {"bare": bare, "wrapped": wrapped}
    configs: dict[str, Any] = {}
    state = conversation(size)
    for name, saver in savers.items():  # the thread so far, in one checkpoint
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"messages": state}
        checkpoint["channel_versions"] = {"messages": 1}
        config = {"configurable": {"thread_id": "t1", "checkpoint_ns": "", "resource_id": "a"}}
        configs[name] = saver.put(config, checkpoint, {"step": 0}, {"messages": 1})
        configs[name]["configurable"]["resource_id"] = "a"
    times: dict[str, list[float]] = {f"{n}_{op}": [] for n in savers for op in ("put", "get")}
    for i in range(puts):
        for name in ("bare", "wrapped") if i % 2 else ("wrapped", "bare"):
            saver = savers[name]
            start = time.perf_counter()
            latest = saver.get_tuple(configs[name])  # what the graph reads before its step
            times[f"{name}_get"].append(time.perf_counter() - start)
            messages = [*latest.checkpoint["channel_values"]["messages"],
                        *conversation(2, size + 2 * i)]  # fmt: skip
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"messages": messages}
            checkpoint["channel_versions"] = {"messages": i + 2}
            start = time.perf_counter()
            config = saver.put(configs[name], checkpoint, {"step": i + 1}, {"messages": i + 2})
            times[f"{name}_put"].append(time.perf_counter() - start)
            config["configurable"]["resource_id"] = "a"
            configs[name] = config
    for step in cleanup or [memory.storage.close]:
        step()
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def mb(size: int) -> str:
    return f"{size / 1e6:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--every", type=int, default=50)
    parser.add_argument("--puts", type=int, default=40)
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 10000])
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--dsn", default=os.environ.get("LMM_TEST_POSTGRES_DSN"))
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the figures here (bench/results/checkpoint_growth.json:"
                        " the docs' plot, `plot_figures.py`)")  # fmt: skip
    args = parser.parse_args()
    setting = f"one thread, a plain add_messages graph, {args.turns} turns of ~200-byte messages"
    record: dict[str, Any] = {"setting": setting, "bytes": {}, "puts_ms": {}}

    print(f"### Bytes by turn (one thread, {args.turns} turns)\n")
    tables = {"SQLite file": sizes_sqlite(args.turns, args.every)}
    dsn = None
    if not args.no_postgres:
        from langchain_mastra_memory.testing import throwaway_postgres

        dsn = args.dsn or throwaway_postgres()
        tables["PostgreSQL schema"] = sizes_postgres(dsn, args.turns, args.every)
    for where, rows in tables.items():
        print(f"{where}: MB, bare saver | memory.checkpointer() | ratio")
        print("| turn | bare | memory | bare / memory |\n|---|---|---|---|")
        for turn, bare, mine in rows:
            print(f"| {turn} | {mb(bare)} | {mb(mine)} | {bare / mine:.0f}x |")
        print()
        record["bytes"][where] = [{"turn": t, "bare": b, "memory": m} for t, b, m in rows]
    sides = {"SqliteSaver": None} | ({} if args.no_postgres else {"PostgresSaver": dsn})
    for saver, where in sides.items():
        print(f"### Put and read of the latest, ms ({saver}; p50 / p95)\n")
        print("| messages in the state | bare put | wrapped put | bare read | wrapped read |")
        print("|---|---|---|---|---|")
        for size in args.sizes:
            t = put_times(size, args.puts, where)
            cells = [
                f"{pct(t[key], 0.5):.2f} / {pct(t[key], 0.95):.2f}"
                for key in ("bare_put", "wrapped_put", "bare_get", "wrapped_get")
            ]
            print(f"| {size:,} | " + " | ".join(cells) + " |")
            record["puts_ms"].setdefault(saver, {})[str(size)] = {
                key: [pct(t[key], 0.5), pct(t[key], 0.95)]
                for key in ("bare_put", "wrapped_put", "bare_get", "wrapped_get")
            }
        print()
    if args.json is not None:
        save("checkpoint_growth", record, path=args.json)


if __name__ == "__main__":
    main()
