"""`MastraVectorStore`: recall's vectors in Mastra's own semantic-recall index, so that a Mastra
agent's recall finds the messages saved here and ours finds Mastra's.

Mastra 1.31's memory keeps one vector per message in the index its `createEmbeddingIndex`
names by the embedder's dimension (``memory_messages_<dimension>``; ``memory_messages`` for
1536), in the vector store the user gave it: `LibSQLVector` (a table with an ``F32_BLOB``
column and a libsql vector index, beside the store's tables in the file) or `PgVector` (a
table in the ``schemaName``, an ``embedding`` column of pgvector). Each row's ``vector_id`` is
the message's id and its metadata ``{message_id, thread_id, resource_id, role, content,
created_at}``; Mastra's recall filters on ``resource_id`` (or ``thread_id``) and reads each
hit's ``message_id`` as a row of ``mastra_messages``.

Ours are written the same way: ``message_id`` the Mastra row that holds the message (our
messages after a row's first share its row), ``vector_id`` our piece id, and ``lmm_message_id``
our own message id beside it (what our recall reads back; Mastra ignores it). A message Mastra
embedded counts as embedded here (`present`), with the rest of its row, so the backlog never
embeds it a second time.

Both sides must embed with the same model: the index holds one space. On LibSQL the writes go
through libsql itself in a process of its own (`libsql_worker`).

Example (the same file Mastra's ``LibSQLStore`` and ``LibSQLVector`` are given)::

    storage = MastraStorage("file:mastra.db")
    memory = Memory(storage=storage, vector=MastraVectorStore(storage), embedder=embedder,
                    options={"semantic_recall": True})
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ...errors import ConfigurationError, VectorStoreError
from ...storage.records import TimeWindow
from ..vector import AsyncTwins, VectorHit, VectorRecord, only_threads
from .base import batches, dimension_mismatch

if TYPE_CHECKING:
    from ...storage.mastra.sync import MastraStorage

MASTRA_DEFAULT_DIMENSION = 1536  # Mastra names this dimension's index plain "memory_messages"
NAMESPACE = "default"  # PgVector's namespace column, as Mastra writes it
OVER_FETCH = 10  # candidates per hit from libsql's vector index (Mastra's default multiplier)
OUR_ID = "lmm_message_id"  # our message id, in the metadata beside Mastra's message_id
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def mastra_index_name(dimension: int) -> str:
    """The index Mastra's memory uses for an embedder of `dimension`."""
    if dimension == MASTRA_DEFAULT_DIMENSION:
        return "memory_messages"
    return f"memory_messages_{dimension}"


