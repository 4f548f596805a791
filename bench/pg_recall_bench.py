"""Benchmark: recall in one PostgreSQL (pgvector + keyword search) at scale, side by side.

Data shaped as the library stores it: real chat text (every LoCoMo dev turn, in order, cycled to
the size asked), saved through `PostgresStorage.save_messages` in threads of 400, each message
embedded piece by piece (`embedding_pieces`) with the real MiniLM model. A cycled copy of a turn
gets its pieces' vectors plus noise (sigma 0.04 per dimension, renormalised: cosine ~0.8 to the
original, as a paraphrase), so copies are new points near their turn, not duplicates.
Layouts: every message in ONE resource, or spread evenly over many resources. Queries:
LoCoMo's real questions.

Measured per query, BLAS pinned to one thread, caches cleared between repetitions (and the query
embeddings computed again outside the timing): search + neighbour windows through
`RecallIndex.recall` for ``vector``, ``keyword`` and ``hybrid`` on PostgreSQL (+ SQLite with
embedded Chroma on the same data with ``--sqlite``, + Qdrant local mode / Milvus Lite with
``--engines``), interleaved; each vector store's own top-10 search (pgvector, and Chroma,
Qdrant, Milvus when loaded) with its adapter's share (the time outside the engine's call),
beside langchain-postgres ``PGVector.similarity_search_with_score_by_vector`` filtered by
resource, on the same vectors (HNSW index added to its table too) with ``--peer``; ANN@10: the
share of an exact float32 numpy top-10 (pieces) found by each.

    python bench/pg_recall_bench.py --size 100000 --layout one --sqlite --peer
    python bench/pg_recall_bench.py --size 1000000 --layout spread --spread 1000 --peer
    (--dsn postgresql://...; without it a throwaway PostgreSQL 18 + pgvector is started)
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage
from rich.progress import track
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import turns_and_questions

from langchain_mastra_memory import (
    ChromaVectorStore,
    MilvusVectorStore,
    PostgresStorage,
    QdrantEdgeVectorStore,
    QdrantVectorStore,
    SQLiteStorage,
)
from langchain_mastra_memory.messages import embedding_pieces
from langchain_mastra_memory.recall.embedders import EMBEDDING_CACHE, MiniLMEmbeddings
from langchain_mastra_memory.recall.engines.pgvector import PgVectorStore
from langchain_mastra_memory.recall.index import RecallIndex, RecallOptions
from langchain_mastra_memory.recall.vector import VectorRecord
from langchain_mastra_memory.storage.postgres.pgvector import HNSW_EF_CONSTRUCTION, HNSW_M

MODES = ("vector", "keyword", "hybrid")
PER_THREAD = 400
NOISE = 0.04  # per dimension: a copy sits at cosine ~0.8 from its turn, as a paraphrase does
CACHE = Path(tempfile.gettempdir()) / "lmm-locomo-pieces.npz"
INDEX = "bench_pieces"  # the recall index every backend holds the pieces under


def piece_vectors(
    texts: list[str], embedder: MiniLMEmbeddings, copies: str, size: int
) -> dict[str, np.ndarray]:
    """Each distinct piece's embedding (cached on disk between runs)."""
    pieces = sorted({p for t in texts for p in embedding_pieces(HumanMessage(t))})
    cache = CACHE if copies == "noise" else CACHE.with_name(f"lmm-reworded-{size}.npz")
    if cache.exists():
        saved = np.load(cache, allow_pickle=False)
        if list(saved["pieces"]) == pieces:
            return dict(zip(pieces, saved["vectors"], strict=True))
    print(f"embedding {len(pieces)} distinct pieces ...", file=sys.stderr)
    vectors = np.concatenate(
        [
            np.asarray(embedder.embed_documents(pieces[start : start + 4096]), dtype=np.float32)
            for start in track(range(0, len(pieces), 4096), description="embedding")
        ]
    )
    np.savez(cache, pieces=np.asarray(pieces), vectors=vectors)
    return dict(zip(pieces, vectors, strict=True))


def reworded(text: str, copy: int, vocabulary: list[str]) -> str:
    """A new message from a real one: about a third of its longer words swapped for other words
    of the conversations (a deterministic function of the copy number)."""
    rng = random.Random(f"{copy}:{text}")  # a str seed is stable across runs
    return " ".join(
        rng.choice(vocabulary) if len(w) >= 4 and w.isalpha() and rng.random() < 0.35 else w
        for w in text.split(" ")
    )


