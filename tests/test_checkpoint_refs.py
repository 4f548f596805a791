"""Each message once in the checkpoints (`integrations.checkpointer.channel`).

The same graph runs the same script twice: on a bare LangGraph saver, and on memory's
checkpointer around another saver of that kind. Every checkpoint either lists (root and
subgraph, in order) must hold the same state: turns, ``RemoveMessage``, an edit by id, a
compaction, ``update_state``, time travel and a fork from an older checkpoint, a subgraph.
Meanwhile the wrapped saver holds references only, and memory each value once.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import make_storage
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, message_to_dict
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.errors import StorageError
from langchain_mastra_memory.integrations.checkpointer.channel import referenced_at

pytestmark = pytest.mark.filterwarnings(
    "ignore::langchain_mastra_memory.errors.VolatileCheckpointsWarning"
)

TEXT = "x" * 150


def graph(checkpointer: Any) -> Any:
    """Replies once per turn (ids named by the turn, so two runs agree), through a subgraph
    that writes a note of its own."""
    inner = StateGraph(MessagesState)
    inner.add_node(
        "note", lambda s: {"messages": [AIMessage(f"note {len(s['messages'])}",
                                                  id=f"n{len(s['messages'])}")]}
    )  # fmt: skip
    inner.add_edge(START, "note")
    outer = StateGraph(MessagesState)
    outer.add_node("inner", inner.compile())
    outer.add_node(
        "reply",
        lambda s: {"messages": [AIMessage(f"reply {len(s['messages'])} {TEXT}",
                                          id=f"a{len(s['messages'])}")]},
    )  # fmt: skip
    outer.add_edge(START, "inner")
    outer.add_edge("inner", "reply")
    return outer.compile(checkpointer=checkpointer)


def script(app: Any, mode: str, thread: str = "t1") -> None:
    """Turns, a removal, an edit by id, time travel with a fork, a compaction."""
    config = {"configurable": {"thread_id": thread, "resource_id": "alice"}}

    def run(method: str, *args: Any, **kwargs: Any) -> Any:
        if mode == "async":
            return asyncio.run(getattr(app, "a" + method)(*args, **kwargs))
        return getattr(app, method)(*args, **kwargs)

    for i in range(4):
        run("invoke", {"messages": [HumanMessage(f"turn {i} {TEXT}", id=f"u{i}")]}, config)
    run("update_state", config, {"messages": [RemoveMessage(id="u1")]})
    run("update_state", config, {"messages": [AIMessage("edited", id="a2")]})
    history = list(app.get_state_history(config))
    earlier = history[len(history) // 2].config  # time travel: a fork from the middle
    fork = {"configurable": {**earlier["configurable"], "resource_id": "alice"}}
    run("invoke", {"messages": [HumanMessage("on the fork", id="f1")]}, fork)
    run("update_state", config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES),
                                              AIMessage("summary", id="s1")]})  # fmt: skip
    run("invoke", {"messages": [HumanMessage("after the summary", id="u9")]}, config)


def checkpoints(saver: Any, thread: str = "t1") -> list[tuple]:
    """Every checkpoint of the thread (every namespace) as comparable data, newest first."""
    rows = []
    for item in saver.list({"configurable": {"thread_id": thread, "resource_id": "alice"}}):
        values = dict(item.checkpoint["channel_values"])
        messages = values.pop("messages", None)
        rows.append((
            item.config["configurable"].get("checkpoint_ns", "").split(":")[0],
            item.metadata.get("source"), item.metadata.get("step"),
            None if messages is None else [message_to_dict(m) for m in messages],
            sorted(values),
        ))  # fmt: skip
    return rows


def raw_lists(saver: Any, thread: str = "t1") -> list[Any]:
    """The ``messages`` values the saver itself holds."""
    return [
        item.checkpoint["channel_values"].get("messages")
        for item in saver.list({"configurable": {"thread_id": thread}})
        if "messages" in item.checkpoint["channel_values"]
    ]


def savers(kind: str, tmp_path: Path, dsn: str | None) -> tuple[Any, Memory, Any]:
    """(a bare saver, a memory, the saver memory's checkpointer wraps) of one kind."""
    if kind == "InMemorySaver":
        return InMemorySaver(), Memory(storage=SQLiteStorage(tmp_path / "m.db")), InMemorySaver()
    if kind == "SqliteSaver":
        bare = SqliteSaver(sqlite3.connect(tmp_path / "bare.db", check_same_thread=False))
        return bare, Memory(storage=SQLiteStorage(tmp_path / "m.db")), None  # memory's file
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    storage = make_storage("postgres", tmp_path)  # a schema of its own
    bare = PostgresSaver(Connection.connect(dsn, autocommit=True, row_factory=dict_row))
    bare.setup()  # (the server's default schema; the test's thread id is its own)
    return bare, Memory(storage=storage), None  # PostgresSaver in memory's schema


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["InMemorySaver", "SqliteSaver"])
def test_every_checkpoint_reads_as_the_bare_savers(kind: str, mode: str, tmp_path: Path) -> None:
    bare, memory, inner = savers(kind, tmp_path, None)
    wrapped = memory.checkpointer(inner)
    script(graph(bare), "sync")
    script(graph(wrapped), mode)
    expected, got = checkpoints(bare), checkpoints(wrapped)
    assert len(got) == len(expected) > 30
    assert got == expected
    raw = raw_lists(wrapped.saver)
    assert raw and all(referenced_at(value) is not None for value in raw)  # no list repeated
    with memory.storage._transaction(write=False) as conn:
        count = conn.execute("SELECT count(*) FROM memory_checkpoint_values").fetchone()[0]
    values = {(m["type"], str(m["data"])) for row in expected if row[3] for m in row[3]}
    assert count == len(values)  # each distinct value (an edit is a new one) stored once


