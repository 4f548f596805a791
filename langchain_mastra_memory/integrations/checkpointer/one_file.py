"""A turn's checkpoint and its new messages in one SQLite transaction, when the wrapped saver
is LangGraph's `SqliteSaver` on memory's own file (what `memory.checkpointer()` makes there).

Two connections writing one file take turns at its write lock: with the new messages saved
beside the checkpoint, one of them waits in SQLite's busy handler (a sleep of a millisecond
or more) on most puts, and each pays its own commit. Here the saver's connection writes both:
``BEGIN IMMEDIATE``, the messages (memory's own SQL, on that connection), then the saver's own
``put``, whose commit commits both. A memory failure is rolled back and warned about, and
the checkpoint is written alone (the next checkpoint catches up, as everywhere); a
saver failure rolls back both, so memory is left as it was. What follows a save (embedding,
titles, observations) starts once the transaction has committed.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint

from ...conversation.mirroring import MirrorPlan, ThreadMirror
from ...errors import MastraMemoryError
from ...pools import in_io_pool
from ...storage.records import StoredMessage
from ...storage.sqlite.backend import SQLiteStorage
from ...twins import run_sync

if TYPE_CHECKING:
    from ...memory import Memory


class OneFileWrites:
    """Writes a put's checkpoint and the new turns it mirrors in one transaction of the
    saver's connection (`of` says whether the saver and memory share a file)."""

    def __init__(self, saver: Any, memory: Memory) -> None:
        self.saver = saver
        self.storage: SQLiteStorage = memory.storage  # type: ignore[assignment]
        self.writes = memory.writes
        if not isinstance(saver.lock, type(threading.RLock())):  # its put runs inside ours
            saver.lock = threading.RLock()

    @classmethod
    def of(cls, saver: BaseCheckpointSaver[Any], memory: Memory) -> OneFileWrites | None:
        """The writer for a `SqliteSaver` (its own ``put``) on memory's SQLite file; None for
        any other saver or file (their writes stay two, run side by side)."""
        from langgraph.checkpoint.sqlite import SqliteSaver

        storage = memory.storage
        if not isinstance(storage, SQLiteStorage) or storage.path == ":memory:":
            return None
        if not isinstance(saver, SqliteSaver) or type(saver).put is not SqliteSaver.put:
            return None
        conn = getattr(saver, "conn", None)
        if not isinstance(conn, sqlite3.Connection):
            return None
        legacy = getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)  # (Python 3.12+)
        if getattr(conn, "autocommit", legacy) != legacy:  # its commit() would not end ours
            return None
        try:
            with saver.lock:
                files = conn.execute("PRAGMA database_list").fetchall()
            main = next((row[2] for row in files if row[1] == "main"), "")
            same = bool(main) and os.path.samefile(main, storage.path)
        except (sqlite3.Error, OSError):  # another thread's connection, a file gone, ...
            return None
        return cls(saver, memory) if same else None

    def put(
        self,
        mirror: ThreadMirror,
        plan: MirrorPlan,
        config: RunnableConfig,
        encode: Callable[[], Checkpoint],
        *args: Any,
    ) -> RunnableConfig:
        """``saver.put(config, encode(), *args)`` with `plan`'s new turns saved, and the
        checkpoint's list stored (`encode`: `checkpointer.refs`), in the same transaction."""
        saver, conn = self.saver, self.saver.conn
        held: list[list[StoredMessage]] = []
        with saver.lock:
            saver.setup()  # (creating its tables would commit the transaction below)
            try:
                if not conn.in_transaction:
                    conn.execute("BEGIN IMMEDIATE")  # the file's write lock: reads stay current
                try:
                    with self.storage.borrowing(conn), self.writes.holding(held):
                        run_sync(mirror.apply(plan))
                except MastraMemoryError as exc:  # the checkpoint is written without them
                    conn.rollback()
                    held.clear()
                    mirror.failed(exc, plan.thread_id)
                with self.storage.borrowing(conn):
                    checkpoint = encode()  # the list (its failure keeps the list whole)
                result = saver.put(config, checkpoint, *args)  # its INSERT, its commit: all
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                mirror.thread(plan.thread_id).reset()  # what it learnt was rolled back
                raise
        for stored in held:
            self.writes.after_save(stored)
        return cast("RunnableConfig", result)

    async def aput(self, mirror: ThreadMirror, plan: MirrorPlan, *args: Any) -> RunnableConfig:
        """Async `put` (`SqliteSaver` is sync: in a worker thread)."""
        return await in_io_pool(self.put, mirror, plan, *args)
