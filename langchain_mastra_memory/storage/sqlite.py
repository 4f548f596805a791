"""`SQLiteStorage`: the embedded default backend (one file, WAL, no server)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StorageError
from .records import fts_query, query_words, to_iso
from .sql import SCHEMA_TABLE, Dialect, SQLStorage
from .sqlite_schema import MIGRATIONS

SQLITE = Dialect(to_db_time=to_iso)


def _statements(script: str) -> Iterator[str]:
    """Split a migration into complete statements (trigger bodies hold semicolons too)."""
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""


COMMON_SHARE = 0.15  # a query word in more of the messages than this is left out ...
SMALL_INDEX = 2_000  # ... once the index holds more messages than this


def _rare_words(conn: sqlite3.Connection, words: list[str]) -> list[str]:
    """The query words without the very common ones (in over `COMMON_SHARE` of the messages).
    BM25 gives such words little weight anyway, but scoring every message they match costs
    time proportional to the history (230 ms at 100k messages); on LoCoMo the cap changes
    evidence recall by less than 0.005. The rarest word is kept if all are common."""
    total = conn.execute("SELECT max(seq) FROM memory_messages").fetchone()[0] or 0
    if total <= SMALL_INDEX or len(words) == 1:
        return words
    counts = {
        w: conn.execute(
            "SELECT count(*) FROM memory_messages_fts WHERE memory_messages_fts MATCH ?",
            (fts_query([w]),),
        ).fetchone()[0]
        for w in words
    }
    rare = [w for w in words if counts[w] <= COMMON_SHARE * total]
    return rare or [min(words, key=lambda w: counts[w])]


class SQLiteStorage(SQLStorage):
    """Threads, messages and resources in one SQLite file (or ``":memory:"``).

    The file is opened in WAL mode with a busy timeout and foreign keys on, so several processes
    can share it; every write is one ``BEGIN IMMEDIATE`` transaction. The schema is created or
    migrated forward on first use; a file written by a newer version raises `SchemaVersionError`.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> storage = SQLiteStorage(":memory:")
        >>> _ = storage.create_thread(thread_id="t1", resource_id="alice")
        >>> [m.message.content for m in storage.save_messages(
        ...     [HumanMessage("hi")], thread_id="t1", resource_id="alice")]
        ['hi']
    """

    dialect = SQLITE

    def __init__(self, path: str | Path = "memory.db", *, busy_timeout: float = 30.0) -> None:
        self.path = str(path)
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            raise StorageError(
                f"{self.path!r} cannot be opened as a SQLite database: {exc}"
            ) from exc
        self.setup()

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"

    # -- plumbing ------------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        """Writes: one ``BEGIN IMMEDIATE`` transaction (the database's write lock serializes
        writers across processes). Reads: autocommit statements under the connection lock."""
        with self._lock:
            if not write:
                yield self._conn
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise StorageError(f"{self.path!r}: cannot start a write: {exc}") from exc
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    def _text_match(self, query: str, conn: Any) -> tuple[str, Any] | None:
        words = query_words(query)
        if not words:
            return None
        words = _rare_words(conn, words)
        return (
            "SELECT m.id, m.thread_id, -bm25(memory_messages_fts) AS score "
            "FROM memory_messages_fts JOIN memory_messages m ON m.seq = memory_messages_fts.rowid "
            "WHERE memory_messages_fts MATCH ?",
            fts_query(words),
        )

    # -- schema --------------------------------------------------------------------------------
    def setup(self) -> None:
        """Create or migrate the schema (safe to call twice)."""
        try:
            with self._transaction(write=True) as conn:
                self._migrate(conn, MIGRATIONS, where=repr(self.path), statements=_statements)
        except sqlite3.DatabaseError as exc:
            msg = f"{self.path!r} is not a usable SQLite database: {exc}"
            raise StorageError(msg) from exc

    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        with self._transaction(write=False) as conn:
            return int(conn.execute(f"SELECT version FROM {SCHEMA_TABLE}").fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