@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_every_checkpoint_reads_as_the_bare_savers_on_postgres(mode: str, tmp_path: Path) -> None:
    bare, memory, inner = savers("PostgresSaver", tmp_path, os.environ["LMM_TEST_POSTGRES_DSN"])
    wrapped = memory.checkpointer(inner)
    thread = f"t-{uuid.uuid4().hex}"
    try:
        script(graph(bare), "sync", thread=thread)
        script(graph(wrapped), mode, thread=thread)
        expected = checkpoints(bare, thread)
        assert len(expected) > 30 and checkpoints(wrapped, thread) == expected
        raw = raw_lists(wrapped.saver, thread)
        assert raw and all(referenced_at(v) is not None for v in raw)
    finally:
        bare.delete_thread(thread)
        memory.storage.drop_schema()


def test_a_second_process_and_a_restart_read_the_same(tmp_path: Path) -> None:
    app = graph(Memory(storage=SQLiteStorage(tmp_path / "m.db")).checkpointer())
    script(app, "sync")
    first = checkpoints(app.checkpointer)
    again = Memory(storage=SQLiteStorage(tmp_path / "m.db")).checkpointer()
    assert checkpoints(again) == first
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    graph(again).invoke({"messages": [HumanMessage("from the other process", id="o1")]}, config)
    latest = graph(again).get_state(config).values["messages"]
    n = len(latest)
    assert [m.id for m in latest][-3:] == ["o1", f"n{n - 2}", f"a{n - 1}"]
    assert graph(app.checkpointer).get_state(config).values["messages"] == latest


