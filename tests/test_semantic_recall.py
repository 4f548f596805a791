"""Semantic recall on the real local model and embedded Chroma."""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langchain_mastra_memory import (
    ConfigurationError,
    Memory,
    SQLiteStorage,
    VectorStoreError,
)
from langchain_mastra_memory.messages import embedding_pieces
from langchain_mastra_memory.processors.semantic_recall import SemanticRecall
from langchain_mastra_memory.recall.engines.chroma import ChromaVectorStore

FILLER = [
    ("Can you suggest a quick lunch?", "A chickpea salad takes ten minutes."),
    ("How do I fix a squeaky door?", "A little oil on the hinge pins."),
    ("Any podcast recommendations?", "Try a short daily science show."),
    ("Suggest a board game for four.", "Ticket to Ride is easy to learn."),
]


def as_processor(memory: Memory) -> SemanticRecall:
    """The processor on the parts `memory` uses (SPEC §7)."""
    assert memory.recall_index is not None
    return SemanticRecall(
        storage=memory.storage,
        vector=memory.vector,
        embedder=memory.embedder,
        options=memory.recall_index.options,
    )


def recall_memory(storage=None, last_messages: int = 40, **options) -> Memory:
    opts = {"top_k": 3, "message_range": 1, **options}
    return Memory(
        storage=storage or SQLiteStorage(":memory:"),
        options={"semantic_recall": opts, "last_messages": last_messages},
    )


def fill(
    memory: Memory, thread: str, resource: str, n: int, fact: str | None = None, at: int = 0
) -> list:
    memory.create_thread(resource_id=resource, thread_id=thread, title=f"{thread} title")
    messages = []
    for i in range(n // 2):
        user, assistant = FILLER[i % len(FILLER)]
        messages += [HumanMessage(f"{user} ({i})"), AIMessage(f"{assistant} ({i})")]
    if fact is not None:
        messages.insert(at, HumanMessage(fact))
    saved = memory.save_messages(messages, thread_id=thread, resource_id=resource)
    memory.flush()  # embeddings are written behind the save
    return saved


@pytest.fixture(scope="module")
def planted() -> Memory:
    memory = recall_memory()
    fill(memory, "old", "alice", 200, fact="By the way, I moved to Lisbon in March.", at=3)
    fill(memory, "other", "bob", 40, fact="I moved to Berlin last winter.", at=5)
    memory.create_thread(resource_id="alice", thread_id="new")
    return memory


def test_a_fact_from_another_thread_200_messages_back_is_recalled(planted: Memory) -> None:
    out = planted.recall(
        thread_id="new", new_messages=[HumanMessage("Which city is my home these days?")]
    )
    block = out[-1]  # after the (empty) history, before the new message
    assert isinstance(block, HumanMessage)
    assert "I moved to Lisbon in March" in block.content
    assert '<remembered_from_other_conversation thread="old" title="old title">' in block.content
    assert block.response_metadata["langchain_mastra_memory"] == "semantic_recall"
    assert "Berlin" not in block.content  # bob's


def test_in_mastras_order_other_threads_hits_are_a_system_message(planted: Memory) -> None:
    mastra = Memory(storage=planted.storage, vector=planted.vector, embedder=planted.embedder,
                    options={"semantic_recall": {"top_k": 3, "message_range": 1},
                             "recall_placement": "system"})  # fmt: skip
    out = mastra.recall(
        thread_id="new", new_messages=[HumanMessage("Which city is my home these days?")]
    )
    assert isinstance(out[0], SystemMessage)
    assert "I moved to Lisbon in March" in out[0].content
    assert '<remembered_from_other_conversation thread="old" title="old title">' in out[0].content
    assert out[0].response_metadata["langchain_mastra_memory"] == "semantic_recall"
    assert "Berlin" not in out[0].content  # bob's


async def test_async_recall(planted: Memory) -> None:
    out = await planted.arecall(
        thread_id="new", new_messages=[HumanMessage("Where do I live now?")]
    )
    assert "Lisbon" in out[0].content


def test_neighbours_come_back_in_order() -> None:
    memory = recall_memory(top_k=1, message_range={"before": 2, "after": 1})
    saved = fill(memory, "t1", "alice", 20, fact="My dog Biscuit is a beagle.", at=10)
    memory.create_thread(resource_id="alice", thread_id="t2")
    out = memory.recall(thread_id="t2", new_messages=[HumanMessage("What's my pet's name?")])
    lines = [
        line.split("] ", 1)[1] for line in out[0].content.splitlines() if line.startswith("  [")
    ]
    expected = [m.content for m in saved[8:12]]
    assert [line.split(": ", 1)[1] for line in lines] == expected


def test_same_thread_hits_are_messages_before_the_history_in_mastras_order() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"), options={
        "semantic_recall": {"top_k": 1, "message_range": 0}, "last_messages": 4,
        "recall_placement": "system", "history_window": "sliding"})  # fmt: skip
    fill(memory, "t1", "alice", 60, fact="My sister Marta is getting married on June 14.", at=2)
    out = memory.recall(thread_id="t1", new_messages=[HumanMessage("When is the family wedding?")])
    assert out[0].content == "My sister Marta is getting married on June 14."
    assert out[0].response_metadata["langchain_mastra_memory"] == "semantic_recall"
    assert len(out) == 1 + 4
    # a hit already in the recent history is not repeated
    memory.turns.last_messages = 100
    out = memory.recall(thread_id="t1", new_messages=[HumanMessage("When is the family wedding?")])
    assert sum("Marta" in str(m.content) for m in out) == 1


