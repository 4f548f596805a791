"""Benchmark: MemoryCheckpointer against the bare saver it wraps (put and get_tuple; with
``--agent``, whole `create_react_agent` turns on a thread whose state holds N messages).

Medians over the calls (robust to GC pauses on a busy machine). A thread of `--turns`
turns is checkpointed; each checkpoint's ``messages`` channel holds the
whole conversation so far (as a graph's does), two messages longer than the last. The adapter
mirrors the new messages into memory (SQLite storage, semantic recall off). Ratios compare
the same saver class, wrapped and bare, in the same run.

    python bench/checkpointer_bench.py [--turns 500]
    python bench/checkpointer_bench.py --agent [100 1000 10000] [--agent-turns 30]
    python bench/checkpointer_bench.py --fresh 10
    python bench/checkpointer_bench.py --deep [100 1000] [--agent-turns 30]
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


# -- whole agent turns on a long thread ---------------------------------------------------------
REPLY = "ok"  # the scripted model's answer, every turn


def seeded(sides: dict, size: int, prefix: str = "") -> dict[str, dict]:
    """Each side's thread config, its state seeded once with `size` messages (mirrored once,
    not timed)."""
    configs = {
        name: {"configurable": {"thread_id": f"{prefix}{name}-{size}", "resource_id": "bench"}}
        for name in sides
    }
    seed = []
    for i in range(size // 2):
        seed += [HumanMessage(f"question {i} about the trip"), AIMessage(f"answer {i}")]
    for name, graph in sides.items():
        graph.update_state(configs[name], {"messages": [m.model_copy() for m in seed]})
    return configs


def cells(times: dict[str, list[float]]):
    """`cell(name)`: p50 / p95 in ms; `over(name, peer)`: p50 over the peer's."""

    def cell(name: str) -> str:
        q = statistics.quantiles(times[name], n=20)
        return f"{statistics.median(times[name]) * 1e3:.1f} / {q[18] * 1e3:.1f} ms"

    def over(name: str, peer: str) -> str:
        return f"{statistics.median(times[name]) / statistics.median(times[peer]) - 1:+.1%}"

    return cell, over


def agent(checkpointer, hook=None):
    """LangGraph's `create_react_agent` with a scripted model (one short reply per turn)."""
    import warnings

    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langgraph.prebuilt import create_react_agent

    model = FakeListChatModel(responses=[REPLY])  # a new message each turn (it cycles)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, [], checkpointer=checkpointer, pre_model_hook=hook)


