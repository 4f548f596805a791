"""`MastraStorage`: memory on the tables a Mastra (TypeScript) agent stores its memory in.

One SQLite file (Mastra's ``LibSQLStore`` URL: ``"mastra.db"`` or ``"file:mastra.db"``) holds
Mastra's tables, which both runtimes read and write, and ours beside them, which Mastra never
reads. Mastra's rows are the memory both share: threads, messages, working memory. Ours are
what our algorithms search and window (the keyword index, the vector backlog, token counts, the
messages one by one as LangChain holds them) plus what Mastra has no table for (checkpoints,
store items, observation groups): an index of Mastra's rows, kept in step both ways in the
transaction that reads or writes.

- **In**: a write transaction begins by reading what Mastra changed since (threads whose
  ``updatedAt`` moved: Mastra bumps it on every save, edit and delete of a message), and a
  read first checks, with one indexed query, whether anything did; a changed Mastra row is
  decoded (`content`) into our messages, a vanished one takes its messages away.
- **Out**: triggers on this connection only (temporary: nothing of them is in the file) note
  what a transaction changes in our tables; before it commits, the rows holding those messages
  are written again in Mastra's shape, the thread's ``updatedAt`` bumped, the working memory
  written to Mastra's place (a resource's row; a thread's ``metadata.workingMemory``).

Both happen inside the one transaction, so the two sides never disagree on disk. A catch-up of
many changes (a store Mastra filled for months, opened here for the first time) runs as several
transactions of at most `CATCH_UP_ROWS` changed rows, each well under Mastra's 5 s busy timeout.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "mastra.db")
    >>> storage = MastraStorage(f"file:{path}")
    >>> _ = storage.create_thread(thread_id="t1", resource_id="alice")
    >>> _ = storage.save_messages([HumanMessage("hi", id="m1")], thread_id="t1",
    ...                           resource_id="alice")
    >>> import sqlite3
    >>> sqlite3.connect(path).execute(
    ...     'SELECT id, role, content FROM mastra_messages').fetchall()
    [('m1', 'user', '{"format":2,"parts":[{"type":"text","text":"hi"}],"content":"hi"}')]
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..sqlite.backend import SQLiteStorage, _statements
from .layout import CHANGE_LOG, MASTRA_TABLES, SYNC_TABLES
from .sync import MastraStorage


def sqlite_path(url: str | Path) -> str:
    """The file a LibSQL URL names (``file:mastra.db``, ``file:///abs/mastra.db``, or a
    path)."""
    text = str(url)
    if text.startswith("file:"):
        text = text[len("file:") :]
        if text.startswith("//"):
            text = text[2:]
        text = text.split("?", 1)[0]
    return text


class MastraSQLiteStorage(MastraStorage, SQLiteStorage):
    """`MastraStorage` on a LibSQL / SQLite file (``MastraStorage("file:mastra.db")`` makes
    one): Mastra's tables and ours in the one file.

    Examples:
        >>> import tempfile, os
        >>> storage = MastraSQLiteStorage(os.path.join(tempfile.mkdtemp(), "mastra.db"))
        >>> storage.create_thread(thread_id="t1", resource_id="alice").resource_id
        'alice'
    """

    engine = "sqlite"

    def __init__(self, url: str | Path = "mastra.db", *, busy_timeout: float = 30.0) -> None:
        self.url = str(url)
        self._ready = False  # until the tables and the change log exist: plain SQLite
        super().__init__(sqlite_path(url), busy_timeout=busy_timeout)

    def __repr__(self) -> str:
        return f"MastraStorage({self.url!r})"

    def setup(self) -> None:
        """Our schema, Mastra's tables where missing, the change log; then read in."""
        super().setup()
        with super()._transaction(write=True) as conn:
            for statement in _statements(MASTRA_TABLES + SYNC_TABLES):
                conn.execute(statement)
        self._log_changes(self._conn)
        self._ready = True
        self.catch_up()

    @staticmethod
    def _log_changes(conn: sqlite3.Connection) -> None:
        for statement in _statements(CHANGE_LOG):
            conn.execute(statement)

    # -- transactions ------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, *, write: bool, atomic: bool = True) -> Iterator[sqlite3.Connection]:
        """`SQLiteStorage._transaction`, with Mastra's changes read in first and ours written
        out before it commits."""
        if not self._ready:
            with super()._transaction(write=write, atomic=atomic) as conn:
                yield conn
            return
        borrowed = getattr(self._local, "borrowed", None)
        inside = borrowed is not None or getattr(self._local, "writing", False)
        if not write:
            if not inside:
                self.catch_up()
            with super()._transaction(write=False) as conn:
                yield conn
            return
        if borrowed is not None:  # in another connection's transaction: log there too
            self._log_changes(borrowed)
            with super()._transaction(write=True, atomic=atomic) as conn:
                yield conn
                self._write_out(conn)
            return
        with super()._transaction(write=True, atomic=atomic) as conn:
            self._caught_up = self._read_in(conn)
            conn.execute("DELETE FROM temp.mastra_changes")  # (what reading in wrote)
            yield conn
            self._write_out(conn)

    def _changes(self, conn: sqlite3.Connection) -> list[tuple[str, str, str | None, Any]]:
        changes = conn.execute("SELECT kind, id, thread_id, at FROM temp.mastra_changes").fetchall()
        conn.execute("DELETE FROM temp.mastra_changes")
        return changes
