"""SQLite specifics: pragmas, migrations, foreign files, crash safety and concurrent writers."""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import (
    SchemaVersionError,
    SQLiteStorage,
    StorageError,
)
from langchain_mastra_memory.storage.sql.backend import SCHEMA_TABLE
from langchain_mastra_memory.storage.sqlite.backend import READ_MMAP
from langchain_mastra_memory.storage.sqlite.schema import MIGRATIONS


def test_file_uses_wal_and_foreign_keys(tmp_path: Path) -> None:
    storage = SQLiteStorage(tmp_path / "m.db")
    conn = storage._conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    assert storage.schema_version() == len(MIGRATIONS)


def test_readers_map_the_file_and_see_what_another_process_writes(tmp_path: Path) -> None:
    """Reads go through a memory map of the file (no copy per page); a write from another
    process that grows the file past what was mapped is read back whole."""
    storage = SQLiteStorage(tmp_path / "m.db")
    storage.create_thread(thread_id="t", resource_id="alice")
    storage.save_messages([HumanMessage("first")], thread_id="t", resource_id="alice")
    with storage._reader() as reader:
        assert reader.execute("PRAGMA mmap_size").fetchone()[0] == READ_MMAP
    assert [m.message.content for m in storage.list_messages("t")] == ["first"]
    other = mp.get_context("spawn").Process(target=_append_many, args=(tmp_path / "m.db",))
    other.start()
    other.join(120)
    assert other.exitcode == 0
    texts = [m.message.content for m in storage.list_messages("t")]
    assert texts[0] == "first" and len(texts) == 2001 and texts[-1] == "x1999 " + "y" * 500
    assert storage.search_text("x1999", resource_id="alice")


def _append_many(path: Path) -> None:
    other = SQLiteStorage(path)
    for start in range(0, 2000, 500):
        batch = [HumanMessage(f"x{i} " + "y" * 500) for i in range(start, start + 500)]
        other.save_messages(batch, thread_id="t", resource_id="alice")


def test_setup_twice_and_reopen_keep_data(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    storage = SQLiteStorage(path)
    storage.create_thread(thread_id="t1", resource_id="alice")
    storage.save_messages([HumanMessage("kept")], thread_id="t1", resource_id="alice")
    storage.setup()
    storage.close()
    again = SQLiteStorage(path)
    assert [s.message.content for s in again.list_messages("t1")] == ["kept"]


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    payload = b"these are my notes, not a database\n" * 200
    path.write_bytes(payload)
    with pytest.raises(StorageError, match=r"not a usable SQLite database|cannot be opened"):
        SQLiteStorage(path)
    assert path.read_bytes() == payload


def test_a_file_in_a_folder_that_does_not_exist_is_refused_by_name(tmp_path: Path) -> None:
    """Found by the state machine (issue 83): SQLite says only "unable to open database file",
    read as "cannot be opened as a SQLite database", as if the file were damaged."""
    with pytest.raises(StorageError, match=r"its folder .*missing.* does not exist"):
        SQLiteStorage(tmp_path / "missing" / "memory.db")
    assert not (tmp_path / "missing").exists()  # nothing made behind the caller's back


def test_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    storage = SQLiteStorage(path)
    storage.create_thread(thread_id="t1", resource_id="alice")
    storage.close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"UPDATE {SCHEMA_TABLE} SET version = ?", (len(MIGRATIONS) + 1,))
    with pytest.raises(SchemaVersionError, match="upgrade"):
        SQLiteStorage(path)
    with sqlite3.connect(path) as conn:  # nothing was changed
        assert conn.execute("SELECT id FROM memory_threads").fetchall() == [("t1",)]
        assert (
            conn.execute(f"SELECT version FROM {SCHEMA_TABLE}").fetchone()[0] == len(MIGRATIONS) + 1
        )


def _writer_then_crash(path: str, ack_path: str) -> None:  # runs in a child process
    storage = SQLiteStorage(path)
    with open(ack_path, "w") as acks:
        for i in range(50):
            storage.save_messages(
                [HumanMessage(f"m{i}", id=f"m{i}")], thread_id="t1", resource_id="alice"
            )
            acks.write(f"m{i}\n")  # written only after save_messages returned
            acks.flush()
    # die in the middle of a transaction, as a killed process would
    storage._conn.execute("BEGIN IMMEDIATE")
    storage._conn.execute(
        "INSERT INTO memory_messages (id, thread_id, resource_id, role, type, content, created_at) "
        "VALUES ('torn', 't1', 'alice', 'user', 'human', '{}', '9999')"
    )
    os._exit(1)