def _iso(seconds: float | datetime) -> str:
    """A time as JavaScript's ``toISOString`` writes it (what Mastra stores as created_at)."""
    if not isinstance(seconds, datetime):
        seconds = datetime.fromtimestamp(seconds, timezone.utc)
    moment = seconds.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class MastraVectorStore(AsyncTwins):
    """Message vectors in Mastra's semantic-recall index, where the `MastraStorage` is (see the
    module doc). `index_name`: the index Mastra's ``semanticRecall`` is told to use, when it is
    told one (else the one Mastra names by the dimension).

    Every method has an ``a``-prefixed async twin (run in a worker thread).

    Example (the file a Mastra agent's LibSQLVector uses; needs ``[mastra]``)::

        store = MastraVectorStore(MastraStorage("file:mastra.db"))
        store.count("any", 384, "alice")  # the vectors of alice's messages, either side's
    """

    shared_with_mastra = True  # (the upkeep asks `present` before it embeds what Mastra wrote)

    def __init__(self, storage: MastraStorage, *, index_name: str | None = None) -> None:
        from ...storage.mastra.sync import MastraStorage

        if not isinstance(storage, MastraStorage):
            raise ConfigurationError(
                "MastraVectorStore keeps vectors beside a MastraStorage, got "
                f"{type(storage).__name__}"
            )
        if index_name is not None and not _NAME.fullmatch(index_name):
            raise ConfigurationError(f"index_name must be a SQL identifier, got {index_name!r}")
        self.storage = storage
        self.index_name = index_name
        self.sqlite = storage.engine == "sqlite"
        self._worker: Any = None
        if self.sqlite:
            from .libsql_worker import LibSQLWorker

            self._worker = LibSQLWorker(str(getattr(storage, "path")))  # noqa: B009
        self._tables: dict[str, tuple[str, int]] = {}  # index -> (column type, dimension)
        self._searchable_names: set[str] = set()  # LibSQL indexes with libsql's vector index

    def __repr__(self) -> str:
        return f"MastraVectorStore({self.storage!r})"

    # -- where ---------------------------------------------------------------------------------
    def _index(self, dimension: int) -> str:
        name = self.index_name or mastra_index_name(dimension)
        if self.sqlite and name == "memory_messages":
            raise ConfigurationError(
                "Mastra names the index of 1536-dimensional vectors 'memory_messages', which is "
                "memory's own table in this file: give Mastra's semanticRecall an indexName "
                "(e.g. 'mastra_messages_1536') and MastraVectorStore(storage, index_name=...) "
                "the same"
            )
        return name

    def _table(self, name: str) -> str:
        return f'"{name}"' if self.sqlite else f'{self.storage.mastra}"{name}"'

    def _mark(self) -> str:
        return "?" if self.sqlite else "%s"

    def _meta(self, key: str, table: str = "") -> str:
        if self.sqlite:
            return f"json_extract({table}metadata, '$.{key}')"
        return f"({table}metadata->>'{key}')"

    def _ours(self, table: str = "") -> str:
        return f"coalesce({self._meta(OUR_ID, table)}, {self._meta('message_id', table)})"

    def _sql(self, statements: Sequence[tuple[str, Sequence[Any]]], *, write: bool) -> Any:
        """The last statement's rows; several, or `write`, in one transaction."""
        if self.sqlite:
            return self._worker.run(statements, write=write)
        try:
            with self.storage._transaction(write=write, atomic=False) as conn:
                rows: list[Any] = []
                for sql, args in statements:
                    cursor = conn.execute(sql, tuple(args))
                    rows = [list(r) for r in cursor.fetchall()] if cursor.description else []
                return rows
        except VectorStoreError:
            raise
        except Exception as exc:
            raise VectorStoreError(f"Mastra's PgVector index: {exc}") from exc

    def _existing(self, name: str) -> tuple[str, int] | None:
        """(column type, dimension) of Mastra's index `name`, or None where it is missing."""
        if name in self._tables:
            return self._tables[name]
        if self.sqlite:
            rows = self._sql(
                [("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", [name])],
                write=False,
            )
            found = re.search(r"F32_BLOB\((\d+)\)", rows[0][0]) if rows and rows[0][0] else None
            if found is None:
                return None
            kind = "F32_BLOB", int(found.group(1))
        else:
            rows = self._sql(
                [
                    (
                        "SELECT format_type(atttypid, atttypmod), atttypmod FROM pg_attribute "
                        "WHERE attrelid = to_regclass(%s) AND attname = 'embedding' "
                        "AND NOT attisdropped",
                        [self._table(name)],
                    )
                ],
                write=False,
            )
            if not rows:
                return None
            kind = str(rows[0][0]), int(rows[0][1])
        self._tables[name] = kind
        return kind

    def _extension(self) -> str:
        """The schema pgvector is installed in (its operators, named there: ours is the
        search path, not Mastra's)."""
        if not hasattr(self, "_extension_schema"):
            rows = self._sql(
                [
                    (
                        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                        "ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
                        [],
                    )
                ],
                write=False,
            )
            if rows:  # (else asked again, once the extension is made)
                self._extension_schema = f'"{rows[0][0]}"'
            return f'"{rows[0][0]}"' if rows else "public"
        return self._extension_schema

    def _created(self, name: str, dimension: int) -> tuple[str, int]:
        """Mastra's index `name` as Mastra's ``createIndex`` makes it, where missing (Mastra
        adds its search index when it next opens it); another dimension is an error."""
        found = self._existing(name)
        if found is None:
            table = self._table(name)
            statements: list[tuple[str, list[Any]]]
            if self.sqlite:  # (LibSQLVector.createIndex's own statements)
                statements = [
                    (
                        f"CREATE TABLE IF NOT EXISTS {table} (id SERIAL PRIMARY KEY, vector_id "
                        f"TEXT UNIQUE NOT NULL, embedding F32_BLOB({dimension}), metadata TEXT "
                        "DEFAULT '{}')",
                        [],
                    ),
                    (
                        f'CREATE INDEX IF NOT EXISTS "{name}_vector_idx" ON {table} '
                        "(libsql_vector_idx(embedding))",
                        [],
                    ),
                ]
            else:  # (PgVector.createIndex's table, and the unique index its upsert needs)
                self._sql([("CREATE EXTENSION IF NOT EXISTS vector", [])], write=True)
                statements = [
                    (
                        f"CREATE TABLE IF NOT EXISTS {table} (id SERIAL PRIMARY KEY, vector_id "
                        f"TEXT NOT NULL, embedding {self._extension()}.vector({dimension}), "
                        "metadata JSONB DEFAULT "
                        f"'{{}}'::jsonb, namespace VARCHAR(255) NOT NULL DEFAULT '{NAMESPACE}')",
                        [],
                    ),
                    (
                        f'CREATE UNIQUE INDEX IF NOT EXISTS "{name}_namespace_vector_id_idx" '
                        f"ON {table} (namespace, vector_id)",
                        [],
                    ),
                ]
            self._sql(statements, write=True)
            self._tables.pop(name, None)
            found = self._existing(name)
            assert found is not None
        if found[1] != dimension:
            raise dimension_mismatch(name, found[1], dimension)
        return found

    def _indexes(self, index_name: str | None = None) -> list[str]:
        """Mastra's message indexes that exist (the named one, else every ``memory_messages*``
        vector table, as Mastra's own deleteThread finds them)."""
        if self.index_name is not None:
            return [self.index_name] if self._existing(self.index_name) else []
        if self.sqlite:
            sql = (
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%F32_BLOB%' "
                "AND name LIKE 'memory\\_messages%' ESCAPE '\\'"
            )
            rows = self._sql([(sql, [])], write=False)
        else:
            sql = (
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'embedding' "
                "WHERE n.nspname = %s AND c.relkind = 'r' AND c.relname LIKE 'memory\\_messages%%'"
            )
            rows = self._sql([(sql, [self.storage.schema_name])], write=False)  # type: ignore[attr-defined]
        return [str(row[0]) for row in rows]

    def _rows_of(self, message_ids: Sequence[str]) -> dict[str, str]:
        """The Mastra row that holds each of these messages."""
        found: dict[str, str] = {}
        mark = self.storage.dialect.placeholder
        for chunk in batches(message_ids):
            marks = ", ".join([mark] * len(chunk))
            with self.storage._transaction(write=False) as conn:
                rows = conn.execute(
                    "SELECT message_id, row_id FROM memory_mastra_members "
                    f"WHERE message_id IN ({marks})",
                    tuple(chunk),
                ).fetchall()
            found.update({str(m): str(r) for m, r in rows})
        return found

    # -- the protocol --------------------------------------------------------------------------
    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Write these pieces into Mastra's index, in Mastra's shape."""
        if not records:
            return
        dimension = len(records[0].vector)
        name = self._index(dimension)
        kind, _ = self._created(name, dimension)
        rows = self._rows_of([r.message_id for r in records])
        table, mark = self._table(name), self._mark()
        statements: list[tuple[str, list[Any]]] = []
        for record in records:
            if len(record.vector) != dimension:
                raise dimension_mismatch(name, dimension, len(record.vector))
            metadata = {
                "message_id": rows.get(record.message_id, record.message_id),
                "thread_id": record.thread_id,
                "resource_id": record.resource_id,
                "role": record.role,
                "content": record.text,
                "created_at": _iso(record.created_at),
                OUR_ID: record.message_id,
            }
            vector = json.dumps([float(x) for x in record.vector])
            text = json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))
            if self.sqlite:
                sql = (
                    f"INSERT INTO {table} (vector_id, embedding, metadata) VALUES "
                    "(?, vector32(?), ?) ON CONFLICT (vector_id) DO UPDATE SET "
                    "embedding = vector32(?), metadata = ?"
                )
                statements.append((sql, [record.vector_id, vector, text, vector, text]))
            else:
                sql = (
                    f"INSERT INTO {table} (vector_id, embedding, metadata, namespace) VALUES "
                    f"({mark}, {mark}::{kind}, {mark}::jsonb, {mark}) ON CONFLICT "
                    "(namespace, vector_id) DO UPDATE SET embedding = EXCLUDED.embedding, "
                    "metadata = EXCLUDED.metadata"
                )
                statements.append((sql, [record.vector_id, vector, text, NAMESPACE]))
        self._sql(statements, write=True)

    def query(
        self,
        index_name: str,
        vector: Sequence[float],
        *,
        top_k: int,
        resource_id: str,
        thread_id: str | None = None,
        thread_ids: Sequence[str] | None = None,
        window: TimeWindow | None = None,
    ) -> list[VectorHit]:
        """The `top_k` nearest pieces of `resource_id`'s messages (either side's). On LibSQL,
        as Mastra's own query: through libsql's vector index first (`top_k` x `OVER_FETCH`
        candidates of every resource, then this one's), an exact scan of the resource's
        vectors when that finds fewer than `top_k`; on PostgreSQL an exact scan."""
        threads = only_threads(thread_id, thread_ids)
        name = self._index(len(vector))
        found = self._existing(name)
        if found is None or top_k <= 0 or (threads is not None and not threads):
            return []
        if found[1] != len(vector):
            raise dimension_mismatch(name, found[1], len(vector))
        literal = json.dumps([float(x) for x in vector])
        if self.sqlite and self._searchable(name):
            sql, args = self._search(
                name, literal, found[0], top_k, resource_id, threads, window, indexed=True
            )
            rows = self._sql([(sql, args)], write=False)
            if len(rows) >= top_k:
                return [VectorHit(str(row[0]), resource_id, float(row[1])) for row in rows]
        sql, args = self._search(name, literal, found[0], top_k, resource_id, threads, window)
        rows = self._sql([(sql, args)], write=False)
        return [VectorHit(str(row[0]), resource_id, float(row[1])) for row in rows]

    def _searchable(self, name: str) -> bool:
        """Whether Mastra's libsql vector index over `name` exists (Mastra makes it with the
        table; an index made before libsql had one may lack it)."""
        if name not in self._searchable_names:
            rows = self._sql(
                [
                    (
                        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                        [f"{name}_vector_idx"],
                    )
                ],
                write=False,
            )
            if not rows:
                return False
            self._searchable_names.add(name)
        return True

    def _search(
        self,
        name: str,
        literal: str,
        kind: str,
        top_k: int,
        resource_id: str,
        threads: frozenset[str] | None,
        window: TimeWindow | None,
        *,
        indexed: bool = False,
    ) -> tuple[str, list[Any]]:
        """The statement of a search: the filtered exact scan, or (`indexed`, LibSQL) the
        same filter over the vector index's nearest candidates."""
        mark, t = self._mark(), "t."
        if self.sqlite:
            score = f"1 - vector_distance_cos({t}embedding, vector32(?))"
        else:
            score = f"1 - ({t}embedding OPERATOR({self._extension()}.<=>) {mark}::{kind})"
        where, args = [f"{self._meta('resource_id', t)} = {mark}"], [literal, resource_id]
        if not self.sqlite:
            where.append(f"{t}namespace = {mark}")
            args.append(NAMESPACE)
        if threads is not None:
            where.append(f"{self._meta('thread_id', t)} IN ({', '.join([mark] * len(threads))})")
            args += sorted(threads)
        if window is not None and window.since is not None:
            where.append(f"{self._meta('created_at', t)} >= {mark}")
            args.append(_iso(window.since))
        if window is not None and window.until is not None:
            where.append(f"{self._meta('created_at', t)} < {mark}")
            args.append(_iso(window.until))
        source = f"{self._table(name)} AS t"
        if indexed:
            source = (
                f"vector_top_k('{name}_vector_idx', vector32(?), {int(top_k) * OVER_FETCH}) AS v "
                f"JOIN {self._table(name)} AS t ON t.rowid = v.id"
            )
            args.insert(1, literal)
        sql = (
            f"SELECT {self._ours(t)}, {score} AS score FROM {source} "
            f"WHERE {' AND '.join(where)} ORDER BY score DESC LIMIT {int(top_k)}"
        )
        return sql, args

    def delete(
        self,
        index_name: str,
        *,
        ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Delete these messages' vectors (ours and Mastra's), or a thread's."""
        mark = self._mark()
        for name in self._indexes():
            table, statements = self._table(name), list[tuple[str, list[Any]]]()
            owner, owner_args = "", []
            if resource_id is not None:
                owner, owner_args = f" AND {self._meta('resource_id')} = {mark}", [resource_id]
            for chunk in batches(ids):
                marks = ", ".join([mark] * len(chunk))
                statements.append(
                    (
                        f"DELETE FROM {table} WHERE {self._ours()} IN ({marks}){owner}",
                        [*chunk, *owner_args],
                    )
                )
            if thread_id is not None:
                statements.append(
                    (
                        f"DELETE FROM {table} WHERE {self._meta('thread_id')} = {mark}{owner}",
                        [thread_id, *owner_args],
                    )
                )
            if statements:
                self._sql(statements, write=True)

    def present(self, index_name: str, resource_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these messages have vectors: ours, or Mastra's for the row holding them."""
        rows = self._rows_of(message_ids)
        found: set[str] = set()
        mark = self._mark()
        for name in self._indexes():
            for chunk in batches(sorted(set(message_ids) | set(rows.values()))):
                marks = ", ".join([mark] * len(chunk))
                sql = (
                    f"SELECT DISTINCT {self._meta('message_id')}, {self._meta(OUR_ID)} FROM "
                    f"{self._table(name)} WHERE {self._meta('resource_id')} = {mark} AND "
                    f"({self._ours()} IN ({marks}) OR {self._meta('message_id')} IN ({marks}))"
                )
                for row_id, ours in self._sql([(sql, [resource_id, *chunk, *chunk])], write=False):
                    if ours is not None:
                        found.add(str(ours))
                    else:  # Mastra's vector of a whole row: every message of the row
                        found.update(m for m in message_ids if rows.get(m, m) == row_id)
        return found & set(message_ids)

    def count(self, index_name: str, dimension: int, resource_id: str | None = None) -> int:
        """How many vectors Mastra's index of `dimension` holds (of `resource_id`)."""
        name = self._index(dimension)
        if self._existing(name) is None:
            return 0
        sql, args = f"SELECT count(*) FROM {self._table(name)}", []
        if resource_id is not None:
            sql += f" WHERE {self._meta('resource_id')} = {self._mark()}"
            args.append(resource_id)
        return int(self._sql([(sql, args)], write=False)[0][0])

    def warm(self, index_name: str, resource_id: str) -> bool:
        """Nothing to load ahead."""
        return False

    def close(self) -> None:
        """End the libsql worker (a LibSQL file's); the next call starts another."""
        if self._worker is not None:
            self._worker.close()
