"""Benchmark: the scaled-out shape under load: 8 app processes x 4 conversations, one PostgreSQL.

Each process runs LangGraph's `create_react_agent` with a scripted model (it validates its
input as OpenAI and Anthropic do, and records what it was sent), memory's `pre_model_hook()`
(hybrid recall over the resource, working memory, last 20 messages) and
`memory.checkpointer(AsyncPostgresSaver)`, over one `PostgresStorage` + `PgVectorStore` in one
database. Its 4 conversations run concurrently (asyncio); each is one resource with two
threads: real chat text (LoCoMo) for the user, a secret word planted in the first turn and
written to working memory by a tool call, then asked for in the second thread.

The same agents without memory (bare `AsyncPostgresSaver`, no hook, no tool) run first, for
turns/s. Memory's overhead per turn is measured inside the turn: the hook's time, the
checkpointer's time minus the inner saver's, and the working-memory tool's time.

Afterwards, from the database: every message of every checkpointed state stored exactly once
in its resource (none lost, none duplicated), every model input free of other resources'
markers (cross-resource reads), every stored user/assistant message embedded with its
vectors present in pgvector, and how often the second thread knew the secret.

    python bench/load_bench.py [--processes 8] [--conversations 4] [--turns 12] [--dsn ...]

With ``--pooler``, the same memory runs go to PostgreSQL directly and through PgBouncer in
transaction pooling mode (Debian's ``pgbouncer``, started here in front of the server; the
application's saver opened with ``prepare_threshold=None``, as a pooler needs), interleaved
``--runs`` times, each side's turns/s and turn p50 / p95 printed with their ratio.

    python bench/load_bench.py --pooler [--runs 2]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import multiprocessing as mp
import os
import re
import statistics
import sys
import time
import uuid
import warnings
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import turns_and_questions

SCHEMA = "load_bench"
MARK = re.compile(r"\[conv (\d+-\d+)\]")
TURN: ContextVar[dict[str, float]] = ContextVar("TURN")


def scripted_model(seen: list[list[Any]], problems: list[str]):  # type: ignore[no-untyped-def]
    """A chat model replying by rule, recording every input and what a provider would refuse."""
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Scripted(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted-load"

        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Scripted:
            return self

        def _generate(self, messages: list[BaseMessage], *a: Any, **k: Any) -> ChatResult:
            from langchain_mastra_memory.provider_rules import provider_violations

            seen.append(list(messages))
            problems.extend(provider_violations(messages))
            last = messages[-1]
            text = str(last.content)
            mark = MARK.search(text)
            tag = f"[conv {mark.group(1)}]" if mark else ""
            if isinstance(last, HumanMessage) and "secret word is" in text:
                word = text.rsplit("secret word is ", 1)[1].split()[0]
                call = {
                    "name": "update_working_memory",
                    "args": {"memory": f"# User\n- Secret word: {word}"},
                    "id": f"wm-{mark.group(1) if mark else ''}-{len(seen)}",
                }
                reply = AIMessage("", tool_calls=[call])
            elif isinstance(last, ToolMessage):
                reply = AIMessage(f"Noted. {tag}")
            else:
                reply = AIMessage(f"I hear you: {text[:60]} {tag}")
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return Scripted()


def timed(function: Any, key: str) -> Any:
    """`function` (async) adding its time to the running turn's `key`."""

    @functools.wraps(function)  # the signature too: tools inject `config` by it
    async def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await function(*args, **kwargs)
        finally:
            turn = TURN.get(None)
            if turn is not None:
                turn[key] = turn.get(key, 0.0) + time.perf_counter() - started

    return run