@pytest.mark.slow
def test_killed_writer_loses_nothing_that_was_acknowledged(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    SQLiteStorage(path).create_thread(thread_id="t1", resource_id="alice")
    ack_path = tmp_path / "acks.txt"
    child = mp.get_context("spawn").Process(target=_writer_then_crash, args=(path, str(ack_path)))
    child.start()
    child.join(120)
    assert child.exitcode == 1
    acknowledged = ack_path.read_text().split()
    assert len(acknowledged) == 50
    storage = SQLiteStorage(path)
    assert storage._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    ids = [s.message.id for s in storage.list_messages("t1")]
    assert ids == acknowledged  # every acknowledged save is there, the torn one is not


def _appender(path: str, worker: int, count: int) -> None:  # runs in a child process
    storage = SQLiteStorage(path)
    for i in range(count):
        storage.save_messages(
            [HumanMessage(f"w{worker}-{i}", id=f"w{worker}-{i}")],
            thread_id="t1",
            resource_id="alice",
        )


@pytest.mark.slow
def test_four_processes_append_to_one_thread(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    SQLiteStorage(path).create_thread(thread_id="t1", resource_id="alice")
    ctx = mp.get_context("spawn")
    per_worker = 60
    workers = [ctx.Process(target=_appender, args=(path, w, per_worker)) for w in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(180)
        assert w.exitcode == 0
    storage = SQLiteStorage(path)
    stored = storage.list_messages("t1")
    ids = [s.message.id for s in stored]
    assert len(ids) == len(set(ids)) == 4 * per_worker
    times = [s.created_at for s in stored]
    assert times == sorted(times) and len(set(times)) == len(times)  # strictly increasing
    for w in range(4):  # each writer's own messages keep their order
        mine = [i for i in ids if i.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{i}" for i in range(per_worker)]
    assert [s.message.id for s in storage.list_messages("t1")] == ids  # stable on re-read


def test_reads_go_on_beside_a_write_and_see_only_committed_data(tmp_path: Path) -> None:
    """A file's reads run on the reading thread's own connection: a write transaction held
    open in another thread does not block them, and they see what was committed before it;
    a read inside the write (same thread) sees the write's own rows."""
    import threading

    storage = SQLiteStorage(tmp_path / "m.db")
    storage.create_thread(thread_id="t1", resource_id="alice")
    storage.save_messages([HumanMessage("committed")], thread_id="t1", resource_id="alice")
    inside, release, seen = threading.Event(), threading.Event(), []

    def hold_a_write() -> None:
        with storage._transaction(write=True) as conn:
            conn.execute("UPDATE memory_threads SET title = 'uncommitted' WHERE id = 't1'")
            seen.append(storage.get_thread("t1").title)  # its own write, from inside
            inside.set()
            release.wait(10)

    writer = threading.Thread(target=hold_a_write)
    writer.start()
    assert inside.wait(10)
    try:  # the write is still open: these return without waiting for it
        assert [s.message.content for s in storage.list_messages("t1")] == ["committed"]
        assert storage.get_thread("t1").title is None
    finally:
        release.set()
        writer.join(10)
    assert seen == ["uncommitted"] and storage.get_thread("t1").title == "uncommitted"
    storage.close()
    with pytest.raises(StorageError):
        storage.get_thread("t1")  # every connection closed, readers included


def test_searches_go_on_while_another_connection_changes_the_schema(tmp_path: Path) -> None:
    """LangGraph's SqliteSaver creates its tables in memory's file on first use, possibly while
    a turn searches: FTS5 then fails to open its table ("vtable constructor failed") until the
    change commits. A search is run again then, never failed (this loop failed ~5% of its
    searches before)."""
    import threading

    storage = SQLiteStorage(tmp_path / "m.db")
    storage.create_thread(thread_id="t", resource_id="r")
    storage.save_messages([HumanMessage("my secret is 4242")], thread_id="t", resource_id="r")
    stop, errors, found = threading.Event(), [], []

    def search() -> None:
        while not stop.is_set():
            try:
                found.append(len(storage.search_text("secret 4242", resource_id="r")))
            except Exception as exc:  # collected: the assertion names them
                errors.append(exc)

    readers = [threading.Thread(target=search) for _ in range(2)]
    for reader in readers:
        reader.start()
    ddl = sqlite3.connect(tmp_path / "m.db")
    for i in range(40):
        ddl.executescript(
            f"CREATE TABLE a{i} (x); CREATE TABLE b{i} (y); CREATE INDEX i{i} ON b{i}(y);"
        )
    stop.set()
    for reader in readers:
        reader.join()
    ddl.close()
    storage.close()
    assert errors == [] and found and set(found) == {1}
