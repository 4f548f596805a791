"""A partition too big for float32 rows within the memory bound is held in float16 beside its
int8 copy, with the hits a float32 sort gives; one too big even so goes back to the graph. A
partition growing by writes narrows instead of being dropped, and never holds more bytes than
the bound (a matrix grown by half again used to overshoot it and be dropped at ~349k pieces of
384 dimensions: every search then went to HNSW)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from langchain_mastra_memory.recall.engines.chroma import ChromaVectorStore, partition_name
from langchain_mastra_memory.recall.exact.partitions import INT8, ExactPartitions, Loaded
from langchain_mastra_memory.recall.exact.snapshots import Snapshots
from langchain_mastra_memory.recall.vector import VectorRecord

pytestmark = pytest.mark.skipif(
    not INT8, reason="SimSIMD is part of the chroma extra the tests install"
)

ROWS, DIM = 3_000, 32
FLOAT32, FLOAT16 = ROWS * DIM * (4 + 1), ROWS * DIM * (2 + 1)  # bytes with the int8 copy
ROUNDING = 2.0**-11  # the most a float16 row moves a cosine (Cauchy-Schwarz over its rounding)


def chat_like(rows: int, seed: int) -> np.ndarray:
    """Near-duplicate unit rows (a few topics, each row close to one): near-equal scores."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(40, DIM))
    vectors = topics[rng.integers(0, 40, rows)] + 0.3 * rng.normal(size=(rows, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def exact_top(vectors: np.ndarray, query: np.ndarray, k: int, keep=None) -> list[int]:
    scores = vectors @ (query / np.linalg.norm(query))
    if keep is not None:
        scores[~keep] = -np.inf
    return np.argsort(-scores, kind="stable")[:k].tolist()


def test_past_the_float32_bound_a_partition_is_held_in_float16_with_the_same_hits() -> None:
    vectors = chat_like(ROWS, seed=1)
    ids = [f"v{i}" for i in range(ROWS)]
    threads = [f"t{i % 5}" for i in range(ROWS)]
    exact = ExactPartitions(lambda key: Loaded(ids, vectors.copy(), ids, threads),
                            max_bytes=FLOAT32 - 1)  # fmt: skip
    assert exact.load("p")
    held = exact._loaded["p"]
    assert held.vectors.dtype == np.float16 and held.nbytes <= exact.max_bytes
    rng = np.random.default_rng(2)
    for query in (vectors[11] + 0.02 * rng.normal(size=DIM), rng.normal(size=DIM)):
        for wanted in (None, frozenset({"t1", "t3"})):
            keep = None if wanted is None else np.isin(threads, sorted(wanted))
            got = exact.search("p", query.tolist(), top_k=10, threads=wanted)
            assert got is not None and len(got) == 10
            truth = vectors @ (query / np.linalg.norm(query))
            kth = truth[exact_top(vectors, query, 10, keep)[-1]]
            for vector_id, score in got:  # the exact top 10, up to a tie within the bound
                row = int(vector_id[1:])
                assert keep is None or keep[row]
                assert abs(score - truth[row]) <= ROUNDING and truth[row] >= kth - 2 * ROUNDING
    assert exact.pieces("p", ["v1"], 8) is None  # float16 roundings are not the stored vectors


def test_past_the_float16_bound_a_partition_is_left_to_the_graph() -> None:
    vectors = chat_like(ROWS, seed=3)
    ids = [f"v{i}" for i in range(ROWS)]
    exact = ExactPartitions(lambda key: Loaded(ids, vectors, ids, ["t"] * ROWS),
                            max_bytes=FLOAT16 - 1)  # fmt: skip
    assert exact.load("p") is False and exact.search("p", vectors[0].tolist(), top_k=1) is None


def test_a_growing_partition_narrows_within_the_bound_and_is_dropped_only_past_float16() -> None:
    vectors = chat_like(ROWS + 600, seed=4)
    exact = ExactPartitions(lambda key: None, max_bytes=FLOAT16)
    exact.start_empty("p", DIM)  # held from its first write, as a partition made here is
    precisions = []
    for start in range(0, ROWS, 50):
        rows = range(start, start + 50)
        exact.upsert("p", [f"v{i}" for i in rows], vectors[start : start + 50].tolist(),
                     [f"v{i}" for i in rows], ["t"] * 50)  # fmt: skip
        held = exact._loaded["p"]  # never dropped on the way
        assert held.nbytes <= exact.max_bytes
        precisions.append(held.vectors.dtype)
    assert precisions[0] == np.float32 and precisions[-1] == np.float16
    query = vectors[123] + 0.05
    got = exact.search("p", query.tolist(), top_k=5)
    assert [i for i, _ in got] == [f"v{i}" for i in exact_top(vectors[:ROWS], query, 5)]
    more = range(ROWS, ROWS + 600)
    exact.upsert("p", [f"v{i}" for i in more], vectors[ROWS:].tolist(),
                 [f"v{i}" for i in more], ["t"] * 600)  # fmt: skip
    assert "p" not in exact._loaded  # past even float16: the graph serves it


def test_a_float16_partition_is_saved_and_read_back_as_it_was_held(tmp_path: Path) -> None:
    vectors = chat_like(ROWS, seed=5)
    ids = [f"v{i}" for i in range(ROWS)]
    first = ExactPartitions(lambda key: Loaded(ids, vectors, ids, ["t"] * ROWS),
                            max_bytes=FLOAT32 - 1, snapshots=Snapshots(tmp_path))  # fmt: skip
    assert first.load("p")
    query = (vectors[9] + 0.01).tolist()
    expected = first.search("p", query, top_k=5)
    back = Snapshots(tmp_path).read("p")
    assert back is not None and np.asarray(back.vectors).dtype == np.float16

    def never_read(key: str) -> Loaded:
        raise AssertionError("the store was read")

    again = ExactPartitions(never_read, snapshots=Snapshots(tmp_path))  # (room for float32)
    assert again.search("p", query, top_k=5) == expected
    assert again._loaded["p"].vectors.dtype == np.float16  # not widened: no exactness to gain


def test_an_embedded_store_searches_a_float16_partition_and_reads_vectors_from_chroma() -> None:
    """Through Chroma: the load reads pages straight into float16 unit rows, the hits are the
    brute-force ones over what Chroma holds, and `vectors` (what a clone copies) comes from
    Chroma itself, not from the roundings."""
    vectors = chat_like(ROWS, seed=6)
    store = ChromaVectorStore(exact_min=1)
    assert store._exact is not None
    store._exact.max_bytes = FLOAT32 - 1
    records = [VectorRecord(f"m{i}", vectors[i].tolist(), f"t{i % 3}", "alice", "user", 0.0, 0)
               for i in range(ROWS)]  # fmt: skip
    store.upsert("idx", records)
    store._exact._loaded.clear()  # as after a restart: loaded from Chroma
    assert store.warm("idx", "alice")
    key = str(store._existing(partition_name("idx", "alice")).id)
    assert store._exact._loaded[key].vectors.dtype == np.float16
    query = vectors[42] + 0.03
    found = store.query("idx", query.tolist(), top_k=8, resource_id="alice")
    truth = vectors @ (query / np.linalg.norm(query))
    kth = truth[exact_top(vectors, query, 8)[-1]]
    assert len(found) == 8 and found[0].message_id == "m42"
    assert all(truth[int(h.message_id[1:])] >= kth - 2 * ROUNDING for h in found)
    copied = store.vectors("idx", "alice", ["m42"])["m42"][0]
    col = store._existing(partition_name("idx", "alice"))
    assert copied == pytest.approx(
        col.get(ids=["m42"], include=["embeddings"])["embeddings"][0].tolist()
    )


def test_the_context_stage_reads_a_float16_partition_from_memory_not_from_chroma() -> None:
    """`ranking_vectors` (the context stage's read) answers from float16 rows, within the
    rounding of Chroma's own (unit) vectors, and never asks Chroma; `vectors` (a clone's copy)
    still reads Chroma. Sync and async."""
    import asyncio

    vectors = chat_like(ROWS, seed=7)
    store = ChromaVectorStore(exact_min=1)
    assert store._exact is not None
    store._exact.max_bytes = FLOAT32 - 1
    store.upsert("idx", [VectorRecord(f"m{i}", vectors[i].tolist(), "t", "alice", "user", 0.0, 0)
                         for i in range(ROWS)])  # fmt: skip
    store._exact._loaded.clear()
    assert store.warm("idx", "alice")
    reads: list[str] = []
    call = store._call
    store._call = lambda what, *a, **k: (reads.append(what), call(what, *a, **k))[1]  # type: ignore[method-assign]
    wanted = ["m3", "m40", "missing"]
    rounded = store.ranking_vectors("idx", "alice", wanted)
    again = asyncio.run(store.aranking_vectors("idx", "alice", wanted))
    assert "get" not in reads and set(rounded) == set(again) == {"m3", "m40"}
    stored = store.vectors("idx", "alice", wanted)
    assert "get" in reads  # the stored vectors come from Chroma itself
    for message_id in ("m3", "m40"):
        unit = np.asarray(stored[message_id], dtype=np.float64)
        unit /= np.linalg.norm(unit, axis=1, keepdims=True)
        assert np.abs(np.asarray(rounded[message_id]) - unit).max() <= ROUNDING
        assert np.array_equal(rounded[message_id], again[message_id])
