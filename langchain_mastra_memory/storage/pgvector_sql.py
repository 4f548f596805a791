"""The pgvector search shared by recall's vectors (`PgVectorStore`) and the store's items.

A part (a resource's pieces, a namespace prefix's items) small enough is scanned exactly; a
bigger one goes through the HNSW graph with pgvector's iterative scan, so a filter never
starves the result. Measured on 300k real chat pieces in one resource
(bench/pg_recall_bench.py): pgvector's usual graph, m 16 / ef_construction 128, found 0.92 of
the exact top-10 at ef_search 400 and 0.94 at 600; m 32 / 200 finds 0.95 / 0.96 (built 3.5x
slower), and 0.958 from ef_search 460 up (0.948 at 420), each step of 40 adding ~1 ms to the
slowest queries. An exact ``halfvec`` scan finds all of the float32 top-10 and costs ~0.5 µs a row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

EXACT_LIMIT = 12_000  # rows of a part scanned exactly rather than through the graph
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 200
EF_SEARCH = 460  # the beam (widened to the rows asked for; pgvector allows up to 1,000)
MAX_SCAN_TUPLES = 200_000  # how far an iterative scan may go to fill a filtered result


def vector_literal(vector: Sequence[float]) -> str:
    """pgvector's text form of a vector (4 significant digits: ``halfvec`` holds about 3)."""
    values = vector.tolist() if hasattr(vector, "tolist") else list(map(float, vector))
    return "[" + ",".join(["%.4g"] * len(values)) % tuple(values) + "]"


def rows_up_to(conn: Any, source: str, where: str, params: Sequence[Any], bound: int) -> int:
    """How many rows of `source` match `where`, counted no further than `bound`."""
    (count,) = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {source} WHERE {where} LIMIT {int(bound)}) AS s",
        params,
    ).fetchone()
    return int(count)


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
) -> str:
    """A query of the ``LIMIT %s`` rows of `source` under `where` nearest by `distance`, as
    `columns` and ``d``: an exact scan (an ``OFFSET 0`` fence keeps the planner off the graph),
    or the HNSW graph, whose settings are set on `conn` for the transaction (`beam`: how many
    rows are wanted; the graph's beam is at least that)."""
    if exact:
        return (
            f"SELECT * FROM (SELECT {columns}, {distance} AS d FROM {source} WHERE {where} "
            "OFFSET 0) AS s ORDER BY d LIMIT %s"
        )
    conn.execute(
        f"SET LOCAL hnsw.ef_search = {max(int(ef_search), min(int(beam), 1000))}; "
        "SET LOCAL hnsw.iterative_scan = relaxed_order; "
        f"SET LOCAL hnsw.max_scan_tuples = {MAX_SCAN_TUPLES}"
    )
    return f"SELECT {columns}, {distance} AS d FROM {source} WHERE {where} ORDER BY d LIMIT %s"