def agent_turns(sizes: list[int], turns: int, directory: Path) -> None:
    """Per-turn latency of the same agent on a thread whose state holds N messages.

    Two comparisons, each against the peer a LangGraph user would otherwise run:
    - the adapter: `memory.checkpointer()` (a `SqliteSaver` on memory's own file: one
      transaction a put) and `memory.checkpointer(SqliteSaver(another file))` (two
      transactions, side by side) against the bare `SqliteSaver` (sqlite3's defaults: a
      rollback journal, an fsync a commit), and against a bare `SqliteSaver` tuned as memory's
      file is (WAL, synchronous=NORMAL: what the adapter's own work costs);
    - the hook: `memory.checkpointer(...)` + `memory.pre_model_hook()` against the bare saver
      with LangGraph's documented pre-model hook, `trim_messages` to the same last 40 messages
      (a hook is a graph step: one more checkpoint a turn, whoever writes it); with semantic
      recall on too: once with the turn's texts embedded before it (the question, which is also
      the query, and the reply: the embedding cache answers inside the turn, so no model runs
      in it), once as it runs (the question embedded in the turn, the search waiting for it;
      with a scripted model that answers at once this competes for the cores, a real model's
      latency hides most of it). An embedding's own time (MiniLM, one text) is reported apart.
    Turns rotate over the sides (each side first in turn); a collection runs before each timed
    turn, and memory's embedding backlog is drained after each recall turn (not timed, so it
    never runs into another side's turn); p50 / p95 over `turns` turns.
    """
    import gc

    print(
        "| state messages | bare SqliteSaver p50 / p95 | + memory.checkpointer() p50 / p95 "
        "| overhead p50 | bare SqliteSaver, WAL + NORMAL p50 / p95: adapter's overhead p50 "
        "| its SqliteSaver on another file: overhead p50 "
        "| trim_messages hook p50 / p95 | + memory hook p50 / p95 | overhead p50 "
        "| + recall, excl. embedding p50 / p95 | overhead p50 | an embedding p50 "
        "| + recall, embedding in the turn p50 / p95: overhead p50 |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        memory = Memory(storage=SQLiteStorage(directory / f"agent-{size}.db"))
        apart = Memory(storage=SQLiteStorage(directory / f"apart-{size}.db"))
        recalling = Memory(
            storage=SQLiteStorage(directory / f"recall-{size}.db"),
            options={"semantic_recall": True},
        )
        behind = Memory(
            storage=SQLiteStorage(directory / f"behind-{size}.db"),
            options={"semantic_recall": True},
        )
        recallers = {"recall": recalling, "behind": behind}
        sides = {
            "bare": agent(make_saver("SqliteSaver", directory, f"bare-{size}")),
            "adapter": agent(memory.checkpointer()),  # SqliteSaver on memory's file
            "tuned": agent(make_saver("SqliteSaver-WAL", directory, f"tuned-{size}")),
            "apart": agent(apart.checkpointer(make_saver("SqliteSaver", directory, f"w-{size}"))),
            "trim": agent(make_saver("SqliteSaver", directory, f"t-{size}"), trim_hook),
            "hook": agent(memory.checkpointer(), memory.pre_model_hook()),
            "recall": agent(recalling.checkpointer(), recalling.pre_model_hook()),
            "behind": agent(behind.checkpointer(), behind.pre_model_hook()),
        }
        configs = seeded(sides, size)
        for recaller in recallers.values():  # the seed embedded before any timed turn
            recaller.flush()
        times: dict[str, list[float]] = {name: [] for name in sides}
        embedded: list[float] = []
        names = list(sides)
        for turn in range(turns):
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                gc.collect()
                question = f"turn {turn} of {size} ({name})"
                if name == "recall":  # its texts embedded (and cached) before the turn
                    start = time.perf_counter()
                    recalling.embedder.embed_documents([question])
                    embedded.append(time.perf_counter() - start)
                    recalling.embedder.embed_documents([REPLY])
                start = time.perf_counter()
                sides[name].invoke({"messages": [HumanMessage(question)]}, configs[name])
                times[name].append(time.perf_counter() - start)
                if name in recallers:  # not timed, and not into the next side's turn
                    recallers[name].flush()

        cell, over = cells(times)
        print(
            f"| {size:,} | {cell('bare')} | {cell('adapter')} | {over('adapter', 'bare')} "
            f"| {cell('tuned')}: {over('adapter', 'tuned')} | {over('apart', 'bare')} "
            f"| {cell('trim')} | {cell('hook')} | {over('hook', 'trim')} "
            f"| {cell('recall')} | {over('recall', 'trim')} "
            f"| {statistics.median(embedded) * 1e3:.1f} ms "
            f"| {cell('behind')}: {over('behind', 'trim')} |",
            flush=True,
        )


def deep_turns(sizes: list[int], turns: int, directory: Path) -> None:
    """Per-turn latency of a deep agent (``deepagents.create_deep_agent``: ``messages`` in a
    ``DeltaChannel``, a snapshot every 50 updates) on a thread whose state holds N messages:
    `memory.checkpointer()` against the bare `SqliteSaver` and against one tuned as memory's
    file (WAL, synchronous=NORMAL). Sides rotate, a collection before each timed turn; p50 /
    p95 over `turns` turns."""
    import gc
    import warnings

    from deepagents import create_deep_agent
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    class Model(FakeListChatModel):  # a new message (and id) each turn
        def bind_tools(self, tools, **kwargs):
            return self

    def deep(checkpointer):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = Model(responses=[REPLY])
            return create_deep_agent(
                model, tools=[], system_prompt="Be brief.", checkpointer=checkpointer
            )

    print("| state messages | bare SqliteSaver p50 / p95 | + memory.checkpointer() p50 / p95 "
          "| overhead p50 | bare, WAL + NORMAL p50 / p95 | adapter's overhead p50 |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        memory = Memory(storage=SQLiteStorage(directory / f"deep-{size}.db"))
        sides = {
            "bare": deep(make_saver("SqliteSaver", directory, f"deep-bare-{size}")),
            "adapter": deep(memory.checkpointer()),
            "tuned": deep(make_saver("SqliteSaver-WAL", directory, f"deep-tuned-{size}")),
        }
        configs = seeded(sides, size, "deep-")
        times: dict[str, list[float]] = {name: [] for name in sides}
        names = list(sides)
        for turn in range(turns):
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                gc.collect()
                start = time.perf_counter()
                sides[name].invoke({"messages": [HumanMessage(f"turn {turn}")]}, configs[name])
                times[name].append(time.perf_counter() - start)
        kept = len(memory.get_messages(thread_id=f"deep-adapter-{size}"))
        assert kept == size + 2 * turns, kept  # every message once

        cell, over = cells(times)
        print(f"| {size:,} | {cell('bare')} | {cell('adapter')} | {over('adapter', 'bare')} "
              f"| {cell('tuned')} | {over('adapter', 'tuned')} |", flush=True)  # fmt: skip


def fresh_threads(rounds: int, directory: Path, turns: int = 20, size: int = 100) -> None:
    """The adapter alone in a lean process: four graphs (the bare `SqliteSaver`, the same
    tuned as memory's file is: WAL, synchronous=NORMAL, `memory.checkpointer()` on memory's
    file, and memory with its `SqliteSaver` on another file), each round a fresh thread seeded
    with `size` messages, `turns` turns on it; sides rotate turn by turn, a collection before
    each; p50 wall time and process CPU a turn, against each bare saver."""
    import gc

    memory = Memory(storage=SQLiteStorage(directory / "fresh.db"))
    apart = Memory(storage=SQLiteStorage(directory / "fresh-apart.db"))
    sides = {
        "bare SqliteSaver": agent(make_saver("SqliteSaver", directory, "fresh-bare")),
        "bare SqliteSaver, WAL + NORMAL": agent(
            make_saver("SqliteSaver-WAL", directory, "fresh-tuned")
        ),
        "memory.checkpointer()": agent(memory.checkpointer()),
        "its saver on another file": agent(
            apart.checkpointer(make_saver("SqliteSaver", directory, "fresh-w"))
        ),
    }
    seed = []
    for i in range(size // 2):
        seed += [HumanMessage(f"question {i} about the trip"), AIMessage(f"answer {i}")]
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for round_ in range(rounds):
        configs = {
            name: {"configurable": {"thread_id": f"{n}-{round_}", "resource_id": "bench"}}
            for n, name in enumerate(names)
        }
        for name, graph in sides.items():
            graph.update_state(configs[name], {"messages": [m.model_copy() for m in seed]})
        for turn in range(turns):
            k = round_ * turns + turn
            for name in names[k % len(names) :] + names[: k % len(names)]:
                gc.collect()
                started, spent = time.perf_counter(), time.process_time()
                sides[name].invoke({"messages": [HumanMessage(f"turn {turn}")]}, configs[name])
                wall[name].append(time.perf_counter() - started)
                cpu[name].append(time.process_time() - spent)
    print(
        "| side | p50 a turn | overhead | vs the tuned bare saver | process CPU p50 "
        "| overhead | vs the tuned bare saver |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    wall_p50 = {name: statistics.median(wall[name]) for name in names}
    cpu_p50 = {name: statistics.median(cpu[name]) for name in names}
    bare, tuned = names[0], names[1]
    for name in names:
        w, c = wall_p50[name], cpu_p50[name]
        print(
            f"| {name} | {w * 1e3:.2f} ms "
            f"| {w / wall_p50[bare] - 1:+.1%} ({(w - wall_p50[bare]) * 1e3:+.2f} ms) "
            f"| {w / wall_p50[tuned] - 1:+.1%} ({(w - wall_p50[tuned]) * 1e3:+.2f} ms) "
            f"| {c * 1e3:.2f} ms | {(c - cpu_p50[bare]) * 1e3:+.2f} ms "
            f"| {(c - cpu_p50[tuned]) * 1e3:+.2f} ms |"
        )


def trim_hook(state: dict) -> dict:
    """LangGraph's documented pre-model hook: the last 40 messages, starting on a human one."""
    from langchain_core.messages.utils import trim_messages

    kept = trim_messages(
        state["messages"], strategy="last", token_counter=len, max_tokens=40, start_on="human"
    )
    return {"llm_input_messages": kept}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument(
        "--postgres", metavar="DSN", help="also measure PostgresSaver on this server"
    )
    parser.add_argument(
        "--agent", type=int, nargs="*", metavar="N", default=None,
        help="measure whole agent turns on threads of N messages (default 100 1000 10000)",
    )  # fmt: skip
    parser.add_argument("--agent-turns", type=int, default=30)
    parser.add_argument(
        "--deep", type=int, nargs="*", metavar="N", default=None,
        help="measure deep-agent turns (messages in a DeltaChannel) on threads of N messages",
    )  # fmt: skip
    parser.add_argument(
        "--fresh", type=int, metavar="ROUNDS", default=None,
        help="the adapter alone, lean: ROUNDS fresh 100-message threads of 20 turns each",
    )  # fmt: skip
    args = parser.parse_args()
    if args.fresh is not None:
        with tempfile.TemporaryDirectory() as tmp:
            fresh_threads(args.fresh, Path(tmp))
        return
    if args.deep is not None:
        with tempfile.TemporaryDirectory() as tmp:
            deep_turns(args.deep or [100, 1_000], args.agent_turns, Path(tmp))
        return
    if args.agent is not None:
        with tempfile.TemporaryDirectory() as tmp:
            agent_turns(args.agent or [100, 1_000, 10_000], args.agent_turns, Path(tmp))
        return
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
    conn = sqlite3.connect(directory / f"{tag}.db", check_same_thread=False)
    if name == "SqliteSaver-WAL":  # tuned as memory's own file is
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    return SqliteSaver(conn)


if __name__ == "__main__":
    main()
