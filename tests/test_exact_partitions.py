"""Exact search of small partitions in memory: the same hits as a brute-force scan of what
Chroma holds, through every write, and never a partition's stale or foreign vectors."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_mastra_memory.recall.engines.chroma import ChromaVectorStore, partition_name
from langchain_mastra_memory.recall.exact.partitions import INT8, ExactPartitions, Loaded
from langchain_mastra_memory.recall.vector import VectorRecord

DIM = 8


def record(message_id: str, vector, thread: str = "t1", owner: str = "alice", piece: int = 0):
    return VectorRecord(message_id, list(map(float, vector)), thread, owner, "user", 0.0, piece)


def truth(store: ChromaVectorStore, owner: str, query, k: int, thread: str | None = None):
    """Brute force over what Chroma itself holds for `owner`: (message id, score) pairs."""
    col = store._existing(partition_name("idx", owner))
    if col is None:
        return []
    page = col.get(include=["embeddings", "metadatas"])
    rows = [
        (vector_id.split("#")[0], np.asarray(vector, dtype=np.float64))
        for vector_id, vector, meta in zip(
            page["ids"], page["embeddings"], page["metadatas"], strict=True
        )
        if thread is None or meta["thread_id"] == thread
    ]
    q = np.asarray(query, dtype=np.float64) / np.linalg.norm(query)
    scored = sorted(((m, float(v @ q / np.linalg.norm(v))) for m, v in rows), key=lambda r: -r[1])
    return [(m, round(s, 4)) for m, s in scored[:k]]


def hits(store: ChromaVectorStore, owner: str, query, k: int, thread: str | None = None):
    found = store.query("idx", query, top_k=k, resource_id=owner, thread_id=thread)
    return [(h.message_id, round(h.score, 4)) for h in found]


writes = st.lists(
    st.one_of(
        st.tuples(
            st.just("upsert"),
            st.integers(0, 11),  # message
            st.sampled_from(["t1", "t2"]),
            st.lists(st.floats(-1, 1, allow_nan=False), min_size=DIM, max_size=DIM),
        ),
        st.tuples(st.just("delete"), st.integers(0, 11)),
        st.tuples(st.just("drop_thread"), st.sampled_from(["t1", "t2"])),
    ),
    max_size=25,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=writes, after=writes, seed=st.integers(0, 1000))
def test_exact_hits_match_chroma_through_any_writes(before, after, seed) -> None:
    store = ChromaVectorStore(exact_min=1)
    store.upsert("idx", [record("seed", np.ones(DIM), owner="bob")])  # another resource

    def apply(ops) -> None:
        for op in ops:
            if op[0] == "upsert":
                _, n, thread, vector = op
                if np.linalg.norm(vector) > 1e-3:
                    store.upsert("idx", [record(f"m{n}", vector, thread)])
            elif op[0] == "delete":
                store.delete("idx", ids=[f"m{op[1]}"], resource_id="alice")
            else:
                store.delete("idx", thread_id=op[1], resource_id="alice")

    apply(before)
    loaded = store.warm("idx", "alice")
    col = store._existing(partition_name("idx", "alice"))
    assert loaded == (col is not None)  # made by this store: held from its first write
    apply(after)
    query = np.random.default_rng(seed).normal(size=DIM)
    for thread in (None, "t1"):
        got, want = hits(store, "alice", query, 5, thread), truth(store, "alice", query, 5, thread)
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=2e-4)
        cut = want[-1][1] + 1e-3 if want else 0.0
        assert {m for m, s in got if s > cut} == {m for m, s in want if s > cut}  # ties aside
        assert all(m != "seed" for m, _ in got)  # bob's vector never reaches alice


def test_a_partition_is_searched_exactly_after_it_is_hot() -> None:
    store = ChromaVectorStore()  # the default: a conversation's few pieces are held too
    rng = np.random.default_rng(0)
    store.upsert("idx", [record(f"m{i}", rng.normal(size=DIM)) for i in range(50)])
    key = str(store._existing(partition_name("idx", "alice")).id)
    assert store._exact is not None and key in store._exact._loaded  # made here: held at once
    store._exact._loaded.clear()  # as after a restart: loaded once it is hot
    query = rng.normal(size=DIM)
    first = hits(store, "alice", query, 5)  # HNSW; the partition is not hot yet
    hits(store, "alice", query, 5)  # the second search starts a background load
    for _ in range(200):
        if key in store._exact._loaded:
            break
        threading.Event().wait(0.01)
    assert key in store._exact._loaded
    assert [m for m, _ in hits(store, "alice", query, 5)] == [m for m, _ in first]


def test_pieces_of_one_message_and_their_deletion() -> None:
    store = ChromaVectorStore(exact_min=1)
    store.upsert(
        "idx", [record("m1", [1, 0, 0, 0, 0, 0, 0, 0]), record("m2", [0, 1, 0, 0, 0, 0, 0, 0])]
    )
    store.warm("idx", "alice")
    store.upsert("idx", [record("m2", [0.9, 0.1, 0, 0, 0, 0, 0, 0], piece=1)])
    found = store.query("idx", [1, 0, 0, 0, 0, 0, 0, 0], top_k=3, resource_id="alice")
    assert [h.message_id for h in found] == ["m1", "m2", "m2"]  # a hit per piece, id unsplit
    store.delete("idx", ids=["m2"], resource_id="alice")  # every piece of m2 goes
    found = store.query("idx", [1, 0, 0, 0, 0, 0, 0, 0], top_k=3, resource_id="alice")
    assert [h.message_id for h in found] == ["m1"]


def test_a_partition_over_the_limit_stays_in_chroma() -> None:
    store = ChromaVectorStore(exact_limit=3, exact_min=1)
    store.upsert("idx", [record(f"m{i}", np.eye(DIM)[i]) for i in range(4)])
    assert store.warm("idx", "alice") is False
    assert store._exact is not None and store._exact._loaded == {}
    small = ChromaVectorStore(exact_limit=3, exact_min=1)
    small.upsert("idx", [record(f"m{i}", np.eye(DIM)[i]) for i in range(3)])
    assert small.warm("idx", "alice") is True
    small.upsert("idx", [record("m3", np.eye(DIM)[3])])  # grows past the limit: dropped
    assert small._exact is not None and small._exact._loaded == {}
    assert [
        h.message_id for h in small.query("idx", np.eye(DIM)[3], top_k=1, resource_id="alice")
    ] == ["m3"]


def test_a_partition_under_the_minimum_stays_in_chroma() -> None:
    store = ChromaVectorStore(exact_min=5)
    store.upsert("idx", [record(f"m{i}", np.eye(DIM)[i]) for i in range(4)])
    assert store.warm("idx", "alice") is False  # HNSW is fast enough on so few
    store.upsert("idx", [record("m4", np.eye(DIM)[4])])  # it grew: asked again
    assert store.warm("idx", "alice") is True


def test_exact_search_is_off_for_a_server_client_and_on_request() -> None:
    assert ChromaVectorStore(exact_limit=0)._exact is None
    assert ChromaVectorStore(exact_limit=0).warm("idx", "alice") is False


def loaded(ids, vectors, threads) -> Loaded:
    return Loaded(list(ids), vectors, list(ids), list(threads))


def test_writes_during_a_load_are_replayed_in_order() -> None:
    release = threading.Event()
    snapshot = loaded(["a", "b"], [[1.0, 0.0], [0.0, 1.0]], ["t1", "t1"])

    def slow_load(key: str) -> Loaded:
        release.wait(5)
        return snapshot  # read before the writes below reached the store

    exact = ExactPartitions(slow_load, hot_after=1)
    assert exact.search("p", [1.0, 0.0], top_k=2) is None  # starts the load
    exact.delete("p", message_ids=["a"])
    exact.upsert("p", ["c"], [[0.8, 0.2]], ["c"], ["t1"])
    exact.upsert("p", ["a"], [[0.0, 1.0]], ["a"], ["t2"])  # a is back, elsewhere
    release.set()
    for _ in range(200):
        if (found := exact.search("p", [1.0, 0.0], top_k=3)) is not None:
            break
        threading.Event().wait(0.01)
    assert found is not None
    assert [i for i, _ in found] == ["c", "a", "b"] or [i for i, _ in found] == ["c", "b", "a"]
    assert {i for i, _ in exact.search("p", [1.0, 0.0], top_k=3, threads=frozenset({"t2"}))} == {
        "a"
    }


def test_memory_is_bounded_in_bytes_least_recently_searched_first() -> None:
    partitions = {
        k: loaded([f"{k}{i}" for i in range(10)], np.eye(10, 4), ["t"] * 10) for k in "xyz"
    }
    per_row = 4 * (4 + INT8)  # float32 rows, and their int8 copies when SimSIMD scans them
    exact = ExactPartitions(partitions.get, max_bytes=2 * 10 * per_row)  # two partitions fit
    assert exact.load("x") and exact.load("y")
    exact.search("x", [1, 0, 0, 0], top_k=1)  # x is now the most recently searched
    assert exact.load("z")
    assert set(exact._loaded) == {"x", "z"}


@pytest.mark.parametrize("k", [1, 3, 10])
def test_top_k_and_order_match_a_sort(k: int) -> None:
    rng = np.random.default_rng(k)
    vectors = rng.normal(size=(7, 5))
    exact = ExactPartitions(lambda key: loaded([f"v{i}" for i in range(7)], vectors, ["t"] * 7))
    assert exact.load("p")
    query = rng.normal(size=5)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    want = [f"v{i}" for i in np.argsort(-(unit @ (query / np.linalg.norm(query))))[:k]]
    assert [i for i, _ in exact.search("p", query, top_k=k)] == want


def test_a_held_partition_gives_its_vectors_back_as_chroma_holds_them() -> None:
    """`vectors` (the context stage's read) answers from memory once a partition is held, with
    each message's pieces in order, and nothing of another resource."""
    rng = np.random.default_rng(3)
    records = [record(f"m{i}", rng.normal(size=DIM)) for i in range(20)]
    records += [
        record("m0", rng.normal(size=DIM), piece=1),
        record("m0", rng.normal(size=DIM), piece=2),
        record("m7", rng.normal(size=DIM), piece=2),  # a gap: piece 1 missing
    ]
    store = ChromaVectorStore(exact_min=1)
    store.upsert("idx", [*records, record("b0", np.ones(DIM), owner="bob")])
    wanted = ["m0", "m5", "m7", "b0", "missing", "m0"]
    assert store._exact is not None
    store._exact._loaded.clear()  # as after a restart (made here, it was held at once)
    from_chroma = store.vectors("idx", "alice", wanted)  # read from Chroma itself
    assert store.warm("idx", "alice")
    key = str(store._existing(partition_name("idx", "alice")).id)
    assert store._exact.pieces(key, ["m5"], 8)  # held in memory
    held = store.vectors("idx", "alice", wanted)
    assert set(held) == set(from_chroma) == {"m0", "m5"}
    for message_id, pieces in held.items():  # unit length in memory: the space is cosine
        stored = np.asarray(from_chroma[message_id])
        unit = stored / np.linalg.norm(stored, axis=1, keepdims=True)
        np.testing.assert_allclose(pieces, unit, rtol=1e-5, atol=1e-6)
    assert len(held["m0"]) == 3


def test_graph_searches_use_the_measured_beam_and_older_collections_are_widened(tmp_path) -> None:
    """Real chat pieces need a wide HNSW beam (see SEARCH_EF): a new collection gets it, and
    one an earlier version made with ef_search 400 is widened when opened (kept on disk)."""
    from langchain_mastra_memory.recall.engines.chroma import HNSW, SEARCH_EF

    assert SEARCH_EF >= 1600
    store = ChromaVectorStore(path=tmp_path / "new", exact_limit=0)
    store.upsert("idx", [record("m1", np.eye(DIM)[0])])
    col = store._existing(partition_name("idx", "alice"))
    assert col.configuration["hnsw"]["ef_search"] == SEARCH_EF

    old = ChromaVectorStore(path=tmp_path / "old", exact_limit=0)
    narrow = {**HNSW, "hnsw:search_ef": 400, "dimension": DIM}
    made = old.client.create_collection(
        old._namespace + partition_name("idx", "bob"), metadata=narrow
    )
    made.upsert(
        ids=["m1"], embeddings=[list(map(float, np.eye(DIM)[1]))],
        metadatas=[{"thread_id": "t1", "message_id": "m1"}],
    )  # fmt: skip
    assert made.configuration["hnsw"]["ef_search"] == 400
    reopened = ChromaVectorStore(path=tmp_path / "old", exact_limit=0)
    assert reopened.query("idx", np.eye(DIM)[1], top_k=1, resource_id="bob")
    again = reopened.client.get_collection(made.name)
    assert again.configuration["hnsw"]["ef_search"] == SEARCH_EF


def test_a_partition_read_in_pages_is_whole_and_filters_by_thread(monkeypatch) -> None:
    """A big partition is read from Chroma a page at a time (float32 at once, not the whole
    float64 answer): every piece arrives, in any thread filter, as a single read would give."""
    from langchain_mastra_memory.recall.engines import chroma

    monkeypatch.setattr(chroma, "LOAD_PAGE", 7)
    rng = np.random.default_rng(5)
    store = ChromaVectorStore(exact_min=1)
    store.upsert("idx", [record(f"m{i}", rng.normal(size=DIM), f"t{i % 3}") for i in range(30)])
    key = str(store._existing(partition_name("idx", "alice")).id)
    read = store._load_partition(key)
    assert read is not None and read.paged and len(set(read.ids)) == 30
    assert store.warm("idx", "alice")
    query = rng.normal(size=DIM)
    for thread in (None, "t1", "t9"):
        assert hits(store, "alice", query, 8, thread) == truth(store, "alice", query, 8, thread)


def test_a_paged_load_raced_by_a_deletion_is_dropped_then_loaded_again() -> None:
    """A deletion while a paged load runs may have shifted a page (a piece never read): that
    load is not used; HNSW serves until a later write makes the partition worth asking again."""
    release = threading.Event()

    def slow_paged(key: str) -> Loaded:
        release.wait(5)
        return Loaded(["a", "b"], np.eye(2, dtype=np.float32), ["a", "b"], ["t", "t"], True)

    exact = ExactPartitions(slow_paged, hot_after=1)
    assert exact.search("p", [1.0, 0.0], top_k=1) is None  # starts the load
    exact.delete("p", message_ids=["a"])
    release.set()
    for _ in range(200):
        if "p" not in exact._loading:
            break
        threading.Event().wait(0.01)
    assert exact.search("p", [1.0, 0.0], top_k=1) is None and "p" in exact._declined
    exact.upsert("p", ["c"], [[1.0, 0.0]], ["c"], ["t"])
    assert exact.load("p")  # asked again after the write (the stub answers the same rows)
    assert [i for i, _ in exact.search("p", [0.0, 1.0], top_k=1)] == ["b"]


# bytes per dimension of a row held as small as it can be: float16 beside its int8 copy when
# SimSIMD scans them, else float32 (`ExactPartitions.precision`)
SMALLEST = 2 + 1 if INT8 else 4


def test_a_partition_bigger_than_the_memory_bound_is_not_held() -> None:
    rows = loaded([f"v{i}" for i in range(10)], np.eye(10, 4), ["t"] * 10)
    exact = ExactPartitions(lambda key: rows, max_bytes=10 * 4 * SMALLEST - 1)
    assert exact.load("p") is False and "p" in exact._declined


def test_a_resource_of_more_than_20k_pieces_is_searched_exactly_by_default() -> None:
    """Chroma's graph is not exact on big resources of near-equal chat pieces (see
    `ExactPartitions`): by default an embedded store holds them in memory too."""
    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(25_000, DIM))
    store = ChromaVectorStore()
    for start in range(0, len(vectors), 5_000):
        store.upsert(
            "idx",
            [record(f"m{i}", vectors[i], f"t{i % 50}") for i in range(start, start + 5_000)],
        )
    assert store.warm("idx", "alice")
    query = rng.normal(size=DIM)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    best = np.argsort(-(unit @ (query / np.linalg.norm(query))))[:10]
    assert [h.message_id for h in store.query("idx", query, top_k=10, resource_id="alice")] == [
        f"m{i}" for i in best
    ]


