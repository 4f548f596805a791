"""Memory's own database as LangGraph's checkpoint store: the default saver on it (so the
CLI, a restarted app and a second process see one store: `SqliteSaver` on memory's SQLite
file, `PostgresSaver` on its PostgreSQL schema), and a thread's checkpoints removed from it.
Checkpoints are kept in RAM only beside a memory that is too (``:memory:``).

Examples:
    >>> from langchain_mastra_memory.storage import SQLiteStorage
    >>> type(default_saver(SQLiteStorage(":memory:"))).__name__  # no file: kept in memory
    'InMemorySaver'
"""

from __future__ import annotations

import logging
import sqlite3
import warnings
from typing import TYPE_CHECKING, Any

from ..errors import VolatileCheckpointsWarning
from ..storage.sqlite.backend import SYNCHRONOUS, SQLiteStorage

logger = logging.getLogger(__name__)

if TYPE_CHECKING:  # (LangGraph's checkpoint package loads when a saver is made, not with Memory)
    from langgraph.checkpoint.base import BaseCheckpointSaver


def default_saver(storage: Any) -> BaseCheckpointSaver[Any]:
    """A saver on `storage`'s own database: SQLite's file, PostgreSQL's schema; in memory
    only for a storage that is too (or one of a kind it cannot write to, with a warning)."""
    from ..storage.postgres.backend import PostgresStorage

    if isinstance(storage, PostgresStorage):
        from .checkpoint_postgres import postgres_saver

        return postgres_saver(storage)
    if isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(storage.path, timeout=storage.busy_timeout, check_same_thread=False)
        conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")  # the file's durability, as memory's
        saver = SqliteSaver(conn)  # (waits for the file's write lock as long as memory does)
        saver.setup()  # its tables now, not under a turn's concurrent reads of the same file
        return saver
    from langgraph.checkpoint.memory import InMemorySaver

    volatile = InMemorySaver()
    warn_if_volatile(storage, volatile)
    return volatile


def warn_if_volatile(storage: Any, saver: Any) -> None:
    """Warn when a persistent memory is paired with checkpoints kept in RAM: after a restart
    the graph's state is gone while memory still holds the thread (and a second process
    never sees it)."""
    from langgraph.checkpoint.memory import InMemorySaver

    if type(saver) is not InMemorySaver or (
        isinstance(storage, SQLiteStorage) and storage.path == ":memory:"
    ):
        return
    msg = (
        f"memory.checkpointer() over {storage!r} with InMemorySaver: the graph's checkpoints "
        "live in this process only (lost at a restart, unseen by other processes) while "
        "memory persists; pass a persistent saver, or none (memory's database is used)"
    )
    logger.warning(msg)
    warnings.warn(msg, VolatileCheckpointsWarning, stacklevel=4)


def forget_in_file(storage: Any, thread_id: str) -> None:
    """The thread's checkpoints in memory's database (its SQLite file, its PostgreSQL
    schema), through LangGraph's own saver (whose tables are not created when absent)."""
    from ..storage.postgres.backend import PostgresStorage

    if isinstance(storage, PostgresStorage):
        from .checkpoint_postgres import forget_in_postgres

        forget_in_postgres(storage, thread_id)
        return
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
