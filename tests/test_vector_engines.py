"""`QdrantVectorStore`, `QdrantEdgeVectorStore` and `MilvusVectorStore`: recall's vectors in
Qdrant (qdrant-client's local mode, and Qdrant's own engine in-process) and Milvus (Milvus Lite
and a real 2.3 server), with the same store contract, recall, isolation and lifecycle as
Chroma and pgvector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import drop_milvus_collections, garden
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import (
    Memory,
    MilvusVectorStore,
    QdrantEdgeVectorStore,
    QdrantVectorStore,
    SQLiteStorage,
)
from langchain_mastra_memory.errors import ConfigurationError, VectorStoreError
from langchain_mastra_memory.recall.vector import VectorRecord


def record(message_id: str, vector: list[float], thread: str, owner: str, piece: int = 0):
    return VectorRecord(message_id, vector, thread, owner, "user", 0.0, piece=piece)


ENGINES = ["qdrant-memory", "qdrant-path", "qdrant-edge", "milvus-lite", "milvus-server"]


def engine(kind: str, folder: Path, request: pytest.FixtureRequest | None = None):
    if kind == "qdrant-memory":
        return QdrantVectorStore(":memory:")
    if kind == "qdrant-path":
        return QdrantVectorStore(folder / "qdrant")
    if kind == "qdrant-edge":  # Qdrant's own engine, in this process
        return QdrantEdgeVectorStore(folder / "edge")
    if kind == "milvus-server":  # the session's real server (2.3), emptied after each test
        assert request is not None
        uri = request.getfixturevalue("milvus_uri")
        request.addfinalizer(lambda: drop_milvus_collections(uri))
        return MilvusVectorStore(uri=uri)
    return MilvusVectorStore(folder / "milvus.db")


@pytest.fixture(params=ENGINES)
def store(request: pytest.FixtureRequest, tmp_path: Path):
    made = engine(request.param, tmp_path, request)
    yield made
    made.close()


def test_search_is_per_resource_and_thread_and_pieces_come_back(store, call) -> None:
    records = [
        record("a1", [1.0, 0.0, 0.0], "ta", "alice"),
        record("a1", [0.0, 0.0, 1.0], "ta", "alice", piece=1),
        record("a2", [0.8, 0.6, 0.0], "tb", "alice"),
        record("b1", [1.0, 0.0, 0.0], "tc", "bob"),
    ]
    call(store, "upsert", "demo", records)
    hits = call(store, "query", "demo", [1.0, 0.1, 0.0], top_k=5, resource_id="alice")
    assert [h.message_id for h in hits] == ["a1", "a2", "a1"]  # one hit per piece, best first
    assert hits[0].score == pytest.approx(0.995, abs=2e-3) and hits[0].resource_id == "alice"
    only_b = call(store, "query", "demo", [1.0, 0.1, 0.0], top_k=5, resource_id="alice",
                  thread_id="tb")  # fmt: skip
    assert [h.message_id for h in only_b] == ["a2"]
    among = store.query("demo", [1, 0, 0], top_k=5, resource_id="alice", thread_ids=["tb", "tc"])
    assert [h.message_id for h in among] == ["a2"]  # tc is bob's
    assert [h.message_id for h in store.query("demo", [1, 0, 0], top_k=5, resource_id="bob")] == [
        "b1"
    ]
    assert store.query("demo", [1, 0, 0], top_k=5, resource_id="carol") == []
    assert store.query("nothing-yet", [1, 0, 0], top_k=5, resource_id="alice") == []
    assert store.present("demo", "alice", ["a1", "a2", "b1", "zz"]) == {"a1", "a2"}
    assert store.vectors("demo", "alice", ["a1", "b1"]) == {
        "a1": [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    }
    assert store.count("demo", 3) == 4 and store.count("demo", 3, "alice") == 3
    call(store, "delete", "demo", ids=["a1"], resource_id="bob")  # not bob's: kept
    assert store.count("demo", 3, "alice") == 3
    call(store, "delete", "demo", ids=["a1"], resource_id="alice")  # every piece
    assert store.count("demo", 3, "alice") == 1
    call(store, "delete", "demo", thread_id="tc")
    assert store.count("demo", 3) == 1
    with pytest.raises(VectorStoreError, match="holds 3-dimensional vectors"):
        store.upsert("demo", [record("m9", [1.0, 0.0], "t", "alice")])


def test_each_takes_exactly_one_place() -> None:
    with pytest.raises(ConfigurationError, match="one of"):
        QdrantVectorStore()
    with pytest.raises(ConfigurationError, match="one of"):
        QdrantVectorStore(":memory:", url="http://localhost:6333")
    with pytest.raises(ConfigurationError, match="one of"):
        MilvusVectorStore()


def test_milvus_lite_searches_exactly_and_a_server_gets_its_tuned_index(tmp_path: Path) -> None:
    """Milvus Lite's graph index missed 6-12% of the true top 10 on real chat text: a Lite
    collection is a FLAT scan; another index is the caller's choice, a server's is AUTOINDEX."""
    lite = MilvusVectorStore(tmp_path / "lite.db")
    lite.upsert("demo", [record("m1", [1.0, 0.0], "t", "alice")])
    name = lite._existing("demo")
    assert lite.client.describe_index(name, "vector")["index_type"] == "FLAT"
    chosen = MilvusVectorStore(tmp_path / "ivf.db", index_type="IVF_FLAT")
    chosen.upsert("demo", [record("m1", [1.0, 0.0], "t", "alice")])
    described = chosen.client.describe_index(chosen._existing("demo"), "vector")
    assert described["index_type"] == "IVF_FLAT"
    assert MilvusVectorStore(uri="http://127.0.0.1:9").index_type == "AUTOINDEX"  # (no connect)


@pytest.mark.parametrize("kind", ["qdrant-path", "qdrant-edge", "milvus-lite", "milvus-server"])
def test_memory_recalls_isolates_and_keeps_vectors_in_step(
    tmp_path: Path, call, kind: str, request: pytest.FixtureRequest
) -> None:
    vectors = engine(kind, tmp_path, request)
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"), vector=vectors,
                    options={"semantic_recall": {"mode": "vector"}})  # fmt: skip
    garden(memory)
    index = memory.recall_index
    name = index.upkeep.index_name()
    assert vectors.count(name, 384, "alice") >= 2
    hits = call(index, "search", "what vegetables do I grow?", resource_id="alice")
    assert hits and hits[0].thread_id == "g1"
    assert all(
        h.thread_id != "b1" for h in call(index, "search", "locker code", resource_id="alice")
    )
    # clone: the copies' vectors are copied, not embedded again
    clone = call(memory, "clone_thread", "g1", new_thread_id="g2", resource_id="alice")
    copies = [m.id for m in memory.get_messages(thread_id=clone.id)]
    assert set(vectors.vectors(name, "alice", copies)) == set(copies)
    # transfer: the vectors move to the new owner's part
    call(memory, "transfer_thread", "g2", to_resource_id="bob", resource_id="alice")
    assert set(vectors.vectors(name, "bob", copies)) == set(copies)
    assert vectors.vectors(name, "alice", copies) == {}
    # delete: the vectors go
    call(memory, "delete_thread", "g1", resource_id="alice")
    assert vectors.count(name, 384, "alice") == 0
    assert memory.storage.unembedded() == []


@pytest.mark.parametrize("kind", ["qdrant", "milvus"])
def test_a_server_that_is_down_fails_no_save_and_the_backlog_catches_up(
    tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    down = (
        QdrantVectorStore(url="http://127.0.0.1:9", timeout=2)
        if kind == "qdrant"
        else MilvusVectorStore(uri="http://127.0.0.1:9")
    )  # nothing listens on port 9: Memory is still built, and saves succeed
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"), vector=down,
                    options={"semantic_recall": {"mode": "vector"}})  # fmt: skip
    memory.create_thread(thread_id="g1", resource_id="alice")
    saved = memory.save_messages([HumanMessage("I grow tomatoes on the balcony")],
                                 thread_id="g1", resource_id="alice")  # fmt: skip
    memory.flush(30)
    assert [s.message.id for s in memory.storage.unembedded()] == [saved[0].id]
    assert "embeddings not written" in caplog.text and "127.0.0.1:9" in caplog.text
    with pytest.raises(VectorStoreError):  # a search says what failed
        memory.recall_index.search("tomatoes", resource_id="alice")
    up = engine("qdrant-path" if kind == "qdrant" else "milvus-lite", tmp_path)
    back = Memory(storage=SQLiteStorage(tmp_path / "memory.db"), vector=up,
                  options={"semantic_recall": {"mode": "vector"}})  # fmt: skip
    assert back.backfill_embeddings() == 1 and back.storage.unembedded() == []
    hits = back.recall_index.search("what vegetables do I grow?", resource_id="alice")
    assert [h.message_id for h in hits] == [saved[0].id]
    up.close()


KILLED_WRITER = """
import sys
from langchain_core.messages import HumanMessage
from langchain_mastra_memory import (Memory, MilvusVectorStore, QdrantEdgeVectorStore,
                                     QdrantVectorStore, SQLiteStorage)