def test_whole_lists_of_earlier_releases_still_read_and_a_thread_mixes_both(
    tmp_path: Path,
) -> None:
    bare = SqliteSaver(sqlite3.connect(tmp_path / "bare.db", check_same_thread=False))
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    old = graph(memory.checkpointer(reference_messages=False))  # as earlier releases wrote
    for i in range(3):
        graph(bare).invoke({"messages": [HumanMessage(f"q{i}", id=f"u{i}")]}, config)
        old.invoke({"messages": [HumanMessage(f"q{i}", id=f"u{i}")]}, config)
    assert all(isinstance(v, list) for v in raw_lists(old.checkpointer.saver))
    new = graph(memory.checkpointer())
    for i in range(3, 5):
        graph(bare).invoke({"messages": [HumanMessage(f"q{i}", id=f"u{i}")]}, config)
        new.invoke({"messages": [HumanMessage(f"q{i}", id=f"u{i}")]}, config)
    raw = raw_lists(new.checkpointer.saver)
    assert any(isinstance(v, list) for v in raw) and any(isinstance(v, dict) for v in raw)
    assert checkpoints(new.checkpointer) == checkpoints(bare)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_write_back_leaves_the_saver_s_own_format(mode: str, tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    checkpointer = memory.checkpointer()
    script(graph(checkpointer), "sync")
    before = checkpoints(checkpointer)
    elsewhere = InMemorySaver()  # leaving the package: LangGraph's saver alone reads it
    if mode == "async":
        count = asyncio.run(checkpointer.awrite_back("t1", saver=elsewhere))
    else:
        count = checkpointer.write_back("t1", saver=elsewhere)
    assert count == len(before)
    as_set = lambda rows: sorted(map(repr, rows))  # noqa: E731 (savers order namespaces apart)
    assert as_set(checkpoints(elsewhere)) == as_set(before)
    assert all(isinstance(v, list) for v in raw_lists(elsewhere))
    # in place: the wrapped saver holds whole lists again, and memory's lists are gone
    if mode == "async":
        asyncio.run(checkpointer.awrite_back("t1"))
    else:
        checkpointer.write_back("t1")
    assert all(isinstance(v, list) for v in raw_lists(checkpointer.saver))
    assert checkpoints(checkpointer) == before
    with memory.storage._transaction(write=False) as conn:
        assert conn.execute("SELECT count(*) FROM memory_checkpoint_lists").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM memory_checkpoint_values").fetchone()[0] == 0
    script(graph(checkpointer), "sync", thread="t2")  # the thread goes on as before


def test_300_turns_take_a_tenth_of_the_bare_savers_file(tmp_path: Path) -> None:
    """The issue's measure: a plain ``add_messages`` graph, ~200-byte messages, one thread."""

    def one_node(checkpointer: Any) -> Any:
        g = StateGraph(MessagesState)
        g.add_node("reply", lambda s: {"messages": [AIMessage(f"r{len(s['messages'])} {TEXT}")]})
        g.add_edge(START, "reply")
        return g.compile(checkpointer=checkpointer)

    bare = one_node(SqliteSaver(sqlite3.connect(tmp_path / "bare.db", check_same_thread=False)))
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    wrapped = one_node(memory.checkpointer())
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    for i in range(300):
        turn = {"messages": [HumanMessage(f"turn {i} {TEXT}")]}
        bare.invoke(turn, config)
        wrapped.invoke(turn, config)
    memory.flush(60)
    sizes = {}
    for name in ("bare.db", "m.db"):
        conn = sqlite3.connect(tmp_path / name)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        sizes[name] = os.path.getsize(tmp_path / name)
    assert sizes["m.db"] <= 10_000_000 < 50_000_000 < sizes["bare.db"]
    assert len(wrapped.get_state(config).values["messages"]) == 600


def test_a_list_memory_no_longer_holds_is_a_clear_error(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    app = graph(memory.checkpointer())
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    app.invoke({"messages": [HumanMessage("hi", id="u0")]}, config)
    with memory.storage._transaction(write=True) as conn:
        conn.execute("DELETE FROM memory_checkpoint_lists")
    fresh = Memory(storage=SQLiteStorage(tmp_path / "m.db")).checkpointer()
    with pytest.raises(StorageError, match=r"t1.*no longer holds"):
        fresh.get_tuple(config)


def test_deleting_the_thread_deletes_its_lists_and_a_copy_keeps_its_own(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    checkpointer = memory.checkpointer()
    script(graph(checkpointer), "sync")
    before = checkpoints(checkpointer)
    checkpointer.copy_thread("t1", "t1-copy")
    memory.delete_thread("t1")
    assert checkpoints(checkpointer, "t1-copy") == before
    with memory.storage._transaction(write=False) as conn:
        left = conn.execute(
            "SELECT count(*) FROM memory_checkpoint_lists WHERE thread_id = 't1'"
        ).fetchone()[0]
    assert left == 0