async def conversations(
    process: int,
    count: int,
    turns: int,
    dsn: str,
    with_memory: bool,
    texts: list[str],
    run: str,
    pooled: bool = False,
) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage
    from langchain_core.runnables import RunnableConfig, RunnableLambda
    from langchain_core.tools import tool as tool_decorator
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.prebuilt import create_react_agent
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    from langchain_mastra_memory import Memory, PostgresStorage

    seen: list[list[Any]] = []
    problems: list[str] = []
    model = scripted_model(seen, problems)
    pool = AsyncConnectionPool(
        dsn,
        min_size=2,
        max_size=count + 1,
        open=False,
        # behind a pooler nothing may be prepared (the docs' advice for an app's own saver)
        kwargs={
            "autocommit": True,
            "prepare_threshold": None if pooled else 0,
            "row_factory": dict_row,
        },
    )
    await pool.open()
    saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
    memory = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if with_memory:
            memory = Memory(
                storage=PostgresStorage(dsn, schema=SCHEMA),
                options={
                    "last_messages": 20,
                    "semantic_recall": {"top_k": 3, "message_range": 1, "mode": "hybrid"},
                    "working_memory": {"enabled": True},
                },
            )
            for name in ("aput", "aput_writes", "aget_tuple"):  # the inner saver's own time
                setattr(saver, name, timed(getattr(saver, name), "inner"))
            checkpointer = memory.checkpointer(saver)
            for name in ("aput", "aput_writes", "aget_tuple"):
                setattr(checkpointer, name, timed(getattr(checkpointer, name), "checkpointer"))
            hook = memory.pre_model_hook()
            timed_hook = timed(hook.ainvoke, "hook")

            async def run_hook(state: Any, config: RunnableConfig) -> Any:
                return await timed_hook(state, config)

            tool = memory.working_memory_tool()
            tool.coroutine = timed(tool.coroutine, "tool")
            agent = create_react_agent(
                model, [tool], pre_model_hook=RunnableLambda(run_hook), checkpointer=checkpointer
            )
            # the embedder and tokenizer loaded before the clock starts
            await memory.acontext([HumanMessage("warm up")], thread_id="w", resource_id="w")
        else:  # the same graph: a tool of that name that keeps nothing

            @tool_decorator("update_working_memory")
            def update_working_memory(memory: str) -> str:
                """Keep notes about the user."""
                return "ok"

            agent = create_react_agent(model, [update_working_memory], checkpointer=saver)
    records: list[dict[str, float]] = []

    async def conversation(c: int) -> None:
        conv = f"{process}-{c}"
        resource = f"{'mem' if with_memory else 'bare'}-{run}-{conv}"
        word = f"zeph{process}x{c}q"
        offset = (process * count + c) * 97
        for turn in range(turns):
            thread = f"{resource}-{'a' if turn < turns // 2 else 'b'}"
            if turn == 0:
                text = f"Remember this: my secret word is {word} [conv {conv}]"
            elif turn == turns // 2:
                text = f"What is my secret word? [conv {conv}]"
            else:
                text = f"{texts[(offset + turn) % len(texts)]} [conv {conv}]"
            config = {"configurable": {"thread_id": thread, "resource_id": resource}}
            record: dict[str, float] = {}
            TURN.set(record)
            started = time.perf_counter()
            await agent.ainvoke({"messages": [HumanMessage(text)]}, config)
            record["turn"] = time.perf_counter() - started
            records.append(record)

    started = time.perf_counter()
    await asyncio.gather(*(conversation(c) for c in range(count)))
    elapsed = time.perf_counter() - started
    if memory is not None:
        await asyncio.to_thread(memory.flush, 120)
    await pool.close()
    crossed = 0
    for sent in seen:
        own = {MARK.search(str(m.content)) for m in sent if isinstance(m, HumanMessage)}
        marks = {m.group(1) for m in own if m}
        everything = " ".join(str(m.content) for m in sent)
        crossed += len({m for m in MARK.findall(everything)} - marks) > 0
    return {
        "records": records,
        "elapsed": elapsed,
        "problems": problems,
        "crossed": crossed,
        "inputs": len(seen),
        "knew": sum(
            any(f"zeph{process}x{c}q" in str(m.content) for m in sent[:-1])
            for sent in seen
            for c in range(count)
            if f"What is my secret word? [conv {process}-{c}]" == str(sent[-1].content)
        ),
    }