def test_searches_beside_writes_see_whole_rows() -> None:
    """The scan runs outside the lock on what it read under it: writes and deletions going on
    meanwhile never make a search fail or name a piece the partition never held."""
    rng = np.random.default_rng(2)
    exact = ExactPartitions(
        lambda key: loaded([f"v{i}" for i in range(500)], rng.normal(size=(500, 6)), ["t"] * 500)
    )
    assert exact.load("p")
    stop, errors = threading.Event(), []

    def write() -> None:
        n = 500
        while not stop.is_set():
            exact.upsert("p", [f"v{n}"], [rng.normal(size=6)], [f"v{n}"], [f"t{n % 4}"])
            exact.delete("p", message_ids=[f"v{n - 300}"], thread_id=f"t{n % 7}")
            n += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        for _ in range(300):
            threads = frozenset({"t", "t1"}) if _ % 2 else None
            found = exact.search("p", rng.normal(size=6), top_k=5, threads=threads)
            if found is None or not all(i.startswith("v") for i, _ in found):
                errors.append(found)
    finally:
        stop.set()
        writer.join()
    assert errors == []


def test_a_partition_that_could_never_be_held_is_not_even_read() -> None:
    """Pieces x dimension over the memory bound: declined from the count alone (reading 100k+
    wide vectors only to drop them would cost seconds and GBs after every write)."""
    store = ChromaVectorStore(exact_min=1)
    store.upsert("idx", [record(f"m{i}", np.eye(DIM)[i]) for i in range(4)])
    assert store._exact is not None
    per_row = DIM * SMALLEST
    store._exact.max_bytes = 4 * per_row - 1
    store._exact._loaded.clear()  # as after a restart (made here, it was held at once)
    reads: list[str] = []
    call = store._call
    store._call = lambda what, *a, **k: (reads.append(what), call(what, *a, **k))[1]  # type: ignore[method-assign]
    assert store.warm("idx", "alice") is False
    assert "load" not in reads
    store._exact.max_bytes = 4 * per_row
    store.upsert("idx", [record("m0", np.eye(DIM)[0])])  # a write: asked again, now it fits
    assert store.warm("idx", "alice") is True and "load" in reads