def test_same_thread_hits_are_fenced_after_the_history() -> None:
    memory = recall_memory(top_k=1, message_range=0, last_messages=4)
    fill(memory, "t1", "alice", 60, fact="My sister Marta is getting married on June 14.", at=2)
    out = memory.recall(thread_id="t1", new_messages=[HumanMessage("When is the family wedding?")])
    block = out[-1]
    assert block.response_metadata["langchain_mastra_memory"] == "semantic_recall"
    assert "<remembered_from_this_conversation>" in block.content
    assert "My sister Marta is getting married on June 14." in block.content
    assert 4 <= len(out) - 1 <= 5  # the block window of 4 (drops 2 at a time)
    memory.turns.last_messages = 100  # a hit already in the recent history is not repeated
    out = memory.recall(thread_id="t1", new_messages=[HumanMessage("When is the family wedding?")])
    assert sum("Marta" in str(m.content) for m in out) == 1


def test_threshold_filters(planted: Memory) -> None:
    processor = as_processor(planted)
    query = "Which city is my home these days?"
    assert processor.search(query, resource_id="alice")
    strict = SemanticRecall(
        planted.storage, planted.vector, planted.embedder, top_k=3, threshold=0.95, mode="vector"
    )
    assert strict.search(query, resource_id="alice") == []
    loose = SemanticRecall(
        planted.storage, planted.vector, planted.embedder, top_k=3, threshold=0.2, mode="vector"
    )
    loose_hits = loose.search(query, resource_id="alice")
    assert loose_hits, "a loose threshold keeps the relevant hits"
    assert all(h.score >= 0.2 for h in loose_hits)


def test_thread_scope_stays_in_the_thread() -> None:
    memory = recall_memory(scope="thread", top_k=3, message_range=0)
    fill(memory, "t1", "alice", 10, fact="I play the cello in an amateur orchestra.", at=1)
    fill(memory, "t2", "alice", 10)
    out = memory.recall(
        thread_id="t2", new_messages=[HumanMessage("What instrument do I practise?")]
    )
    assert not any("cello" in str(m.content) for m in out)
    out = memory.recall(
        thread_id="t1", new_messages=[HumanMessage("What instrument do I practise?")]
    )
    assert any("cello" in str(m.content) for m in out)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_blank_queries_recall_nothing(planted: Memory, query: str) -> None:
    processor = as_processor(planted)
    assert processor.search(query, resource_id="alice") == []
    history = [HumanMessage(query)]
    assert (
        processor.invoke(history, {"configurable": {"thread_id": "new", "resource_id": "alice"}})
        == history
    )


def test_a_query_longer_than_the_model_input(planted: Memory) -> None:
    query = "Which city is my home these days? " + "and also tell me more please " * 500
    out = planted.recall(thread_id="new", new_messages=[HumanMessage(query)])
    assert out and "Lisbon" in out[0].content


def test_scope_resource_needs_a_resource_id(planted: Memory) -> None:
    processor = as_processor(planted)
    with pytest.raises(ConfigurationError, match="resource_id"):
        processor.invoke([HumanMessage("where do I live?")], {"configurable": {}})


