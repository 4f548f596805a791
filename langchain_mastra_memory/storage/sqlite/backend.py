"""`SQLiteStorage`: the embedded default backend (one file, WAL, no server)."""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ...errors import ConfigurationError, StorageError
from ..base import MemoryStorage
from ..keywords import fts_query, query_words
from ..records import to_iso
from ..sql.backend import SCHEMA_TABLE, Dialect, SQLStorage, TextMatch
from .schema import MIGRATIONS

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


STORE_BUDGET = 5_000  # index entries a search may read for its words, store-wide ...
OWNER_BUDGET = 1_000  # ... and of its own resource's messages
RAREST_CAP = 8  # budgets to count to when no word fits one (to find the rarest)


def owner_token(resource_id: str) -> str:
    """The FTS token standing for `resource_id` (what the schema's triggers index)."""
    return "o" + resource_id.encode("utf-8", "surrogatepass").hex() + "0"


_COUNT = (
    "SELECT {i}, count(*) FROM (SELECT rowid FROM memory_messages_fts "
    "WHERE memory_messages_fts MATCH ? LIMIT ?)"
)


def _matches(conn: sqlite3.Connection, matches: list[str], cap: int) -> list[int]:
    """How many messages each of `matches` finds, counting no further than `cap` + 1 (bounded
    cost); one statement for all."""
    if not matches:
        return []
    sql = " UNION ALL ".join(_COUNT.format(i=i) for i in range(len(matches)))
    params = [p for match in matches for p in (match, cap + 1)]
    counts = dict(conn.execute(sql, params).fetchall())
    return [int(counts[i]) for i in range(len(matches))]


def _affordable_words(
    conn: sqlite3.Connection,
    words: list[str],
    owner: str | None,
    *,
    store_budget: int,
    owner_budget: int = OWNER_BUDGET,
) -> list[str]:
    """The rarest query words whose messages fit the budgets (the rarest one always).

    BM25 scores every message a word matches and reads every entry of a word's list to weigh
    it, so a very common word costs time proportional to the history while adding little to
    the ranking (its weight is low). Words are taken rarest first while the entries they add
    stay within `store_budget` store-wide and, for a resource that is not most of the index
    (`owner` given), within `owner_budget` of its own messages. Counting is capped the same
    way, so choosing costs little too.
    """
    quoted = [f'"{w}"' for w in words]
    store = dict(zip(words, _matches(conn, quoted, store_budget), strict=True))
    if min(store.values()) > store_budget:  # every word is common: counted further, or the
        # first of them would pass for the rarest (a word in half the history: 44 ms at 100k)
        store = dict(zip(words, _matches(conn, quoted, RAREST_CAP * store_budget), strict=True))
    owned = dict.fromkeys(words, 0)
    if owner is not None:  # (one statement for every word: a statement each cost 2x more)
        mine_of = [f'owner : "{owner}" AND text : "{word}"' for word in words]
        owned = dict(zip(words, _matches(conn, mine_of, owner_budget), strict=True))
    kept: list[str] = []
    spent = mine = 0
    for word in sorted(words, key=store.__getitem__):
        own = owned[word]
        if kept and (spent + store[word] > store_budget or mine + own > owner_budget):
            break
        kept.append(word)
        spent, mine = spent + store[word], mine + own
    return kept


@contextmanager
def _faults_as_storage_errors(path: str) -> Iterator[None]:
    """SQLite's own errors (a corrupt page, a full disk, a read-only file, a lock held too
    long) become `StorageError`, the original as ``__cause__``; the transaction is rolled
    back, so nothing half-written stays."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StorageError(f"SQLite database {path!r} failed: {exc}") from exc


IDLE_READERS = 8  # read-only connections kept open between reads
# bytes of the file a reader maps instead of copying pages into its own cache: a new reader
# (the first reads after a start) reads what the OS holds at once, and FTS queries over common
# words skip a copy per page (keyword p50 3.5 -> 3.2 ms at 100k messages, first turn ~20 ms less)
READ_MMAP = 256 << 20
SCHEMA_ATTEMPTS = 6  # a read run again while another connection changes the schema
# commits in the WAL are not synced to disk one by one: a crash of the process loses nothing,
# a power cut at most the last commits (never the file's consistency); SQLite's advice for WAL
SYNCHRONOUS = "NORMAL"


def _under_schema_change(exc: BaseException) -> bool:
    cause = exc.__cause__ if isinstance(exc, StorageError) else exc
    return isinstance(cause, sqlite3.OperationalError) and _schema_changed(cause)


def _schema_changed(exc: sqlite3.OperationalError) -> bool:
    """SQLite's errors for a schema another connection changed under this one."""
    text = str(exc)
    return "vtable constructor failed" in text or "schema has changed" in text