def worker(process: int, args: argparse.Namespace, with_memory: bool, barrier, out) -> None:  # type: ignore[no-untyped-def]
    """One app process: its conversations, run when all processes are ready."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    texts = [t for t, _ in turns_and_questions()[0]]
    barrier.wait()
    result = asyncio.run(
        conversations(
            process,
            args.conversations,
            args.turns,
            args.dsn,
            with_memory,
            texts,
            args.run,
            getattr(args, "pooled", False),
        )
    )
    out.put((process, result))


def run(args: argparse.Namespace, with_memory: bool) -> list[dict[str, Any]]:
    context = mp.get_context("spawn")
    barrier = context.Barrier(args.processes)
    out = context.Queue()
    workers = [
        context.Process(target=worker, args=(p, args, with_memory, barrier, out))
        for p in range(args.processes)
    ]
    for w in workers:
        w.start()
    results = [out.get()[1] for _ in workers]
    for w in workers:
        w.join()
    return results


def pct(values: list[float]) -> str:
    q = statistics.quantiles(values, n=20)
    return f"{statistics.median(values) * 1e3:.1f} / {q[18] * 1e3:.1f}"


def audit(dsn: str, run: str) -> dict[str, int]:
    """Lost / duplicated messages, unembedded messages and missing vectors, from the database."""
    import asyncio as aio

    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from langchain_mastra_memory import Memory, PostgresStorage

    storage = PostgresStorage(dsn, schema=SCHEMA)
    lost = duplicated = checked = 0

    with storage._transaction(write=False) as conn:
        threads = conn.execute(
            "SELECT id, resource_id FROM memory_threads WHERE resource_id LIKE %s",
            (f"mem-{run}-%",),
        ).fetchall()

    async def states() -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {}
        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            checkpointer = Memory(storage=storage).checkpointer(saver)  # (lists put back)
            for thread, owner in threads:
                ref = {"configurable": {"thread_id": thread, "resource_id": owner}}
                got = await checkpointer.aget_tuple(ref)
                if got is not None:
                    found[thread] = got.checkpoint["channel_values"].get("messages", [])
        return found

    for thread, messages in aio.run(states()).items():
        stored = storage.list_messages(thread)
        ids = [s.message.id for s in stored]
        for m in messages:
            checked += 1
            n = ids.count(m.id)
            lost += n == 0
            duplicated += n > 1
    missing_vectors = unembedded = 0
    with storage._transaction(write=False) as conn:
        rows = conn.execute(
            "SELECT id, embedded FROM memory_messages WHERE role IN ('user', 'assistant')"
            " AND resource_id LIKE %s AND length(text) > 0",
            (f"mem-{run}-%",),
        ).fetchall()
        table = conn.execute("SELECT table_name FROM memory_vector_indexes LIMIT 1").fetchone()
        vectored = (
            {r[0] for r in conn.execute(f"SELECT DISTINCT message_id FROM {table[0]}")}
            if table
            else set()
        )
    for message_id, embedded in rows:
        unembedded += not embedded
        missing_vectors += message_id not in vectored
    return {
        "checked": checked,
        "lost": lost,
        "duplicated": duplicated,
        "unembedded": unembedded,
        "missing_vectors": missing_vectors,
        "embeddable": len(rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--pooler", action="store_true", help="direct against PgBouncer")
    parser.add_argument("--runs", type=int, default=2, help="with --pooler: runs of each side")
    args = parser.parse_args()
    args.run = uuid.uuid4().hex[:6]  # LangGraph's checkpoint tables outlive the schema
    if args.dsn is None:
        from langchain_mastra_memory.testing import throwaway_postgres

        args.dsn = throwaway_postgres()
    from langchain_mastra_memory import PostgresStorage

    PostgresStorage(args.dsn, schema=SCHEMA).drop_schema()
    PostgresStorage(args.dsn, schema=SCHEMA).close()

    async def setup() -> None:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(args.dsn) as saver:
            await saver.setup()

    asyncio.run(setup())
    if args.pooler:
        compare_pooler(args)
        return
    print(
        f"{os.cpu_count()} cores; {args.processes} processes x {args.conversations} "
        f"conversations x {args.turns} turns",
        file=sys.stderr,
    )
    bare = run(args, with_memory=False)
    withm = run(args, with_memory=True)
    for name, results in (("bare", bare), ("memory", withm)):
        turns = sum(len(r["records"]) for r in results)
        wall = max(r["elapsed"] for r in results)
        times = [x["turn"] for r in results for x in r["records"]]
        print(
            f"{name}: {turns} turns in {wall:.1f} s = {turns / wall:.1f} turns/s; "
            f"turn p50/p95 {pct(times)} ms"
        )
    records = [x for r in withm for x in r["records"]]
    overhead = [
        x.get("hook", 0) + x.get("checkpointer", 0) - x.get("inner", 0) + x.get("tool", 0)
        for x in records
    ]
    print(f"memory's overhead per turn p50/p95: {pct(overhead)} ms")
    for key in ("hook", "checkpointer", "inner", "tool"):
        values = [x.get(key, 0.0) for x in records]
        print(f"  {key}: {pct(values)} ms")
    print(
        f"provider violations: {sum(len(r['problems']) for r in withm + bare)}; "
        f"model inputs with another conversation's marker: {sum(r['crossed'] for r in withm)} "
        f"of {sum(r['inputs'] for r in withm)}; second thread knew the secret: "
        f"{sum(r['knew'] for r in withm)} of {args.processes * args.conversations}"
    )
    print(audit(args.dsn, args.run))


def summary(results: list[dict[str, Any]]) -> tuple[float, list[float]]:
    """Turns/s over the slowest process's wall time, and every turn's time."""
    turns = sum(len(r["records"]) for r in results)
    wall = max(r["elapsed"] for r in results)
    return turns / wall, [x["turn"] for r in results for x in r["records"]]


def compare_pooler(args: argparse.Namespace) -> None:
    """Memory's runs direct and through PgBouncer (transaction pooling), interleaved."""
    import shutil
    import tempfile

    sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
    from pg_bouncer import Bouncer

    folder = Path(tempfile.mkdtemp(prefix="lmm-bench-pgbouncer-"))
    bouncer = Bouncer.start(folder, args.dsn, mode="transaction", ignore_options=True)
    sides = {
        "direct": argparse.Namespace(**{**vars(args), "pooled": False}),
        "pgbouncer": argparse.Namespace(**{**vars(args), "dsn": bouncer.dsn, "pooled": True}),
    }
    print(
        f"{os.cpu_count()} cores; {args.processes} processes x {args.conversations} "
        f"conversations x {args.turns} turns; direct against PgBouncer 1.18 (transaction "
        f"pooling), {args.runs} runs each, interleaved",
        file=sys.stderr,
    )
    rates: dict[str, list[float]] = {"direct": [], "pgbouncer": []}
    times: dict[str, list[float]] = {"direct": [], "pgbouncer": []}
    try:
        for n in range(args.runs):
            for side in ("direct", "pgbouncer") if n % 2 == 0 else ("pgbouncer", "direct"):
                sides[side].run = uuid.uuid4().hex[:6]
                rate, turn_times = summary(run(sides[side], with_memory=True))
                rates[side].append(rate)
                times[side] += turn_times
                found = audit(args.dsn, sides[side].run)
                print(f"run {n + 1} {side}: {rate:.1f} turns/s; turn p50/p95 {pct(turn_times)} ms; "
                      f"lost {found['lost']}, duplicated {found['duplicated']}, unembedded "
                      f"{found['unembedded']} of {found['embeddable']}")  # fmt: skip
    finally:
        bouncer.stop()
        shutil.rmtree(folder, ignore_errors=True)
    for side in ("direct", "pgbouncer"):
        print(f"{side}: {statistics.median(rates[side]):.1f} turns/s (median of runs); "
              f"turn p50/p95 {pct(times[side])} ms")  # fmt: skip
    ratio = statistics.median(rates["pgbouncer"]) / statistics.median(rates["direct"])
    p50 = statistics.median(times["pgbouncer"]) / statistics.median(times["direct"])
    print(f"pgbouncer / direct: {ratio:.2f}x the turns/s, {p50:.2f}x the turn p50")


if __name__ == "__main__":
    main()