folder, kind = sys.argv[1], sys.argv[2]
vector = (QdrantVectorStore(folder + "/qdrant") if kind == "qdrant-path"
          else QdrantEdgeVectorStore(folder + "/edge") if kind == "qdrant-edge"
          else MilvusVectorStore(folder + "/milvus.db"))
memory = Memory(storage=SQLiteStorage(folder + "/memory.db"), vector=vector,
                options={"semantic_recall": {"mode": "vector"}})
memory.create_thread(thread_id="g1", resource_id="alice")
for i in range(10_000):  # until killed
    memory.save_messages([HumanMessage(f"note {i}: the plants on shelf {i} need water")],
                         thread_id="g1", resource_id="alice")
    if i == 5:
        print("saving", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["qdrant-path", "qdrant-edge", "milvus-lite"])
def test_a_writer_killed_mid_upsert_loses_no_vector_after_backfill(
    tmp_path: Path, kind: str
) -> None:
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(tmp_path), kind],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "saving"
    time.sleep(1.5)  # a few dozen saves, their vectors written behind them
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    vectors = engine(kind, tmp_path)
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"), vector=vectors,
                    options={"semantic_recall": {"mode": "vector"}})  # fmt: skip
    ids = [m.id or "" for m in memory.get_messages(thread_id="g1", resource_id="alice")]
    assert len(ids) > 6  # it was killed while saving
    memory.backfill_embeddings()
    assert memory.storage.unembedded() == []
    name = memory.recall_index.upkeep.index_name()
    assert vectors.present(name, "alice", ids) == set(ids)  # every saved message has its vector
    hits = memory.recall_index.search("which shelf needs water?", resource_id="alice")
    assert hits and {h.message_id for h in hits} <= set(ids)
    vectors.close()