def test_processor_in_a_chain_reads_config(planted: Memory) -> None:
    processor = as_processor(planted)
    out = processor.invoke(
        [HumanMessage("Which city is my home these days?")],
        {"configurable": {"thread_id": "new", "resource_id": "alice"}},
    )
    assert "Lisbon" in out[0].content and out[-1].content == "Which city is my home these days?"


class TinyEmbeddings(Embeddings):
    """A third-party-style embedder of another dimension (8), deterministic."""

    model_name = "tiny"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float((hash(text) >> i) & 1) + 0.1 for i in range(8)]


def test_a_collection_of_another_dimension_is_a_clear_error() -> None:
    vector = ChromaVectorStore()
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        vector=vector,
        options={"semantic_recall": {"index_name": "shared-index"}},
    )
    fill(memory, "t1", "alice", 4)
    other = SemanticRecall(memory.storage, vector, TinyEmbeddings(), index_name="shared-index")
    with pytest.raises(VectorStoreError, match="384-dimensional vectors but the embedder makes 8"):
        other.search("hello", resource_id="alice")


def test_deleted_messages_and_threads_are_never_recalled() -> None:
    memory = recall_memory(top_k=5, message_range=0)
    saved = fill(memory, "t1", "alice", 6, fact="My laptop is an old ThinkPad.", at=0)
    fill(memory, "t2", "alice", 4, fact="I drive a blue Honda Civic.", at=0)
    memory.create_thread(resource_id="alice", thread_id="t3")
    index = memory.recall_index.upkeep.index_name()
    before = memory.vector.count(index, 384)
    in_t2 = sum(len(embedding_pieces(m)) for m in memory.get_messages(thread_id="t2"))
    memory.delete_messages([saved[0].id])
    gone = len(embedding_pieces(saved[0]))  # a message is stored as its sentences
    assert gone >= 1 and memory.vector.count(index, 384) == before - gone
    out = memory.recall(thread_id="t3", new_messages=[HumanMessage("What computer do I use?")])
    assert not any("ThinkPad" in str(m.content) for m in out)
    memory.delete_thread("t2")
    assert memory.vector.count(index, 384) == before - gone - in_t2
    out = memory.recall(thread_id="t3", new_messages=[HumanMessage("What car do I own?")])
    assert not any("Civic" in str(m.content) for m in out)


async def test_updated_messages_are_re_embedded() -> None:
    memory = recall_memory(top_k=1, message_range=0)
    saved = fill(memory, "t1", "alice", 6, fact="I support Benfica.", at=0)
    memory.create_thread(resource_id="alice", thread_id="t2")
    await memory.aupdate_messages(
        [saved[0].model_copy(update={"content": "I grew up near Porto."})]
    )
    hits = memory.recall_index.search("Where was I raised?", resource_id="alice")
    assert hits[0].message_id == saved[0].id


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_keyword_and_hybrid_modes(mode: str) -> None:
    memory = recall_memory(mode=mode, top_k=2, message_range=0)
    fill(memory, "t1", "alice", 10, fact="My favourite author is Ursula K. Le Guin.", at=4)
    memory.create_thread(resource_id="alice", thread_id="t2")
    out = memory.recall(thread_id="t2", new_messages=[HumanMessage("Which author do I like?")])
    assert "Le Guin" in out[0].content
    if mode == "keyword":
        assert memory.vector is None  # no embeddings needed


# -- isolation -------------------------------------------------------------------------------------
SECRETS = [
    "my bank PIN is 4312",
    "the alarm code for my flat is 9981",
    "I am secretly planning to quit my job",
    "my passport number is X1234567",
    "my therapist says I should call my mother",
]