def test_stores_over_one_folder_share_their_partitions(tmp_path) -> None:
    """Every `Memory` over one file builds its own store: they share one set of partitions,
    so a partition loads once, and what one writes the others' exact searches see."""
    first, second = ChromaVectorStore(tmp_path / "v"), ChromaVectorStore(tmp_path / "v")
    assert first._exact is second._exact is not None
    first.upsert("idx", [record("m1", np.eye(DIM)[0])])
    second.upsert("idx", [record("m2", np.eye(DIM)[1])])  # through the other store
    key = str(first._existing(partition_name("idx", "alice")).id)
    assert key in first._exact._loaded  # made here, held from its first write
    found = first.query("idx", np.eye(DIM)[1], top_k=1, resource_id="alice")
    assert [h.message_id for h in found] == ["m2"]


def test_exit_stops_a_load_between_pages() -> None:
    """At exit a load in progress stops at its next page and is not used (a partition with
    pieces missing is never searched); the loader thread is joined."""
    started, release = threading.Event(), threading.Event()

    def slow(key: str) -> Loaded | None:
        started.set()
        release.wait(5)
        return None if exact.stopping.is_set() else loaded(["a"], np.eye(1, 2), ["t"])

    exact = ExactPartitions(slow, hot_after=1)
    assert exact.search("p", [1.0, 0.0], top_k=1) is None  # starts the load
    assert started.wait(5)
    closer = threading.Thread(target=exact.close)
    closer.start()
    release.set()
    closer.join(10)
    assert not exact._loaders and "p" not in exact._loaded
    assert exact.search("p", [1.0, 0.0], top_k=1) is None and not exact._loading  # no new load