class SQLiteStorage(SQLStorage):
    """Threads, messages and resources in one SQLite file (or ``":memory:"``).

    The file is opened in WAL mode with a busy timeout and foreign keys on, so several processes
    can share it; every write is one ``BEGIN IMMEDIATE`` transaction. Reads of a file run on a
    pooled read-only connection, so they never wait on a write or on each other
    (a turn loads its history while recall searches); ``":memory:"`` has one connection. The
    schema is created or migrated forward on first use; a file written by a newer version
    raises `SchemaVersionError`.

    Examples:
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
        self.busy_timeout = busy_timeout
        self._lock = threading.RLock()  # the writing connection (and ":memory:"'s only one)
        self._local = threading.local()  # per thread: whether it is writing
        self._readers: list[sqlite3.Connection] = []  # every open reader
        self._idle: list[sqlite3.Connection] = []  # those not in use
        self._readers_lock = threading.Lock()
        self._closed = False
        try:
            self._conn = self._connect()
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")
        except sqlite3.DatabaseError as exc:
            folder = Path(self.path).parent
            # (SQLite says only "unable to open database file", as for a damaged one)
            if self.path != ":memory:" and not folder.is_dir():
                raise StorageError(
                    f"cannot open {self.path!r}: its folder {str(folder)!r} does not exist "
                    "(create it first)"
                ) from exc
            raise StorageError(
                f"{self.path!r} cannot be opened as a SQLite database: {exc}"
            ) from exc
        self.setup()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
        return conn

    @contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection to the file for one read: an idle one, else a new one, back
        to the idle ones afterwards (at most `IDLE_READERS` kept). Pooled, not per thread:
        LangGraph saves checkpoints from short-lived threads, and a connection per thread
        would cost an open per save and never be closed."""
        with self._readers_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            reader = self._idle.pop() if self._idle else None
        if reader is None:
            reader = self._connect()
            reader.execute("PRAGMA query_only=ON")
            reader.execute(f"PRAGMA mmap_size={READ_MMAP}")
            with self._readers_lock:
                self._readers.append(reader)
        stale = False
        try:
            yield reader
        except sqlite3.OperationalError as exc:
            stale = _schema_changed(exc)  # not worth keeping: the next read opens a fresh one
            raise
        finally:
            with self._readers_lock:
                # (mypy does not see `stale` set in the except clause above)
                if stale or self._closed or len(self._idle) >= IDLE_READERS:  # type: ignore[redundant-expr]
                    if reader in self._readers:  # (close() may have closed it already)
                        self._readers.remove(reader)
                    reader.close()
                else:
                    self._idle.append(reader)

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"

    # -- plumbing ------------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, *, write: bool, atomic: bool = True) -> Iterator[sqlite3.Connection]:
        """Writes: one ``BEGIN IMMEDIATE`` transaction (the database's write lock serializes
        writers across processes; ``atomic=False`` changes nothing here). Reads: autocommit
        statements on this thread's read-only connection (on the writing one, under its lock,
        for ":memory:" and for a read inside this thread's own write, which must see what it
        wrote)."""
        borrowed = getattr(self._local, "borrowed", None)
        if borrowed is not None:  # inside another connection's transaction (`borrowing`)
            with _faults_as_storage_errors(self.path):
                yield borrowed
            return
        if not write and self.path != ":memory:" and not getattr(self._local, "writing", False):
            with _faults_as_storage_errors(self.path), self._reader() as reader:
                yield reader  # committed data, beside any write
            return
        with self._lock, _faults_as_storage_errors(self.path):
            if not write:  # ":memory:", or a read inside this thread's write: its own view
                yield self._conn
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._local.writing = True
            try:
                yield self._conn
            except BaseException:
                with suppress(sqlite3.Error):  # a failed statement may have ended it already
                    self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._local.writing = False

    @contextmanager
    def borrowing(self, conn: sqlite3.Connection) -> Iterator[None]:
        """While active, this thread's reads and writes run on `conn`, a connection to this
        same file, inside the transaction its owner holds (no ``BEGIN`` or ``COMMIT`` here):
        what is written then commits, or rolls back, with the rest of that transaction."""
        previous = getattr(self._local, "borrowed", None)
        self._local.borrowed = conn
        try:
            yield
        finally:
            self._local.borrowed = previous

    # LangGraph's `SqliteSaver` creates its tables in this file on first use, possibly while
    # a turn searches; FTS5 then fails to open its table until that change commits: the read
    # is run again, a few ms later (`SQLStorage._retried`)
    _transient = staticmethod(_under_schema_change)
    _attempts = SCHEMA_ATTEMPTS

    def _text_match(
        self, query: str, conn: Any, resource_id: str, *, pool: int
    ) -> TextMatch | None:
        words = query_words(query)
        if not words:
            return None
        # messages ever stored (max of the autoincrement key: no scan; deletions make it high)
        # and how many of them the resource holds
        total, owned = conn.execute(
            "SELECT (SELECT max(seq) FROM memory_messages), "
            "(SELECT message_count FROM memory_resources WHERE id = ?)",
            (resource_id,),
        ).fetchone()
        total, owned = total or 0, owned or 0
        owner = owner_token(resource_id)
        dominant = owned * 2 >= total  # its own token would select nearly every message
        if len(words) > 1:
            words = _affordable_words(
                conn,
                words,
                None if dominant else owner,
                store_budget=OWNER_BUDGET if dominant else STORE_BUDGET,
            )
        if dominant:  # no owner token (ANDing it costs 2x at 100k): the resource and role
            # filters then drop other resources' and tool messages from the pool, so it is
            # deepened by the share of the index that is not the resource's (at most 2.5x)
            match = fts_query(words)
            pool = math.ceil(pool * 1.25 * total / max(owned, 1)) + 16
        else:  # the token is indexed for the resource's user and assistant messages only
            match = f'owner : "{owner}" AND text : ({fts_query(words)})'
        score = "-bm25(memory_messages_fts, 1.0, 0.0)"
        # BM25 ranked inside FTS5 first, so only the pool is joined to the messages
        pooled = (
            f"SELECT m.id, m.thread_id, r.score FROM (SELECT rowid, {score} AS score "
            "FROM memory_messages_fts WHERE memory_messages_fts MATCH ? "
            f"ORDER BY score DESC LIMIT {int(pool)}) AS r "
            "JOIN memory_messages m ON m.seq = r.rowid WHERE 1 = 1"
        )
        unpooled = (
            f"SELECT m.id, m.thread_id, {score} AS score "
            "FROM memory_messages_fts JOIN memory_messages m ON m.seq = memory_messages_fts.rowid "
            "WHERE memory_messages_fts MATCH ?"
        )
        return TextMatch(pooled, (match,), unpooled)

    # -- schema --------------------------------------------------------------------------------
    def setup(self) -> None:
        """Create or migrate the schema (safe to call twice)."""
        try:
            with self._transaction(write=True) as conn:
                self._migrate(conn, MIGRATIONS, where=repr(self.path), statements=_statements)
        except sqlite3.DatabaseError as exc:
            msg = f"{self.path!r} is not a usable SQLite database: {exc}"
            raise StorageError(msg) from exc

    def delete_resource(self, resource_id: str) -> bool:
        """`SQLStorage.delete_resource`, then the keyword index rewritten without the deleted
        rows (FTS5 keeps a deleted row's terms in its segments until they merge) and, with
        ``secure_delete``, the freed pages zeroed: erased means gone from the file too."""
        with self._transaction(write=True) as conn:  # (the writer's connection, each time)
            conn.execute("PRAGMA secure_delete = ON")
        try:
            erased = super().delete_resource(resource_id)
            if erased:
                with self._transaction(write=True) as conn:
                    conn.execute(
                        "INSERT INTO memory_messages_fts(memory_messages_fts) VALUES ('optimize')"
                    )
        finally:
            with self._transaction(write=True) as conn:
                conn.execute("PRAGMA secure_delete = OFF")
        return erased

    def schema_version(self) -> int:
        """The schema version recorded in the file."""
        with self._transaction(write=False) as conn:
            return int(conn.execute(f"SELECT version FROM {SCHEMA_TABLE}").fetchone()[0])

    @property
    def closed(self) -> bool:
        """Whether `close` was called (nothing can be read or written then)."""
        return self._closed

    def close(self) -> None:
        """Close the connection."""
        with self._lock, self._readers_lock:
            self._closed = True
            self._conn.close()
            for reader in self._readers:
                reader.close()
            self._readers.clear()
            self._idle.clear()


def storage_or_default(storage: object, default_path: str | Path) -> MemoryStorage:
    """`storage` if it is a `MemoryStorage`, a `SQLiteStorage` at `default_path` for None, and
    a `ConfigurationError` naming the classes for anything else (a path, LangGraph's store)."""
    if storage is None:
        return SQLiteStorage(default_path)
    if isinstance(storage, MemoryStorage):
        return storage
    hint = ""
    if isinstance(storage, (str, Path)):
        hint = f"; for a file, pass SQLiteStorage({str(storage)!r})"
    msg = (
        "storage= must be a MemoryStorage (SQLiteStorage, PostgresStorage, or your own "
        f"subclass), got {type(storage).__name__}{hint}"
    )
    raise ConfigurationError(msg)
