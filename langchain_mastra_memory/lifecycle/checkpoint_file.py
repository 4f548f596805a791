"""Memory's own SQLite file as LangGraph's checkpoint store: the default saver on it (so the
CLI and a restarted app see one file), and a thread's checkpoints removed from it.

Examples:
    >>> from langchain_mastra_memory.storage import SQLiteStorage
    >>> type(default_saver(SQLiteStorage(":memory:"))).__name__  # no file: kept in memory
    'InMemorySaver'
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from ..storage.sqlite.backend import SYNCHRONOUS, SQLiteStorage

if TYPE_CHECKING:  # (LangGraph's checkpoint package loads when a saver is made, not with Memory)
    from langgraph.checkpoint.base import BaseCheckpointSaver


def default_saver(storage: Any) -> BaseCheckpointSaver:
    """A SQLite saver on `storage`'s database file, or an in-memory saver."""
    if isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(storage.path, timeout=storage.busy_timeout, check_same_thread=False)
        conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")  # the file's durability, as memory's
        saver = SqliteSaver(conn)  # (waits for the file's write lock as long as memory does)
        saver.setup()  # its tables now, not under a turn's concurrent reads of the same file
        return saver
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver()


def forget_in_file(storage: Any, thread_id: str) -> None:
    """The thread's checkpoints in a SQLite memory file, through LangGraph's own saver (whose
    tables are not created there when absent)."""
    if not isinstance(storage, SQLiteStorage) or storage.path == ":memory:":
        return
    conn = sqlite3.connect(storage.path, timeout=30, check_same_thread=False)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if {"checkpoints", "writes"} <= tables:
            from langgraph.checkpoint.sqlite import SqliteSaver

            SqliteSaver(conn).delete_thread(thread_id)
    finally:
        conn.close()