@pytest.fixture(scope="module")
def crowd() -> Memory:
    memory = recall_memory(top_k=10, message_range=2, mode="hybrid")
    for r, secret in enumerate(SECRETS):
        fill(memory, f"r{r}-t", f"r{r}", 6, fact=secret, at=2)
        memory.create_thread(resource_id=f"r{r}", thread_id=f"r{r}-new")
    return memory


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    asker=st.integers(0, len(SECRETS) - 1),
    victim=st.integers(0, len(SECRETS) - 1),
    mode=st.sampled_from(["vector", "keyword", "hybrid"]),
)
def test_no_resource_ever_sees_another_resources_messages(
    crowd: Memory, asker: int, victim: int, mode: str
) -> None:
    processor = crowd.recall_index
    processor.options = processor.options.model_copy(update={"mode": mode})
    query = f"Tell me again: {SECRETS[victim]}"  # quotes the victim's text verbatim
    out = crowd.recall(
        thread_id=f"r{asker}-new", resource_id=f"r{asker}", new_messages=[HumanMessage(query)]
    )
    text = "\n".join(str(m.content) for m in out)
    for other, secret in enumerate(SECRETS):
        if other != asker:
            assert secret not in text
    hits = processor.search(query, resource_id=f"r{asker}")
    owners = {crowd.storage.get_thread(h.thread_id).resource_id for h in hits}
    assert owners <= {f"r{asker}"}


def test_logs_and_keeps_going_when_the_vector_store_fails(caplog) -> None:
    storage = SQLiteStorage(":memory:")
    broken = ChromaVectorStore()
    memory = Memory(storage=storage, vector=broken, options={"semantic_recall": {"top_k": 2}})
    memory.create_thread(resource_id="alice", thread_id="t1")
    real_upsert = broken.upsert

    def down(*args, **kwargs):
        raise VectorStoreError("Chroma is unavailable (upsert): connection refused")

    broken.upsert = down  # the store itself fails, as an unreachable server does
    with caplog.at_level(logging.WARNING, logger="langchain_mastra_memory"):
        memory.save_messages(
            [HumanMessage("I moved to Lisbon in March.")], thread_id="t1", resource_id="alice"
        )
        assert memory.flush(timeout=30) is False  # the writer ran, failed, and says so
    assert "stay in the backlog" in caplog.text
    assert memory.vector_backlog().pending == 1
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "I moved to Lisbon in March."
    ]
    assert len(storage.unembedded()) == 1
    broken.upsert = real_upsert
    memory.save_messages(
        [AIMessage("Lovely city.")], thread_id="t1", resource_id="alice"
    )  # wakes the writer, which drains the backlog
    assert memory.flush() is True  # written: the failure is over
    assert storage.unembedded() == [] and memory.vector_backlog().last_error is None
    assert memory.recall_index.search("Where do I live?", resource_id="alice")


def test_the_writer_tries_the_backlog_again_by_itself_once_the_store_is_back() -> None:
    """A vector store down, then back (a server restarted): no save is needed for the backlog
    to be written; the writer tries again after 1 s, backing off."""
    import time

    storage = SQLiteStorage(":memory:")
    store = ChromaVectorStore()
    memory = Memory(storage=storage, vector=store, options={"semantic_recall": {"top_k": 2}})
    memory.create_thread(resource_id="alice", thread_id="t1")
    real_upsert, attempts = store.upsert, []

    def down(*args, **kwargs):
        attempts.append(time.monotonic())
        raise VectorStoreError("Chroma is unavailable (upsert): connection refused")

    store.upsert = down
    memory.save_messages([HumanMessage("I moved to Lisbon.")], thread_id="t1", resource_id="alice")
    assert memory.flush(timeout=30) is False
    while len(attempts) < 2:  # tried again, with no save in between
        time.sleep(0.1)
    store.upsert = real_upsert  # the store is back
    deadline = time.monotonic() + 30
    while not memory.flush(timeout=30):
        assert time.monotonic() < deadline, memory.vector_backlog()
        time.sleep(0.1)
    assert storage.unembedded() == [] and memory.vector_backlog().last_error is None
    assert memory.recall_index.search("Where do I live?", resource_id="alice")
    memory.close()


def test_a_message_is_embedded_as_its_sentences_and_an_update_replaces_them() -> None:
    memory = recall_memory(top_k=3, message_range=0)
    memory.create_thread(resource_id="alice", thread_id="t1")
    (saved,) = memory.save_messages(
        [HumanMessage("Hi there. My dog Rex loves the beach! Anyway, how are you?", name="Ana")],
        thread_id="t1",
        resource_id="alice",
    )
    memory.flush()
    index = memory.recall_index.upkeep.index_name()
    assert memory.vector.count(index, 384) == 3
    hits = memory.recall_index.search("Which animal does Ana have?", resource_id="alice")
    assert [h.message_id for h in hits] == [saved.id]  # the one sentence about it carries it
    memory.update_messages([saved.model_copy(update={"content": "Never mind."})])
    assert memory.vector.count(index, 384) == 1  # the old pieces are gone