class Data:
    """The messages, their owners and threads, and every piece's vector (float32).

    Copies beyond the real turns are either `reworded` (new text, embedded for real: the model's
    own geometry; costs ~1 s per 800 pieces once, then cached) or the turn's vectors plus
    noise (`NOISE`; free, but the noise fills all 384 dimensions, which makes a one-resource
    graph search look worse than on real text — used where each resource is searched exactly)."""

    def __init__(
        self, size: int, layout: str, spread: int, embedder: MiniLMEmbeddings, copies: str
    ) -> None:
        turns, self.questions = turns_and_questions()
        resources = 1 if layout == "one" else spread
        share = -(-size // resources)
        rng = np.random.default_rng(0)
        self.owner = [f"r{i // share}" for i in range(size)]
        self.thread = [f"{self.owner[i]}-t{(i % share) // PER_THREAD}" for i in range(size)]
        self.user = [turns[i % len(turns)][1] for i in range(size)]
        self.text = [turns[i % len(turns)][0] for i in range(size)]
        if copies == "reworded":
            vocabulary = sorted(
                {w for t, _ in turns for w in t.split() if len(w) >= 4 and w.isalpha()}
            )
            self.text = [
                t if i < len(turns) else reworded(t, i // len(turns), vocabulary)
                for i, t in enumerate(self.text)
            ]
        base = piece_vectors(
            self.text if copies == "reworded" else [t for t, _ in turns], embedder, copies, size
        )
        self.pieces: list[list[np.ndarray]] = []
        for i in range(size):
            vectors = [base[p] for p in embedding_pieces(HumanMessage(self.text[i]))]
            if i >= len(turns) and copies == "noise":
                vectors = [
                    v + NOISE * rng.standard_normal(v.size).astype(np.float32) for v in vectors
                ]
                vectors = [v / np.linalg.norm(v) for v in vectors]
            self.pieces.append(vectors)
        self.resources = sorted(set(self.owner), key=lambda r: int(r[1:]))

    def threads(self) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        for i, thread in enumerate(self.thread):
            found.setdefault(thread, []).append(i)
        return found


def load(storage, vector, name: str, data: Data, bulk: bool, graph: bool = True) -> dict[int, str]:  # type: ignore[no-untyped-def]
    """Store every message and its vectors; message index -> id."""
    ids: dict[int, str] = {}
    records: list[VectorRecord] = []
    started = time.perf_counter()
    for thread, rows in data.threads().items():
        owner = data.owner[rows[0]]
        storage.create_thread(thread_id=thread, resource_id=owner)
        messages = [(HumanMessage if data.user[i] else AIMessage)(data.text[i]) for i in rows]
        stored = storage.save_messages(messages, thread_id=thread, resource_id=owner)
        for i, s in zip(rows, stored, strict=True):
            ids[i] = s.message.id or ""
            records += [
                VectorRecord(ids[i], v, thread, owner, "user", 0.0, piece=n)
                for n, v in enumerate(data.pieces[i])
            ]
    print(f"  messages stored in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    started = time.perf_counter()
    if bulk and isinstance(vector, PgVectorStore):  # load, then build the graph once
        vector.upsert(name, records[:1])
        with vector.storage._transaction(write=True) as conn:
            conn.execute(f"DROP INDEX IF EXISTS {vector._tables[name][0]}_hnsw")
    edge = bulk and isinstance(vector, QdrantEdgeVectorStore)  # its graphs once, at the end
    if edge:
        every, vector.optimize_after = vector.optimize_after, len(records) + 1
    for start in range(0, len(records), 5000):
        vector.upsert(name, records[start : start + 5000])
    if bulk and graph and isinstance(vector, PgVectorStore):
        build_graph(vector, name)
    if edge:
        vector.optimize_after, built = every, time.perf_counter()
        vector.optimize(name)
        print(f"  graphs built in {time.perf_counter() - built:.0f} s", file=sys.stderr)
    storage.mark_embedded(list(ids.values()))
    print(
        f"  {len(records)} vectors written in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    if isinstance(storage, PostgresStorage):
        with storage._transaction(write=True) as conn:
            conn.execute("ANALYZE")  # what autovacuum does after a load
    return ids


def build_graph(vector: PgVectorStore, name: str) -> None:
    """The HNSW index of `name`'s table, as `PgVectorStore` makes it, built in one pass."""
    table = vector._tables[name][0]
    ops = f'"{vector.extension_schema}".{vector.kind}_cosine_ops'
    started = time.perf_counter()
    with vector.storage._transaction(write=True) as conn:
        conn.execute("SET LOCAL maintenance_work_mem = '4GB'")
        conn.execute("SET LOCAL max_parallel_maintenance_workers = 2")
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (embedding {ops}) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
        )
    print(f"  graph built in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def stored_ids(storage, data: Data) -> dict[int, str]:  # type: ignore[no-untyped-def]
    """Message index -> id, read back from a previous run's storage."""
    ids: dict[int, str] = {}
    for thread, rows in data.threads().items():
        stored = storage.list_messages(thread)
        assert len(stored) == len(rows), f"{thread}: {len(stored)} stored, {len(rows)} expected"
        ids.update({i: s.message.id or "" for i, s in zip(rows, stored, strict=True)})
    return ids


class Fixed(Embeddings):
    """The peer's embedder: the query vector computed beforehand (embedding excluded)."""

    def __init__(self) -> None:
        self.vector: list[float] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def embed_query(self, text: str) -> list[float]:
        return self.vector


def peer_store(dsn: str, data: Data, ids: dict[int, str], reuse: bool, graph: bool):  # type: ignore[no-untyped-def]
    from langchain_postgres import PGVector

    url = dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    store = PGVector(
        embeddings=Fixed(), collection_name=f"bench_{len(data.text)}", connection=url,
        embedding_length=384, use_jsonb=True,
    )  # fmt: skip
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        loaded = conn.execute(
            "SELECT count(*) FROM public.langchain_pg_embedding e JOIN "
            "public.langchain_pg_collection c ON c.uuid = e.collection_id WHERE c.name = %s",
            (store.collection_name,),
        ).fetchone()[0]
    if reuse and loaded == sum(len(p) for p in data.pieces):
        return store

    with psycopg.connect(dsn, autocommit=True) as conn:  # one collection; the graph built after
        conn.execute("DELETE FROM public.langchain_pg_collection")
        store.create_collection()
        conn.execute("DROP INDEX IF EXISTS public.peer_hnsw")
    started = time.perf_counter()
    # its own table and format, filled with COPY (PGVector.add_embeddings takes ~10 min a million)
    from pgvector.psycopg import register_vector
    from psycopg.types.json import Jsonb

    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        (collection,) = conn.execute(
            "SELECT uuid FROM public.langchain_pg_collection WHERE name = %s",
            (store.collection_name,),
        ).fetchone()
        columns = "id, collection_id, embedding, document, cmetadata"
        with conn.cursor().copy(
            f"COPY public.langchain_pg_embedding ({columns}) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["varchar", "uuid", "vector", "varchar", "jsonb"])
            for i in range(len(data.text)):
                meta = Jsonb({"resource_id": data.owner[i], "thread_id": data.thread[i]})
                for n, v in enumerate(data.pieces[i]):
                    key = ids[i] if n == 0 else f"{ids[i]}#{n}"
                    copy.write_row((key, collection, v, data.text[i], meta))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '4GB'")
        conn.execute("SET max_parallel_maintenance_workers = 2")
        if graph:
            conn.execute(
                "CREATE INDEX IF NOT EXISTS peer_hnsw ON public.langchain_pg_embedding "
                "USING hnsw (embedding vector_cosine_ops)"
            )
        conn.execute("ANALYZE public.langchain_pg_embedding")
    print(f"  peer loaded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return store


class EngineClock:
    """Seconds spent inside an engine's own search calls (Qdrant's `query_points`, Milvus's
    `search`, psycopg's `execute` for pgvector), so a top-10 query's time splits into the
    engine's and the adapter's own (everything else: building the filter, converting hits)."""

    def __init__(self) -> None:
        self.spent = 0.0

    def wrap(self, call):  # type: ignore[no-untyped-def]
        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.spent += time.perf_counter() - started

        return timed

    def watch(self, engine: str, store) -> None:  # type: ignore[no-untyped-def]
        """Time `store`'s engine calls from now on."""
        if engine == "qdrant":
            store.client.query_points = self.wrap(store.client.query_points)
        elif engine == "qdrant-edge":  # the engine's query, inside the store's call
            call, timed = store._call, self.wrap(store._call)
            store._call = lambda what, *a, **k: (timed if what == "query" else call)(what, *a, **k)
        elif engine == "chroma":  # Chroma's query, or the in-memory exact scan it uses instead
            store._call = self.wrap(store._call)
            if store._exact is not None:
                store._exact.search = self.wrap(store._exact.search)
        elif engine == "milvus":
            store.client.search = self.wrap(store.client.search)
        else:  # every statement of the query's connection (the search and any count)
            import psycopg

            psycopg.Connection.execute = self.wrap(psycopg.Connection.execute)  # type: ignore[method-assign]


def top10(
    timings: dict[str, list[float]], label: str, clock: EngineClock, store, vector, owner: str
) -> None:  # type: ignore[no-untyped-def]
    """Time one top-10 search, and the adapter's share of it (outside the engine's calls)."""
    clock.spent = 0.0
    started = time.perf_counter()
    store.query(INDEX, vector, top_k=10, resource_id=owner)
    took = time.perf_counter() - started
    timings.setdefault(f"{label} top-10", []).append(took)
    timings.setdefault(f"{label} adapter's share", []).append(took - clock.spent)


def share(found: set[str], best: dict[str, float], threshold: float, wanted: int) -> float:
    """ANN@10 of `found` messages: those whose best piece reaches the threshold, of `wanted`."""
    return min(1.0, sum(best.get(m, -1.0) >= threshold for m in found) / wanted)


def pct(values: list[float]) -> tuple[float, float]:
    return float(np.percentile(values, 50)), float(np.percentile(values, 95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--layout", choices=("one", "spread"), default="one")
    parser.add_argument("--spread", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--sqlite", action="store_true", help="the same data in SQLite + Chroma")
    parser.add_argument(
        "--engines", nargs="*", default=[], choices=("qdrant", "qdrant-edge", "milvus"),
        help="the same data in SQLite + Qdrant local mode / Qdrant Edge (Qdrant's engine "
        "in-process) / Milvus Lite (embedded, no server)",
    )  # fmt: skip
    parser.add_argument(
        "--peer", nargs="?", const="hnsw", choices=("hnsw", "plain"),
        help="langchain-postgres PGVector beside (with an HNSW index added, or as it ships)",
    )  # fmt: skip
    parser.add_argument(
        "--bulk", action="store_true",
        help="build the HNSW graph after loading (pgvector; Qdrant Edge's graphs likewise)",
    )  # fmt: skip
    parser.add_argument(
        "--reuse", action="store_true", help="measure the data a previous run left (same --size)"
    )
    parser.add_argument(
        "--copies", choices=("reworded", "noise"), default="reworded",
        help="how messages beyond the real turns are made (see Data)",
    )  # fmt: skip
    parser.add_argument(
        "--no-graph", action="store_true",
        help="with --bulk: no HNSW index (every resource small enough to be searched exactly)",
    )  # fmt: skip
    parser.add_argument("--load-only", action="store_true", help="load (for --reuse), no timing")
    parser.add_argument(
        "--chroma-graph", action="store_true",
        help="Chroma searched through its HNSW graph only (exact_limit=0), never in memory",
    )  # fmt: skip
    parser.add_argument(
        "--dir", type=Path, default=None,
        help="where the embedded engines keep their data (default: a new temporary folder); "
        "with --reuse, a previous run's data there is measured again",
    )  # fmt: skip
    parser.add_argument(
        "--warm",
        action="store_true",
        help="one untimed pass over the queries first (a resource in use, its pages cached)",
    )
    parser.add_argument("--ef-search", type=int, default=None, help="PgVectorStore's HNSW beam")
    parser.add_argument("--hnsw-ef", type=int, default=None, help="Qdrant Edge's HNSW beam")
    parser.add_argument(
        "--shared-buffers", default="2GB",
        help="the page cache of the PostgreSQL the bench starts (without --dsn): room for the "
        "HNSW index, as pgvector advises and a deployment sizes it",
    )  # fmt: skip
    args = parser.parse_args()
    if args.dsn is None:
        from langchain_mastra_memory.testing import throwaway_postgres

        args.dsn = throwaway_postgres(shared_buffers=args.shared_buffers)
    embedder = MiniLMEmbeddings()
    data = Data(args.size, args.layout, args.spread, embedder, args.copies)
    pieces = sum(len(p) for p in data.pieces)
    print(
        f"{args.size} messages, {pieces} pieces, {len(data.resources)} resources", file=sys.stderr
    )
    schema = f"bench_{args.layout}_{args.size}_{args.copies}"
    pg = PostgresStorage(args.dsn, schema=schema)
    if not args.reuse:
        pg.drop_schema()
        pg = PostgresStorage(args.dsn, schema=schema)
    extra = {} if args.ef_search is None else {"ef_search": args.ef_search}
    pg_vector = PgVectorStore(pg, **extra)
    backends: dict[str, tuple] = {}
    name = INDEX
    if args.reuse:
        ids = stored_ids(pg, data)
        pg_vector.query(name, [1.0] * 384, top_k=1, resource_id="r0")  # registers the table
        if not args.no_graph:
            build_graph(pg_vector, name)  # if an interrupted load left it out
        with pg._transaction(write=True) as conn:  # (only what is not marked: no rewrite)
            conn.execute("UPDATE memory_messages SET embedded = TRUE WHERE NOT embedded")
            conn.execute("ANALYZE")
    else:
        ids = load(pg, pg_vector, name, data, args.bulk, not args.no_graph)
    backends["postgres"] = (pg, pg_vector)
    tmp = args.dir or Path(tempfile.mkdtemp())
    tmp.mkdir(parents=True, exist_ok=True)

    def embedded(storage, vector) -> dict[int, str]:  # type: ignore[no-untyped-def]
        if args.reuse and storage.list_threads(resource_id=data.resources[0]):
            return stored_ids(storage, data)  # (loaded whole: --load-only ran to its end)
        return load(storage, vector, name, data, args.bulk)

    if args.sqlite:
        lite = SQLiteStorage(tmp / "bench.db")
        lite_vector = ChromaVectorStore(
            path=tmp / "chroma", **({"exact_limit": 0} if args.chroma_graph else {})
        )
        lite_ids = embedded(lite, lite_vector)
        assert len(lite_ids) == len(ids)
        backends["sqlite"] = (lite, lite_vector)
    as_pg: dict[str, dict[str, str]] = {}  # each engine's message ids -> PostgreSQL's
    if args.sqlite:
        as_pg["chroma"] = {lite_ids[i]: ids[i] for i in ids}
    for engine in args.engines:  # embedded: numpy (Qdrant local), Qdrant's engine, FAISS (Milvus)
        store = (
            QdrantVectorStore(tmp / "qdrant")
            if engine == "qdrant"
            else QdrantEdgeVectorStore(
                tmp / "qdrant-edge", **({"hnsw_ef": args.hnsw_ef} if args.hnsw_ef else {})
            )
            if engine == "qdrant-edge"
            else MilvusVectorStore(tmp / "milvus-vectors.db")
        )
        engine_storage = SQLiteStorage(tmp / f"{engine}.db")
        engine_ids = embedded(engine_storage, store)
        assert len(engine_ids) == len(ids)
        as_pg[engine] = {engine_ids[i]: ids[i] for i in ids}  # its own ids (another storage)
        backends[engine] = (engine_storage, store)
    peer = peer_store(args.dsn, data, ids, args.reuse, args.peer == "hnsw") if args.peer else None
    if args.load_only:
        return
    indexes = {
        (backend, mode): RecallIndex(
            storage, vector, embedder, options=RecallOptions(mode=mode, index_name=name)
        )
        for backend, (storage, vector) in backends.items()
        for mode in MODES
    }
    rng = random.Random(1)
    questions = rng.sample(data.questions, min(args.queries, len(data.questions)))
    owners = [rng.choice(data.resources) for _ in questions]
    first_thread = {}
    for i, thread in enumerate(data.thread):
        first_thread.setdefault(data.owner[i], thread)
    timings: dict[str, list[float]] = {}
    engines = [*args.engines, *(["chroma"] if args.sqlite else [])]
    stores = {
        "pgvector": pg_vector,
        **{e: backends["sqlite" if e == "chroma" else e][1] for e in engines},
    }
    clocks = {label: EngineClock() for label in stores}
    if args.sqlite:  # as an app warms its users' partitions at start (a hot one loads anyway)
        started = time.perf_counter()
        held = [backends["sqlite"][1].warm(name, owner) for owner in dict.fromkeys(owners)]
        print(
            f"  Chroma: {sum(held)} of {len(held)} partitions held for exact search, loaded in "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    with threadpool_limits(limits=1):
        if args.warm:
            for q, owner in zip(questions, owners, strict=True):
                for index in indexes.values():
                    index.recall(q, resource_id=owner, thread_id=first_thread[owner], exclude=set())
        for label, store in stores.items():
            clocks[label].watch(label, store)
        for _rep in range(args.reps):
            EMBEDDING_CACHE.clear()
            pg_vector._counts.clear()
            pg._text = type(pg._text)(pg.schema)
            vectors = {q: embedder.embed_query(q) for q in questions}
            for index in indexes.values():  # served from the cache while timed
                for q in questions:
                    index.embedder.embed_query(q)  # type: ignore[union-attr]
            for n, (q, owner) in enumerate(zip(questions, owners, strict=True)):
                # recalls and engines' top-10s in one rotation: each first as often, so none
                # always finds the pages the one before it read for the same query
                turn: list[tuple[str, Any]] = [*indexes.items(), *stores.items()]
                turn = turn[n % len(turn) :] + turn[: n % len(turn)]
                for key, side in turn:
                    if isinstance(key, str):  # an engine's own top-10
                        top10(timings, key, clocks[key], side, vectors[q], owner)
                        continue
                    started = time.perf_counter()
                    side.recall(q, resource_id=owner, thread_id=first_thread[owner], exclude=set())
                    timings.setdefault(f"{key[0]} {key[1]}", []).append(
                        time.perf_counter() - started
                    )
                if peer is not None:
                    peer.embeddings.vector = vectors[q]
                    started = time.perf_counter()
                    peer.similarity_search_with_score_by_vector(
                        vectors[q], k=10, filter={"resource_id": {"$eq": owner}}
                    )
                    timings.setdefault("langchain-postgres top-10", []).append(
                        time.perf_counter() - started
                    )
    # ANN@10 against an exact float32 scan of the resource's pieces, counted as ann-benchmarks
    # does: a returned message is right when its best piece is within 1e-3 of the 10th exact
    # piece (equal pieces, "Thanks!" in many turns, tie; which of them is returned is arbitrary)
    by_owner: dict[str, tuple[list[str], np.ndarray]] = {}
    ann: dict[str, list[float]] = {"pgvector": [], "langchain-postgres": []}
    for q, owner in list(zip(questions, owners, strict=True))[:100]:
        if owner not in by_owner:
            rows = [i for i in range(len(data.owner)) if data.owner[i] == owner]
            keys = [
                ids[i] if n == 0 else f"{ids[i]}#{n}"
                for i in rows
                for n in range(len(data.pieces[i]))
            ]
            by_owner[owner] = (keys, np.stack([v for i in rows for v in data.pieces[i]]))
        keys, matrix = by_owner[owner]
        qv = np.asarray(vectors[q], dtype=np.float32)
        scores = matrix @ qv
        order = np.argsort(-scores)
        wanted = len({keys[j].split("#", 1)[0] for j in order[:10]})  # messages of the top 10
        best: dict[str, float] = {}
        for key, score in zip(keys, scores.tolist(), strict=True):
            message = key.split("#", 1)[0]
            best[message] = max(best.get(message, -1.0), score)
        threshold = float(scores[order[9]]) - 1e-3

        found = pg_vector.query(name, vectors[q], top_k=10, resource_id=owner)
        assert found
        ann["pgvector"].append(share({h.message_id for h in found}, best, threshold, wanted))
        for engine in engines:
            hits = stores[engine].query(name, vectors[q], top_k=10, resource_id=owner)
            got = {as_pg[engine].get(h.message_id, "") for h in hits}
            ann.setdefault(engine, []).append(share(got, best, threshold, wanted))
        if peer is not None:
            hits = peer.similarity_search_with_score_by_vector(
                vectors[q], k=10, filter={"resource_id": {"$eq": owner}}
            )
            got = {str(d.id).split("#", 1)[0] for d, _ in hits}
            ann["langchain-postgres"].append(share(got, best, threshold, wanted))
    print(
        f"\n## {args.size:,} messages ({pieces:,} pieces), layout {args.layout}"
        f" ({len(data.resources)} resources), {len(questions)} queries x {args.reps}\n"
    )
    with pg._transaction(write=False) as conn:  # what the page cache must hold
        (buffers,) = conn.execute("SHOW shared_buffers").fetchone()
        (graph,) = conn.execute(
            "SELECT pg_size_pretty(coalesce(sum(pg_relation_size(indexrelid)), 0)) "
            "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname LIKE 'memory_vectors_%_hnsw'"
        ).fetchone()
    print(f"PostgreSQL shared_buffers {buffers}; HNSW index {graph}\n")
    print("| what | p50 ms | p95 ms |\n|---|---:|---:|")
    for key, values in timings.items():
        p50, p95 = pct(values)
        print(f"| {key} | {p50 * 1000:.1f} | {p95 * 1000:.1f} |")
    for key, values in ann.items():
        if values:
            print(f"\nANN@10 {key}: {np.mean(values):.3f}")


if __name__ == "__main__":
    main()
