"""`LangChainVectorStore`: recall's vectors in LangChain vector stores (langchain-core's
`InMemoryVectorStore`, langchain-chroma, langchain-qdrant's local mode, langchain-milvus on Milvus
Lite), with the recall, isolation and lifecycle of the native stores; an unknown store without a
filter is refused, a filter that does not hold never leaks another resource's messages."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import garden
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_mastra_memory import (
    ConfigurationError,
    LangChainVectorStore,
    Memory,
    MiniLMEmbeddings,
    SQLiteStorage,
)
from langchain_mastra_memory.recall.embedders.cache import _default_minilm

KINDS = ["in-memory", "chroma", "qdrant", "milvus"]


def langchain_store(kind: str, folder: Path, embeddings: Embeddings) -> VectorStore:
    """A real LangChain store of `kind`, embedded (no server)."""
    if kind == "in-memory":
        return InMemoryVectorStore(embeddings)
    if kind == "chroma":
        from langchain_chroma import Chroma

        return Chroma("memory", embeddings, persist_directory=str(folder / "chroma"))
    if kind == "qdrant":
        from langchain_qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient, models

        client = QdrantClient(":memory:")
        client.create_collection(
            "memory", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE)
        )
        return QdrantVectorStore(client, "memory", embeddings)
    from langchain_milvus import Milvus

    return Milvus(
        embeddings, connection_args={"uri": str(folder / "milvus.db")}, auto_id=False,
        index_params={"index_type": "FLAT", "metric_type": "COSINE"},
        enable_dynamic_field=True,
    )  # fmt: skip


def found(memory: Memory, call: Any, query: str, resource_id: str) -> set[str]:
    hits = call(memory.recall_index, "search", query, resource_id=resource_id)
    return {h.thread_id for h in hits}


@pytest.mark.parametrize("kind", KINDS)
def test_recall_isolation_and_lifecycle_on_a_langchain_store(
    tmp_path: Path, call: Any, kind: str
) -> None:
    store = LangChainVectorStore(langchain_store(kind, tmp_path, _default_minilm()))
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"), vector=store,
                    options={"semantic_recall": {"mode": "vector"}})  # fmt: skip
    assert memory.recall_index.embedder.embedder is store.embeddings  # queries share its space
    garden(memory)
    hits = call(memory.recall_index, "search", "what vegetables do I grow?", resource_id="alice")
    assert hits and hits[0].thread_id == "g1" and 0.2 < hits[0].score <= 1.0
    assert "b1" not in found(memory, call, "locker code", "alice")  # never bob's
    assert found(memory, call, "locker code", "bob") == {"b1"}
    only = call(memory.recall_index, "search", "tomatoes", resource_id="alice", thread_id="g9",
                within_thread=True)  # fmt: skip
    assert only == []  # scoped to a thread alice has no messages in
    # clone, then transfer the copy: its vectors follow it to bob, and leave alice
    call(memory, "clone_thread", "g1", new_thread_id="g2", resource_id="alice")
    memory.flush(60)
    assert found(memory, call, "tomatoes on the balcony", "alice") == {"g1", "g2"}
    call(memory, "transfer_thread", "g2", to_resource_id="bob", resource_id="alice")
    memory.flush(60)
    assert found(memory, call, "tomatoes on the balcony", "alice") == {"g1"}
    assert "g2" in found(memory, call, "tomatoes on the balcony", "bob")
    # delete: the thread's vectors go from the store itself, not only from storage
    ids = [m.id for m in memory.get_messages(thread_id="g1")]
    call(memory, "delete_thread", "g1", resource_id="alice")
    raw = store.store.similarity_search_by_vector(
        store.embeddings.embed_query("tomatoes on the balcony"), k=10
    )
    assert not {d.metadata["message_id"] for d in raw} & set(ids)
    assert memory.storage.unembedded() == []


class NotesStore(VectorStore):
    """A LangChain store this package knows nothing about (an engine of the user's own)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.inner = InMemoryVectorStore(embeddings)

    @property
    def embeddings(self) -> Embeddings:
        return self.inner.embeddings

    def add_documents(self, documents: list[Any], **kwargs: Any) -> list[str]:
        return self.inner.add_documents(documents, **kwargs)

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        return self.inner.add_texts(texts, metadatas, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> None:
        self.inner.delete(ids)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Any]:
        return self.inner.similarity_search(query, k, **kwargs)

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None
    ) -> list[Any]:
        return self.inner.similarity_search_with_score_by_vector(embedding, k, filter=filter)

    @classmethod
    def from_texts(cls, texts: Any, embedding: Embeddings, metadatas: Any = None, **kw: Any):
        raise NotImplementedError