def test_hybrid_fusion_keeps_a_clear_winner() -> None:
    from langchain_mastra_memory.recall.index import RecallHit, fuse

    vector = [RecallHit("a", "t", 0.9), RecallHit("b", "t", 0.5), RecallHit("c", "t", 0.49)]
    keyword = [RecallHit("c", "t", 12.0), RecallHit("a", "t", 11.0), RecallHit("d", "t", 1.0)]
    ranked = fuse(vector, keyword, 4)
    assert [h.message_id for h in ranked] == ["a", "c", "b", "d"]
    assert fuse([], keyword, 2)[0].message_id == "c"  # one side alone still ranks
    assert fuse([], [], 3) == []


def test_a_single_collection_from_before_partitioning_is_split_on_first_use(tmp_path) -> None:
    import chromadb

    from langchain_mastra_memory.recall.engines.chroma import partition_name

    path = tmp_path / "vectors"
    storage = SQLiteStorage(tmp_path / "m.db")
    writer = recall_memory(storage=storage)  # embeds the messages (partitioned already)
    fill(writer, "a1", "alice", 3, fact="My violin is from Cremona.", at=1)
    fill(writer, "b1", "bob", 3, fact="My violin is a cheap student model.", at=1)
    index = writer.recall_index
    # the layout of earlier versions: one collection, every resource's vectors in it
    client = chromadb.PersistentClient(path=str(path))
    name = index.upkeep.index_name()
    legacy = client.create_collection(name, metadata={"hnsw:space": "cosine", "dimension": 384})
    for part in writer.vector.partitions(name):
        rows = part.get(include=["embeddings", "metadatas"])
        legacy.add(ids=rows["ids"], embeddings=rows["embeddings"], metadatas=rows["metadatas"])
    moved = legacy.count()
    assert moved == writer.vector.count(name, 384) > 0
    from langchain_mastra_memory import ChromaVectorStore

    reopened = Memory(
        storage=storage,
        vector=ChromaVectorStore(path=path),
        embedder=writer.embedder,
        options={"semantic_recall": {"top_k": 2, "message_range": 0}},
    )
    hits = reopened.recall_index.search("Where is my violin from?", resource_id="alice")
    found = reopened.get_messages(thread_id="a1")
    assert hits and {h.message_id for h in hits} <= {m.id for m in found}
    assert name not in [c.name for c in client.list_collections()]  # split, then dropped
    alice = reopened.vector.count(name, 384, resource_id="alice")
    bob = reopened.vector.count(name, 384, resource_id="bob")
    assert alice > 0 and bob > 0 and alice + bob == moved
    assert partition_name(name, "alice") != partition_name(name, "bob")


def test_reindex_rebuilds_vectors_the_store_lost(tmp_path) -> None:
    from langchain_mastra_memory import ChromaVectorStore

    store = ChromaVectorStore(path=tmp_path / "vectors")
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        vector=store,
        options={"semantic_recall": {"top_k": 2, "message_range": 0}},
    )
    fill(memory, "t1", "alice", 5, fact="My bike is a red Brompton.", at=2)
    fill(memory, "t2", "bob", 3)
    name = memory.recall_index.upkeep.index_name()
    before = store.count(name, 384)
    for partition in store.partitions(name):  # the vector store loses everything
        store.client.delete_collection(partition.name)
    store._collections.clear()
    assert store.count(name, 384) == 0
    assert memory.recall_index.upkeep.backfill() == 0  # the backlog flag alone sees nothing missing
    stored = memory.get_messages(thread_id="t1") + memory.get_messages(thread_id="t2")
    embeddable = sum(bool(embedding_pieces(m)) for m in stored if m.type in ("human", "ai"))
    assert memory.backfill_embeddings() == embeddable > 0  # reindex checks the store itself
    assert store.count(name, 384) == before
    hits = memory.recall_index.search("What bike do I ride?", resource_id="alice")
    assert hits and "Brompton" in str(
        memory.storage.get_messages_by_id([hits[0].message_id])[0].message.content
    )


