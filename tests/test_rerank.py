"""Recall's second stage: a LangChain document compressor reorders the first stage's pool."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pytest
from langchain_classic.retrievers.document_compressors import EmbeddingsFilter
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import Field

from langchain_mastra_memory import ConfigurationError, Memory, SQLiteStorage
from langchain_mastra_memory.integrations.retriever import MemoryRetriever
from langchain_mastra_memory.recall.embedders import default_embedder
from langchain_mastra_memory.testing import strict_model

WHEN = datetime(2024, 5, 7, 9, 30, tzinfo=timezone.utc)
TURNS = [
    HumanMessage("My sister's dog is called Biscuit.", name="Dana"),
    AIMessage("Biscuit is a lovely name for a dog.", name="Sam"),
    HumanMessage("I finally opened my own car maintenance shop.", name="Dana"),
    AIMessage("Congratulations on the shop!", name="Sam"),
    HumanMessage("We walked the dog by the river.", name="Dana"),
]


class PrefersWord(BaseDocumentCompressor):
    """A scorer standing in for a cross-encoder: documents holding `word` first, the others
    after in the order given; it records what it was shown."""

    word: str
    seen: list[list[Document]] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks = None
    ) -> Sequence[Document]:
        self.seen.append(list(documents))
        self.queries.append(query)
        return sorted(documents, key=lambda d: self.word not in d.page_content)


class Broken(BaseDocumentCompressor):
    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks = None
    ) -> Sequence[Document]:
        raise RuntimeError("rerank API unreachable")


def cosine(a: Any, b: Any) -> np.ndarray:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return (a @ b.T) / np.outer(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1))


def keyword_memory(**recall: Any) -> Memory:
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        options={"semantic_recall": {"mode": "keyword", "top_k": 2, **recall}},
    )
    memory.create_thread(thread_id="t1", resource_id="alice")
    memory.save_messages(TURNS, thread_id="t1", resource_id="alice", created_at=[WHEN] * 5)
    memory.create_thread(thread_id="b1", resource_id="bob")
    memory.save_messages(
        [HumanMessage("Bob's dog is a shop dog called Rex.", name="Bob")],
        thread_id="b1",
        resource_id="bob",
    )
    return memory


def texts(memory: Memory, query: str) -> list[str]:
    index = memory.recall_index
    assert index is not None
    found = {s.message.id: s for s in memory.storage.get_messages_by_id(
        [h.message_id for h in index.search(query, resource_id="alice")]
    )}  # fmt: skip
    return [
        str(found[h.message_id].message.content) for h in index.search(query, resource_id="alice")
    ]


def test_the_reranker_reorders_the_first_stage_and_sees_speaker_date_and_ids() -> None:
    plain = keyword_memory()
    assert texts(plain, "dog")[0] != "We walked the dog by the river."
    reranker = PrefersWord(word="river")
    memory = keyword_memory(reranker=reranker, rerank_weight=3.0)
    assert texts(memory, "dog")[0] == "We walked the dog by the river."
    shown = reranker.seen[-1]
    assert reranker.queries[-1] == "dog"
    assert [d.page_content for d in shown if "river" in d.page_content] == [
        "Dana (2024-05-07): We walked the dog by the river."
    ]
    assert all(d.metadata["thread_id"] == "t1" and d.metadata["message_id"] for d in shown)
    assert not any("Rex" in d.page_content for d in shown)  # another resource: never shown


def test_only_the_pool_is_scored_and_the_weight_decides_between_the_stages() -> None:
    reranker = PrefersWord(word="river")
    memory = keyword_memory(reranker=reranker, rerank_pool=2, top_k=3)
    texts(memory, "dog")
    assert len(reranker.seen[-1]) == 3  # the pool is at least top_k
    zero = PrefersWord(word="river")
    assert texts(keyword_memory(reranker=zero, rerank_weight=0.0), "dog") == texts(
        keyword_memory(), "dog"
    )  # weight 0: the first stage's order


def test_a_failing_reranker_leaves_the_first_stage_order_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        found = texts(keyword_memory(reranker=Broken()), "dog")
    assert found == texts(keyword_memory(), "dog")
    assert "the reranker failed" in caplog.text and "rerank API unreachable" in caplog.text


def test_a_reranker_that_is_not_a_compressor_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="BaseDocumentCompressor"):
        keyword_memory(reranker=lambda documents, query: documents)


async def test_async_recall_awaits_the_rerankers_async_twin() -> None:
    class AsyncOnly(PrefersWord):
        def compress_documents(self, *args: Any, **kwargs: Any) -> Sequence[Document]:
            raise AssertionError("the sync method on the async path")

        async def acompress_documents(
            self, documents: Sequence[Document], query: str, callbacks: Callbacks = None
        ) -> Sequence[Document]:
            return sorted(documents, key=lambda d: self.word not in d.page_content)

    memory = keyword_memory(reranker=AsyncOnly(word="river"), rerank_weight=3.0)
    index = memory.recall_index
    assert index is not None
    hits = await index.asearch("dog", resource_id="alice")
    found = memory.storage.get_messages_by_id([hits[0].message_id])
    assert found[0].message.content == "We walked the dog by the river."


def test_a_per_call_option_keeps_the_configured_reranker() -> None:
    reranker = PrefersWord(word="river")
    memory = keyword_memory(reranker=reranker, rerank_weight=3.0)
    memory.create_thread(thread_id="t2", resource_id="alice")
    model = strict_model(AIMessage("By the river."))
    options = {"semantic_recall": {"top_k": 1, "message_range": 0}}
    config = {"configurable": {"thread_id": "t2", "user_id": "alice", "memory_options": options}}
    (memory.as_runnable() | model).invoke({"input": [HumanMessage("the dog walk?")]}, config)
    assert reranker.seen  # the call's options kept the memory's reranker
    assert "river" in " ".join(str(m.content) for m in model.seen[0])


def test_langchains_embeddings_filter_reranks_hybrid_recall_offline() -> None:
    """A real LangChain compressor (embedding similarity, the offline model) as the second
    stage of hybrid recall, through the retriever."""
    embedder = default_embedder()
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        embedder=embedder,
        options={
            "semantic_recall": {
                "top_k": 2,
                "reranker": EmbeddingsFilter(embeddings=embedder, k=5, similarity_fn=cosine),
                "rerank_weight": 2.0,
            }
        },
    )
    memory.create_thread(thread_id="t1", resource_id="alice")
    memory.save_messages(TURNS, thread_id="t1", resource_id="alice")
    memory.flush()
    documents = MemoryRetriever(memory=memory, resource_id="alice", k=2).invoke(
        "Dave's new business venture"
    )
    assert "car maintenance shop" in documents[0].page_content


@pytest.mark.parametrize(
    "bad",
    [{"rerank_pool": 0}, {"rerank_pool": 201}, {"rerank_weight": -1.0}, {"context_weight": -0.5}],
)
def test_second_stage_options_out_of_range_are_refused(bad: dict) -> None:
    with pytest.raises(ConfigurationError, match="semantic_recall"):
        Memory(storage=SQLiteStorage(":memory:"), options={"semantic_recall": bad})