def test_an_unknown_store_needs_a_filter_and_then_is_scoped_by_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="filter=lambda resource_id, thread_ids"):
        LangChainVectorStore(NotesStore(_default_minilm()))
    with pytest.raises(ConfigurationError, match="langchain_core VectorStore"):
        LangChainVectorStore(object())

    def mine(resource_id: str, threads: frozenset[str] | None) -> Any:
        return lambda doc: (
            doc.metadata["resource_id"] == resource_id
            and (threads is None or doc.metadata["thread_id"] in threads)
        )

    store = LangChainVectorStore(NotesStore(_default_minilm()), filter=mine)
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), vector=store,
                    options={"semantic_recall": {"mode": "vector"}})  # fmt: skip
    garden(memory)
    hits = memory.recall_index.search("locker code", resource_id="bob", limit=5)
    assert [h.thread_id for h in hits] == ["b1"]  # top_k filled from bob's alone


def test_a_filter_that_does_not_hold_leaks_nothing_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = LangChainVectorStore(
        InMemoryVectorStore(_default_minilm()), filter=lambda resource_id, threads: None
    )  # a mistaken filter: every document passes
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), vector=store,
                    options={"semantic_recall": {"mode": "vector"}})  # fmt: skip
    garden(memory)
    with caplog.at_level(logging.WARNING):
        hits = memory.recall_index.search("bob's locker code", resource_id="alice")
    assert hits and all(h.thread_id == "g1" for h in hits)
    assert "hit(s) outside resource 'alice'" in caplog.text


def test_another_embedder_than_the_stores_is_refused(tmp_path: Path) -> None:
    store = LangChainVectorStore(InMemoryVectorStore(_default_minilm()))
    with pytest.raises(ConfigurationError, match="same object"):
        Memory(storage=SQLiteStorage(tmp_path / "m.db"), vector=store,
               embedder=MiniLMEmbeddings(), options={"semantic_recall": True})  # fmt: skip
    Memory(storage=SQLiteStorage(tmp_path / "m.db"), vector=store,
           embedder=store.embeddings, options={"semantic_recall": True})  # fmt: skip


class CountingEmbeddings(Embeddings):
    """MiniLM, counting the texts it embeds as documents (a model name of its own: the
    process-wide embedding cache does not answer for it from an earlier test)."""

    def __init__(self, name: str) -> None:
        self.inner, self.documents, self.model_name = _default_minilm(), 0, f"counting-{name}"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


@pytest.mark.parametrize(("kind", "per_piece"), [("milvus", 1), ("in-memory", 2)])
def test_a_store_taking_vectors_gets_them_instead_of_embedding_again(
    tmp_path: Path, kind: str, per_piece: int
) -> None:
    counting = CountingEmbeddings(tmp_path.name)
    store = LangChainVectorStore(langchain_store(kind, tmp_path, counting))
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"), vector=store,
                    options={"semantic_recall": {"mode": "vector"}})  # fmt: skip
    garden(memory)
    pieces = 4  # "I grow tomatoes...", two sentences of the answer, bob's line
    assert counting.documents == pieces * per_piece  # Milvus: add_embeddings, no second pass
    hits = memory.recall_index.search("what vegetables do I grow?", resource_id="alice")
    assert hits and hits[0].thread_id == "g1"
