"""`memory.checkpointer()` on memory's own SQLite file: a turn's checkpoint and its new messages
are written in one transaction of the saver's connection (`integrations.checkpointer.saver_io`),
so the two never wait on each other's write lock, and commit or fail together."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from helpers import echo_graph
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from langchain_mastra_memory import Memory, SQLiteStorage

ALICE = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}


def transactions(conn: sqlite3.Connection) -> list[list[str]]:
    """Every transaction `conn` runs from now on, as the statements it executed (traced)."""
    runs: list[list[str]] = []

    def trace(statement: str) -> None:
        head = statement.strip().split("\n")[0]
        if head.startswith("BEGIN"):
            runs.append([])
        elif runs and head not in ("COMMIT", "ROLLBACK"):
            runs[-1].append(head)

    conn.set_trace_callback(trace)
    return runs


def contents(memory: Memory) -> list[str]:
    return [str(m.content) for m in memory.get_messages(thread_id="t1")]


def test_a_turn_writes_its_messages_and_its_checkpoint_in_one_transaction(
    tmp_path: Path, call
) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    checkpointer = memory.checkpointer()
    app = echo_graph(checkpointer)
    call(app, "invoke", {"messages": [HumanMessage("one")]}, ALICE)
    runs = transactions(checkpointer.saver.conn)
    call(app, "invoke", {"messages": [HumanMessage("two")]}, ALICE)
    together = [
        run
        for run in runs
        if any(s.startswith("INSERT INTO memory_messages") for s in run)
        and any(s.startswith("INSERT OR REPLACE INTO checkpoints") for s in run)
    ]
    assert len(together) == 2  # the question's checkpoint, then the answer's
    assert contents(memory) == ["one", "echo: one", "two", "echo: two"]
    assert [m.id for m in app.get_state(ALICE).values["messages"]] == [
        m.id for m in memory.get_messages(thread_id="t1")
    ]


def test_the_default_saver_commits_with_the_file_s_durability(tmp_path: Path) -> None:
    """Its commits carry memory's rows too: synced to disk as memory's own are (WAL,
    synchronous=NORMAL), not one fsync a commit (sqlite3's default, FULL)."""
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    saver_conn = memory.checkpointer().saver.conn
    memory_conn = sqlite3.connect(tmp_path / "m.db")
    assert memory_conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    normal = 1
    assert saver_conn.execute("PRAGMA synchronous").fetchone() == (normal,)
    assert memory.storage._conn.execute("PRAGMA synchronous").fetchone() == (normal,)
    memory_conn.close()


def test_a_saver_on_another_file_keeps_its_own_transactions(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    saver = SqliteSaver(sqlite3.connect(tmp_path / "cp.db", check_same_thread=False))
    app = echo_graph(memory.checkpointer(saver))
    runs = transactions(saver.conn)
    app.invoke({"messages": [HumanMessage("one")]}, ALICE)
    assert runs and not any("memory_messages" in s for run in runs for s in run)
    assert contents(memory) == ["one", "echo: one"]


def refuse(path: Path, table: str) -> None:
    """From now on, the file refuses new rows of `table` (as a full disk would)."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} "
            "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )


def accept(path: Path, table: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(f"DROP TRIGGER refuse_{table}")


def test_a_checkpoint_the_saver_refuses_leaves_memory_as_it_was(tmp_path: Path, call) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    app = echo_graph(memory.checkpointer())
    call(app, "invoke", {"messages": [HumanMessage("one")]}, ALICE)
    refuse(tmp_path / "m.db", "checkpoints")
    with pytest.raises(sqlite3.IntegrityError, match="disk full"):
        call(app, "invoke", {"messages": [HumanMessage("two")]}, ALICE)
    assert contents(memory) == ["one", "echo: one"]  # rolled back with the checkpoint
    accept(tmp_path / "m.db", "checkpoints")
    call(app, "invoke", {"messages": [HumanMessage("two")]}, ALICE)  # the retry
    assert contents(memory) == ["one", "echo: one", "two", "echo: two"]
    assert [m.id for m in app.get_state(ALICE).values["messages"]] == [
        m.id for m in memory.get_messages(thread_id="t1")
    ]


def test_messages_memory_refuses_warn_and_the_checkpoint_is_written(
    tmp_path: Path, call, caplog: pytest.LogCaptureFixture
) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    app = echo_graph(memory.checkpointer())
    call(app, "invoke", {"messages": [HumanMessage("one")]}, ALICE)
    refuse(tmp_path / "m.db", "memory_messages")
    with caplog.at_level(logging.WARNING):
        call(app, "invoke", {"messages": [HumanMessage("two")]}, ALICE)  # the run goes on
    assert "could not mirror a checkpoint" in caplog.text
    state = [str(m.content) for m in app.get_state(ALICE).values["messages"]]
    assert state == ["one", "echo: one", "two", "echo: two"]
    assert contents(memory) == ["one", "echo: one"]  # nothing half-written
    accept(tmp_path / "m.db", "memory_messages")
    call(app, "invoke", {"messages": [HumanMessage("three")]}, ALICE)  # catches up
    assert contents(memory) == [*state, "three", "echo: three"]


def test_what_follows_a_save_starts_after_the_commit(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options={"semantic_recall": True})
    app = echo_graph(memory.checkpointer())
    app.invoke({"messages": [HumanMessage("I moved to Lisbon in March.")]}, ALICE)
    assert memory.flush(timeout=60)
    assert memory.storage.unembedded(limit=10) == []  # embedded: the writer saw the rows
    page = memory.search_messages("Where did I move?", resource_id="alice")
    assert "Lisbon" in str(page.items[0].message.content)


def test_concurrent_turns_and_memory_writes_never_deadlock_or_lose_a_message(
    tmp_path: Path,
) -> None:
    """Graph runs on four threads at once (each put holding the saver's connection and the
    file's write lock) beside direct writes through memory's own connection."""
    import threading

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    app = echo_graph(memory.checkpointer())
    memory.create_thread(thread_id="notes", resource_id="alice")
    failures: list[BaseException] = []

    def converse(n: int) -> None:
        config = {"configurable": {"thread_id": f"t{n}", "resource_id": "alice"}}
        try:
            for turn in range(8):
                app.invoke({"messages": [HumanMessage(f"{n}.{turn}")]}, config)
        except BaseException as exc:  # reported below
            failures.append(exc)

    def note() -> None:
        try:
            for turn in range(20):
                memory.save_messages(
                    [HumanMessage(f"note {turn}")], thread_id="notes", resource_id="alice"
                )
        except BaseException as exc:
            failures.append(exc)

    workers = [threading.Thread(target=converse, args=(n,)) for n in range(4)]
    workers.append(threading.Thread(target=note))
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not failures and not any(w.is_alive() for w in workers)
    for n in range(4):
        config = {"configurable": {"thread_id": f"t{n}", "resource_id": "alice"}}
        state = [m.id for m in app.get_state(config).values["messages"]]
        assert len(state) == 16
        assert [m.id for m in memory.get_messages(thread_id=f"t{n}")] == state
    assert len(memory.get_messages(thread_id="notes")) == 20


async def test_an_awaited_read_or_write_of_the_checkpointer_is_one_trip_to_the_io_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the default saver every step is SQLite on memory's I/O threads: an awaited
    ``aget_tuple``, ``aput`` or ``aput_writes`` runs its whole algorithm in one trip there
    (not one a step), with the same result as the sync call."""
    from langchain_mastra_memory import pools

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    checkpointer = memory.checkpointer()
    app = echo_graph(checkpointer)
    await app.ainvoke({"messages": [HumanMessage("one")]}, ALICE)
    trips: list[str] = []
    real = pools.run_in

    async def counted(pool, func, *args, **kwargs):
        trips.append(getattr(func, "__name__", repr(func)))
        return await real(pool, func, *args, **kwargs)

    monkeypatch.setattr(pools, "run_in", counted)
    found = await checkpointer.aget_tuple(ALICE)
    assert trips == ["run_sync"]
    assert found is not None
    assert found.checkpoint["id"] == checkpointer.get_tuple(ALICE).checkpoint["id"]
    assert [m.content for m in found.checkpoint["channel_values"]["messages"]] == [
        "one",
        "echo: one",
    ]
    trips.clear()
    await app.ainvoke({"messages": [HumanMessage("two")]}, ALICE)
    assert trips and set(trips) == {"run_sync"}  # each put, write and read: one trip
    assert contents(memory) == ["one", "echo: one", "two", "echo: two"]