def test_qdrant_edge_builds_its_graph_behind_the_writes_and_searches_meanwhile(
    tmp_path: Path,
) -> None:
    """Qdrant Edge builds HNSW only when asked (for segments over Qdrant's indexing threshold,
    10 MB: smaller ones are scanned): after `optimize_after` points the writer's upsert builds
    it; searches from other threads go on while it builds (the store's lock is not held) and
    find each stored vector as its own nearest, only in its resource."""
    import asyncio
    import threading

    import numpy as np

    rng = np.random.default_rng(4)
    vectors = rng.normal(size=(10_000, 384))  # alice's 8,000: 12 MB of float32, over the threshold
    store = QdrantEdgeVectorStore(tmp_path / "edge", optimize_after=10**9)  # build by hand
    store.upsert("demo", [record(f"m{i}", vectors[i], f"t{i % 9}", "alice" if i % 5 else "bob")
                          for i in range(len(vectors))])  # fmt: skip
    shard = store._shard(store._existing("demo"))
    assert shard.info().indexed_vectors_count == 0  # nothing built yet: plain segments
    errors: list[BaseException] = []
    found: list[bool] = []
    building = threading.Thread(target=lambda: store.optimize("demo"))
    building.start()
    while building.is_alive() or not found:
        i = int(rng.integers(len(vectors)))
        owner = "alice" if i % 5 else "bob"
        try:
            hits = store.query("demo", vectors[i].tolist(), top_k=3, resource_id=owner)
            found.append(hits[0].message_id == f"m{i}" and {h.resource_id for h in hits} == {owner})
        except BaseException as exc:
            errors.append(exc)
            break
    building.join(120)
    assert errors == [] and all(found)
    assert shard.info().indexed_vectors_count > 0  # the graph is there now
    config = json.loads((store._at(store._existing("demo")) / "edge_config.json").read_text())
    assert (config["hnsw_config"]["m"], config["hnsw_config"]["payload_m"]) == (0, 32)  # per
    schema = shard.info().payload_schema  # resource; none over the shard, thread or time
    assert [schema[f].params.enable_hnsw for f in ("thread_id", "message_id", "created_at")] == [
        False, False, False]  # fmt: skip
    assert store.optimize("demo") is False  # built already: nothing left to optimize
    assert asyncio.run(store.aoptimize("demo")) is False and asyncio.run(store.aflush()) is None
    assert store.optimize("never-written") is False
    automatic = QdrantEdgeVectorStore(tmp_path / "auto", optimize_after=7_500)
    automatic.upsert("demo", [record(f"m{i}", vectors[i], "t", "alice") for i in range(8_000)])
    with pytest.raises(ValueError, match="optimize_after"):
        QdrantEdgeVectorStore(tmp_path / "never", optimize_after=0)
    assert automatic._shard(automatic._existing("demo")).info().indexed_vectors_count > 0
    for made in (store, automatic):
        made.close()


@pytest.mark.parametrize("kind", ENGINES)
def test_a_pruned_message_leaves_every_engine(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    """Retention (`memory.prune()`): old messages' vectors go, new ones stay, per resource."""
    from datetime import datetime, timedelta, timezone

    vectors = engine(kind, tmp_path, request)
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"), vector=vectors,
                    options={"semantic_recall": {"mode": "vector"},
                             "retention": {"messages": "90d"}})  # fmt: skip
    garden(memory)  # alice's two garden messages and bob's locker code
    name = memory.recall_index.upkeep.index_name()
    old = [m.id for m in memory.get_messages(thread_id="g1")][:1]
    when = memory.storage._time(datetime.now(timezone.utc) - timedelta(days=200))
    with memory.storage._transaction(write=True) as conn:
        conn.execute("UPDATE memory_messages SET created_at = ? WHERE id = ?", (when, old[0]))
    assert memory.prune().messages == 1
    assert vectors.vectors(name, "alice", old) == {}
    kept = [m.id for m in memory.get_messages(thread_id="g1")]
    assert kept and set(vectors.vectors(name, "alice", kept)) == set(kept)
    assert vectors.count(name, 384, "bob") >= 1
    vectors.close()
