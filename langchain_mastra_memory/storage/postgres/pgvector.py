"""The pgvector search shared by recall's vectors (`PgVectorStore`) and the store's items.

A part (a resource's pieces, a namespace prefix's items) small enough is scanned exactly; a
bigger one goes through the HNSW graph with pgvector's iterative scan, so a filter never
starves the result. Measured on 300k real chat pieces in one resource
(bench/pg_recall_bench.py): pgvector's usual graph, m 16 / ef_construction 128, found 0.92 of
the exact top-10 at ef_search 400 and 0.94 at 600; m 32 / 200 finds 0.95 / 0.96 (built 3.5x
slower), and 0.958 from ef_search 460 up (0.948 at 420), each step of 40 adding ~1 ms to the
slowest queries. An exact ``halfvec`` scan finds all of the float32 top-10 and costs ~0.5 µs a row.

Older pgvector (0.5 to 0.7, still common on managed PostgreSQL) has no iterative scan: the graph
returns its ``ef_search`` nearest rows and the filter is applied after, so a filtered search can
come back short. There the beam is the widest pgvector allows (`OLD_EF_SEARCH`), a part too
small a share of the table for that beam to hold `beam` of its rows is scanned exactly, and a
graph search that still comes back short is run again exactly: never a silently short result.
Before 0.7 there is no ``halfvec``: vectors are stored as ``vector`` (float32).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

EXACT_LIMIT = 12_000  # rows of a part scanned exactly rather than through the graph
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 200
EF_SEARCH = 460  # the beam (widened to the rows asked for; pgvector allows up to 1,000)
MAX_SCAN_TUPLES = 200_000  # how far an iterative scan may go to fill a filtered result
OLD_EF_SEARCH = 1000  # the beam without an iterative scan (pgvector < 0.8): its maximum
OLD_SHARE_MARGIN = 2  # without an iterative scan, the beam must hold this many times the rows


@dataclass(frozen=True)
class PgVectorFeatures:
    """What the installed pgvector can do, from its version (``extversion``).

    Examples:
        >>> PgVectorFeatures.parse("0.6.2").iterative_scan
        False
        >>> PgVectorFeatures.parse("0.8.1").halfvec
        True
    """

    version: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> PgVectorFeatures:
        return cls(tuple(int(p) for p in text.split(".") if p.isdigit()))

    @property
    def hnsw(self) -> bool:
        """HNSW indexes (0.5)."""
        return self.version >= (0, 5)

    @property
    def halfvec(self) -> bool:
        """The half-precision ``halfvec`` type (0.7)."""
        return self.version >= (0, 7)

    @property
    def iterative_scan(self) -> bool:
        """``hnsw.iterative_scan``: a filtered graph search goes on until it has its rows (0.8)."""
        return self.version >= (0, 8)

    def __str__(self) -> str:
        return ".".join(map(str, self.version))


def pgvector_features(conn: Any) -> PgVectorFeatures | None:
    """The installed pgvector's features in `conn`'s database, or None without the extension."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return None if row is None else PgVectorFeatures.parse(str(row[0]))


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector (4 significant digits: ``halfvec`` holds about 3)."""
    values = vector.tolist() if hasattr(vector, "tolist") else list(map(float, vector))
    return "[" + ",".join(["%.4g"] * len(values)) % tuple(values) + "]"


def binary_vector(data: bytes) -> Any:
    """A ``vector`` column read in binary (a cursor with ``binary=True``; pgvector's
    ``vector_send``: dimension and a reserved int16, then big-endian float32s) as a float32
    array: the stored values exactly, with no text to parse (450 vectors of 384: ~0.3 ms where
    their text took ~30 ms)."""
    import numpy as np

    return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)


def rows_up_to(conn: Any, source: str, where: str, params: Sequence[Any], bound: int) -> int:
    """How many rows of `source` match `where`, counted no further than `bound`."""
    (count,) = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {source} WHERE {where} LIMIT {int(bound)}) AS s",
        params,
    ).fetchone()
    return int(count)


def table_rows(conn: Any, table: str) -> int:
    """The planner's estimate of `table`'s rows (counted when it was never analyzed)."""
    (estimate,) = conn.execute(
        "SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(%s)", (table,)
    ).fetchone()
    if estimate is not None and estimate >= 0:
        return int(estimate)
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def scan_exactly(
    conn: Any,
    *,
    table: str,
    source: str,
    where: str,
    params: Sequence[Any],
    beam: int,
    exact_limit: int,
    iterative: bool,
) -> bool:
    """Whether the part of `table` under `where` is better scanned exactly than through the
    graph: it has at most `exact_limit` rows, or (without an iterative scan) it is too small a
    share of the table for `OLD_EF_SEARCH` graph rows to hold `beam` of its own."""
    bound = exact_limit
    if not iterative:
        needed = OLD_SHARE_MARGIN * int(beam) * table_rows(conn, table)
        bound = max(bound, -(-needed // OLD_EF_SEARCH))
    return rows_up_to(conn, source, where, params, bound + 1) <= bound


def nearest_sql(
    conn: Any,
    *,
    source: str,
    columns: str,
    distance: str,
    where: str,
    exact: bool,
    beam: int,
    ef_search: int = EF_SEARCH,
    iterative: bool = True,
) -> str:
    """A query of the ``LIMIT %s`` rows of `source` under `where` nearest by `distance`, as
    `columns` and ``d``: an exact scan (an ``OFFSET 0`` fence keeps the planner off the graph),
    or the HNSW graph, whose settings are set on `conn` for the transaction (`beam`: how many
    rows are wanted; the graph's beam is at least that; without `iterative` scan, the widest)."""
    if exact:
        return (
            f"SELECT * FROM (SELECT {columns}, {distance} AS d FROM {source} WHERE {where} "
            "OFFSET 0) AS s ORDER BY d LIMIT %s"
        )
    if iterative:
        conn.execute(
            f"SET LOCAL hnsw.ef_search = {max(int(ef_search), min(int(beam), 1000))}; "
            "SET LOCAL hnsw.iterative_scan = relaxed_order; "
            f"SET LOCAL hnsw.max_scan_tuples = {MAX_SCAN_TUPLES}"
        )
    else:
        conn.execute(f"SET LOCAL hnsw.ef_search = {OLD_EF_SEARCH}")
    return f"SELECT {columns}, {distance} AS d FROM {source} WHERE {where} ORDER BY d LIMIT %s"


def nearest_rows(
    conn: Any,
    run: Callable[[str], list[Any]],
    *,
    wanted: int,
    exact: bool,
    iterative: bool,
    **query: Any,
) -> list[Any]:
    """`run(nearest_sql(...))`'s rows; without an iterative scan, a graph search that comes back
    with fewer than `wanted` rows is run again as an exact scan (never a silently short result)."""
    rows = run(nearest_sql(conn, exact=exact, iterative=iterative, **query))
    if exact or iterative or len(rows) >= wanted:
        return rows
    return run(nearest_sql(conn, exact=True, iterative=iterative, **query))
