"""`PgVectorStore`: recall's vectors in the PostgreSQL database of `PostgresStorage`.

Real PostgreSQL 18 with pgvector (the session's server), real MiniLM embeddings."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from langchain_mastra_memory import (
    ChromaVectorStore,
    ConfigurationError,
    Memory,
    PgVectorStore,
    PostgresStorage,
)
from langchain_mastra_memory.errors import VectorStoreError
from langchain_mastra_memory.recall.vector import VectorRecord

pytestmark = pytest.mark.postgres
DSN = os.environ.get("LMM_TEST_POSTGRES_DSN", "")


@pytest.fixture
def pg() -> Iterator[PostgresStorage]:
    storage = PostgresStorage(DSN, schema=f"v_{uuid.uuid4().hex[:12]}")
    yield storage
    storage.drop_schema()
    storage.close()


def record(message_id: str, vector: list[float], thread: str, owner: str, piece: int = 0):
    return VectorRecord(message_id, vector, thread, owner, "user", 0.0, piece=piece)


@pytest.mark.parametrize("exact_limit", [0, 10_000], ids=["graph", "exact"])
def test_search_is_per_resource_and_thread_on_both_paths(
    pg: PostgresStorage, exact_limit: int, call
) -> None:
    store = PgVectorStore(pg, exact_limit=exact_limit)
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
    only_b = call(
        store, "query", "demo", [1.0, 0.1, 0.0], top_k=5, resource_id="alice", thread_id="tb"
    )
    assert [h.message_id for h in only_b] == ["a2"]
    assert [h.message_id for h in store.query("demo", [1, 0, 0], top_k=5, resource_id="bob")] == [
        "b1"
    ]
    assert store.query("demo", [1, 0, 0], top_k=5, resource_id="carol") == []
    assert store.query("nothing-yet", [1, 0, 0], top_k=5, resource_id="alice") == []
    assert store.present("demo", "alice", ["a1", "a2", "b1", "zz"]) == {"a1", "a2"}
    assert store.count("demo", 3) == 4 and store.count("demo", 3, "alice") == 3
    call(store, "delete", "demo", ids=["a1"], resource_id="bob")  # not bob's: kept
    assert store.count("demo", 3, "alice") == 3
    call(store, "delete", "demo", ids=["a1"], resource_id="alice")  # every piece
    assert store.count("demo", 3, "alice") == 1
    call(store, "delete", "demo", thread_id="tc")
    assert store.count("demo", 3) == 1


def test_another_dimension_is_refused(pg: PostgresStorage) -> None:
    store = PgVectorStore(pg)
    store.upsert("demo", [record("m1", [1.0, 0.0], "t", "alice")])
    with pytest.raises(VectorStoreError, match="holds 2-dimensional vectors"):
        store.upsert("demo", [record("m2", [1.0, 0.0, 0.0], "t", "alice")])
    with pytest.raises(VectorStoreError, match="holds 2-dimensional vectors"):
        store.query("demo", [1.0, 0.0, 0.0], top_k=1, resource_id="alice")
    assert store.count("demo", 2) == 1


def test_memory_on_postgres_keeps_vectors_in_postgres_and_they_survive_a_restart(
    pg: PostgresStorage,
) -> None:
    options = {"semantic_recall": {"top_k": 1, "message_range": 0}}
    memory = Memory(storage=pg, options=options)
    assert isinstance(memory.vector, PgVectorStore)
    memory.create_thread(thread_id="t1", resource_id="alice")
    memory.save_messages(
        [HumanMessage("My sister Marta is getting married on June 14."), AIMessage("Lovely!")],
        thread_id="t1",
        resource_id="alice",
    )
    memory.create_thread(thread_id="t9", resource_id="bob")
    memory.save_messages([HumanMessage("I sell bicycles.")], thread_id="t9", resource_id="bob")
    assert memory.flush(timeout=60)
    # another process: a new Memory over the same database finds the vectors there
    again = Memory(storage=PostgresStorage(DSN, schema=pg.schema), options=options)
    question = [HumanMessage("When is the family wedding?")]
    found = again.recall(thread_id="t2", resource_id="alice", new_messages=question)
    assert len(found) == 1 and "Marta is getting married on June 14" in found[0].content
    assert "bicycle" not in str(found[0].content)
    assert again.recall(thread_id="t3", resource_id="carol", new_messages=question) == []
    again.storage.close()


@pytest.mark.parametrize("halfvec", [True, False], ids=["halfvec", "vector"])
def test_stored_vectors_come_back_exactly_as_float32_arrays(
    pg: PostgresStorage, halfvec: bool, call
) -> None:
    """`vectors` (what a clone copies and the context stage ranks with) reads the column in
    binary: each message's pieces in order as one float32 array, equal to what the column
    holds (its text form read back digit for digit), never another resource's, and a message
    missing a piece left out."""
    store = PgVectorStore(pg, halfvec=halfvec)
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(5, 384)).astype(np.float32)
    records = [record("m1", rows[0].tolist(), "t", "alice"),
               record("m1", rows[1].tolist(), "t", "alice", piece=1),
               record("m2", rows[2].tolist(), "t", "alice"),
               record("m3", rows[3].tolist(), "t", "alice", piece=1),  # its piece 0 is missing
               record("b1", rows[4].tolist(), "t", "bob")]  # fmt: skip
    store.upsert("idx", records)
    got = call(store, "vectors", "idx", "alice", ["m1", "m2", "m3", "b1"])
    assert set(got) == {"m1", "m2"}
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in got.values())
    assert got["m1"].shape == (2, 384) and got["m2"].shape == (1, 384)
    table = store._known("idx")
    with pg._transaction(write=False) as conn:
        stored = dict(conn.execute(f"SELECT id, embedding::text FROM {table}").fetchall())
    for vector_id, row in (("m1", got["m1"][0]), ("m1#1", got["m1"][1]), ("m2", got["m2"][0])):
        text = np.array(stored[vector_id][1:-1].split(","), dtype=np.float32)
        assert np.array_equal(row, text)  # what the column holds
    assert np.allclose(got["m1"], rows[:2], atol=2e-2)  # (4 digits written; halfvec ~3)


def test_vectors_follow_updates_clones_deletes_and_reindex(pg: PostgresStorage, call) -> None:
    memory = Memory(storage=pg, options={"semantic_recall": {"top_k": 2, "message_range": 0}})
    vector = memory.vector
    call(memory, "create_thread", thread_id="t1", resource_id="alice")
    saved = call(
        memory, "save_messages",
        [HumanMessage("My dog is a beagle called Biscuit."), AIMessage("Cute name.")],
        thread_id="t1", resource_id="alice",
    )  # fmt: skip
    assert call(memory, "flush", timeout=60)
    name = memory.recall_index.upkeep.index_name()
    assert vector.present(name, "alice", [m.id for m in saved]) == {m.id for m in saved}
    # an update re-embeds: the old text is no longer what the vector says
    call(
        memory, "update_messages",
        [HumanMessage("My cat is a tabby called Miso.", id=saved[0].id)], resource_id="alice",
    )  # fmt: skip
    hits = memory.recall_index.search("what kind of cat do I have", resource_id="alice")
    assert hits[0].message_id == saved[0].id
    # a clone's messages are embedded behind, in their own thread
    clone = call(memory, "clone_thread", "t1", new_thread_id="t1-copy")
    assert call(memory, "flush", timeout=60)
    copied = memory.get_messages(thread_id=clone.id, resource_id="alice")
    assert vector.present(name, "alice", [m.id for m in copied]) == {m.id for m in copied}
    # a vector lost behind memory's back is found missing and written again
    with pg._transaction(write=True) as conn:
        table = vector._known(name)
        conn.execute(f"DELETE FROM {table} WHERE id = %s", (copied[0].id,))
    assert memory.backfill_embeddings() >= 1
    assert copied[0].id in vector.present(name, "alice", [copied[0].id])
    # deleting a message, then a thread, removes their vectors
    call(memory, "delete_messages", [saved[1].id], resource_id="alice")
    assert vector.present(name, "alice", [saved[1].id]) == set()
    call(memory, "delete_thread", "t1-copy", resource_id="alice")
    assert vector.present(name, "alice", [m.id for m in copied]) == set()
    assert vector.count(name, 384, "alice") >= 1  # t1's first message is still there


def test_a_server_without_pgvector_gets_a_clear_error_naming_the_fix() -> None:
    """A role that may not create the extension, in a database that lacks it."""
    suffix = uuid.uuid4().hex[:8]
    role, database = f"plain_{suffix}", f"noext_{suffix}"
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"CREATE DATABASE {database} OWNER {role}")
    params = conninfo_to_dict(DSN)
    params.pop("password", None)
    storage = PostgresStorage(make_conninfo(**{**params, "user": role, "dbname": database}))
    try:
        with pytest.raises(ConfigurationError, match=r"CREATE EXTENSION vector.*ChromaVectorStore"):
            Memory(storage=storage, options={"semantic_recall": True})
        with pytest.raises(ConfigurationError, match="needs the pgvector extension"):
            PgVectorStore(storage)
        # Chroma stays available, and the messages side works as before
        memory = Memory(
            storage=storage, vector=ChromaVectorStore(), options={"semantic_recall": True}
        )
        memory.create_thread(thread_id="t1", resource_id="alice")
        memory.save_messages([HumanMessage("hello")], thread_id="t1", resource_id="alice")
        assert memory.flush(timeout=60)
    finally:
        storage.close()
        with psycopg.connect(DSN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {database} WITH (FORCE)")
            admin.execute(f"DROP ROLE {role}")


def test_pgvector_store_needs_a_postgres_storage() -> None:
    from langchain_mastra_memory import SQLiteStorage

    with pytest.raises(ConfigurationError, match="beside a PostgresStorage"):
        PgVectorStore(SQLiteStorage(":memory:"))  # type: ignore[arg-type]