def test_a_second_store_over_one_folder_writes_to_a_partition_emptied_by_the_first(
    tmp_path, caplog
) -> None:
    """Issue 83.1: one `Memory` empties a resource's collection (its partition still held); a
    second `Memory`, with its own `ChromaVectorStore` over the same folder, saves to that
    resource: its writer must not fail, and the new message is recalled."""
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_mastra_memory import Memory, SQLiteStorage

    def open_memory() -> Memory:
        return Memory(
            storage=SQLiteStorage(tmp_path / "m.db"),
            vector=ChromaVectorStore(path=tmp_path / "vectors"),
            embedder=DeterministicFakeEmbedding(size=16),
            options={"semantic_recall": {"top_k": 2, "message_range": 0, "mode": "vector"}},
        )

    first = open_memory()
    first.create_thread(resource_id="alice", thread_id="t1")
    first.save_messages([HumanMessage("I keep bees."), AIMessage("Nice.")],
                        thread_id="t1", resource_id="alice")  # fmt: skip
    first.flush()
    first.delete_thread("t1")
    second = open_memory()
    second.create_thread(resource_id="alice", thread_id="t2")
    saved = second.save_messages([HumanMessage("My hive is blue.")],
                                 thread_id="t2", resource_id="alice")  # fmt: skip
    with caplog.at_level("WARNING"):
        second.flush()
    assert "writer failed" not in caplog.text
    hits = second.recall_index.search("My hive is blue.", resource_id="alice")
    assert [h.message_id for h in hits] == [saved[0].id]


def test_start_empty_keeps_a_partition_already_held() -> None:
    """`start_empty` on a held key keeps what its writes put there (no `matrix` unbound)."""
    store = ChromaVectorStore(exact_min=1)
    store.upsert("idx", [record("m1", np.ones(DIM))])
    col = store.collection("idx", DIM, resource_id="alice")
    assert store._exact is not None
    store._exact.start_empty(str(col.id), DIM)  # raised UnboundLocalError before
    assert [m for m, _ in hits(store, "alice", np.ones(DIM), 3)] == ["m1"]