async def test_side_scores_are_each_sides_own_for_the_owner_only(planted: Memory) -> None:
    index = planted.recall_index
    query = "moved to Lisbon in March"
    scores = index.side_scores(query, resource_id="alice")
    assert set(scores) == {"vector", "keyword"}
    fact = next(m.id for m in planted.get_messages(thread_id="old") if "Lisbon" in str(m.content))
    assert 0 < scores["vector"][fact] <= 1 and scores["keyword"][fact] > 0  # cosine, BM25
    bobs = {m.id for m in planted.get_messages(thread_id="other")}
    assert not bobs & (set(scores["vector"]) | set(scores["keyword"]))
    assert await index.aside_scores(query, resource_id="alice") == scores
    only = index.side_scores(query, resource_id="alice", sides=["keyword"])
    assert only == {"keyword": scores["keyword"]}


@pytest.fixture(
    scope="module",
    params=[pytest.param("postgres", marks=pytest.mark.postgres), "sqlite-file", "sqlite-memory",
            "sqlite-file+qdrant", "sqlite-file+qdrant-edge", "sqlite-file+milvus",
            "sqlite-file+milvus-server"],
)  # fmt: skip
def one_percent(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """20,000 messages of alice in 200 threads; 2 threads (1%) are project "kiln"."""
    from datetime import datetime, timedelta, timezone

    from conftest import make_storage
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_mastra_memory import PostgresStorage
    from langchain_mastra_memory.storage.records import ImportedThread

    folder = tmp_path_factory.mktemp("one-percent")
    storage = make_storage(request.param.split("+")[0], folder)
    vector = None
    if request.param.endswith("+qdrant"):  # Qdrant's local mode: filtered inside the search
        from langchain_mastra_memory import QdrantVectorStore

        vector = QdrantVectorStore(folder / "qdrant")
    if request.param.endswith("+qdrant-edge"):  # Qdrant's engine: payload indexes, filtered
        from langchain_mastra_memory import QdrantEdgeVectorStore  # HNSW once optimized

        vector = QdrantEdgeVectorStore(folder / "edge", optimize_after=5_000)
    if request.param.endswith("+milvus"):  # Milvus Lite: the resource is the partition key
        from langchain_mastra_memory import MilvusVectorStore

        vector = MilvusVectorStore(folder / "milvus.db")
    if request.param.endswith("+milvus-server"):  # the session's real server (2.3)
        from helpers import drop_milvus_collections

        from langchain_mastra_memory import MilvusVectorStore

        uri = request.getfixturevalue("milvus_uri")
        request.addfinalizer(lambda: drop_milvus_collections(uri))
        vector = MilvusVectorStore(uri=uri)
    memory = Memory(storage=storage, embedder=DeterministicFakeEmbedding(size=16),
                    vector=vector, options={"semantic_recall": {"mode": "hybrid"}})  # fmt: skip
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    memory.writes.save_import([
        ImportedThread(
            thread_id=f"t{t}", resource_id="alice",
            metadata={"project": "kiln" if t in (17, 171) else f"p{t}"},
            messages=[HumanMessage(f"pottery note {t}-{i} about glazes") for i in range(100)],
            created_at=[start + timedelta(minutes=100 * t + i) for i in range(100)],
        )
        for t in range(200)
    ])  # fmt: skip
    memory.flush(900)
    yield memory
    if isinstance(storage, PostgresStorage):
        storage.drop_schema()
    storage.close()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_a_filter_matching_one_percent_still_fills_top_k(one_percent: Memory, mode: str) -> None:
    """The recall filter keeps 1% of a 20k-message resource. The threads it keeps are searched
    inside both sides (vector store and keyword index), so recall returns `top_k` hits from
    them instead of what of a 10 x top_k pool survived the filter (about one)."""
    from langchain_mastra_memory.recall.index import RecallOptions

    memory = one_percent
    options = RecallOptions(top_k=10, message_range=0, mode=mode, filter={"project": "kiln"})
    found = memory.recall_index.recall(
        "pottery glazes", resource_id="alice", thread_id=None, exclude=set(), options=options
    )
    assert len(found) == 10
    assert {s.thread_id for s in found} <= {"t17", "t171"}
    nothing = RecallOptions(top_k=10, mode=mode, filter={"project": "none"})
    assert memory.recall_index.recall("pottery glazes", resource_id="alice", thread_id=None,
                                      exclude=set(), options=nothing) == []  # fmt: skip
