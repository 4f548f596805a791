"""The SQL backends' algorithms, written once over a small `Dialect`.

`SQLStorage` holds every algorithm (saving with strictly increasing times, ownership checks,
cloning, neighbour windows, the working-memory read-modify-write) as statements written with
``?`` placeholders. A backend supplies only a connection and its transactions, a `Dialect`
(placeholder, row locks, id-list binding, JSON casts, time codec, "no limit"), its schema
migrations and its full-text query. A third backend costs a dialect, not a copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ...errors import SchemaVersionError
from .checkpoint_lists import CheckpointListTable
from .items import ItemTable
from .messages import MessageTable
from .observations import ObservationTable
from .retention import RetentionTable
from .search import SearchTable
from .statements import SCHEMA_TABLE, Connection, Dialect, TextMatch
from .threads import ThreadTable
from .working_memory import WorkingMemoryTable

__all__ = ["SCHEMA_TABLE", "Dialect", "SQLStorage", "TextMatch"]  # what the backends import
Splitter = Callable[[str], Iterable[str]]  # a migration script -> its statements


class SQLStorage(
    ThreadTable,
    MessageTable,
    SearchTable,
    WorkingMemoryTable,
    ObservationTable,
    ItemTable,
    CheckpointListTable,
    RetentionTable,
):
    """A `MemoryStorage` over a SQL engine: every algorithm here, once.

    Subclasses provide `dialect`, `_transaction` (a context manager yielding a connection that
    executes ``dialect.sql(...)`` statements, one transaction; ``write=True`` for writes, which
    must serialize with other writers of the same rows) and `_text_match` (see `SQLRoom`).
    """

    # -- schema --------------------------------------------------------------------------------
    def _migrate(
        self, conn: Connection, migrations: Sequence[str], *, where: str, statements: Splitter
    ) -> None:
        """Bring the schema in `conn` to ``len(migrations)``; refuse a newer one (untouched)."""
        self._run(conn, f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER NOT NULL)")
        row = self._run(conn, f"SELECT version FROM {SCHEMA_TABLE}").fetchone()
        version = row[0] if row else 0
        if version > len(migrations):
            msg = (
                f"{where} has memory schema version {version}, newer than this package knows "
                f"({len(migrations)}); upgrade langchain-mastra-memory."
            )
            raise SchemaVersionError(msg)
        for script in migrations[version:]:
            for statement in statements(script):
                conn.execute(statement)
        if row is None:
            self._run(conn, f"INSERT INTO {SCHEMA_TABLE} VALUES (?)", (len(migrations),))
        elif version < len(migrations):
            self._run(conn, f"UPDATE {SCHEMA_TABLE} SET version = ?", (len(migrations),))
