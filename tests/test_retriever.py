"""`MemoryRetriever` / `memory.as_retriever()`: memory as a LangChain retriever, in a retrieval
chain, as an LCEL step, and under LangChain's own standard retriever tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from operator import itemgetter
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_mastra_memory import ConfigurationError, Memory, MemoryRetriever, SQLiteStorage
from langchain_mastra_memory.testing import strict_model

T0 = datetime(2026, 5, 1, 9, tzinfo=timezone.utc)
GARDEN = [
    "I grow tomatoes on the balcony",
    "Tomatoes need six hours of sun",
    "The basil went to seed in July",
    "My neighbour Ana gave me pepper seedlings",
    "The shed roof leaks when it rains",
]


def garden_memory(storage: Any = None, mode: str = "hybrid") -> Memory:
    """alice's two garden threads and one of bob's with the same words."""
    memory = Memory(storage=storage or SQLiteStorage(":memory:"),
                    options={"semantic_recall": {"mode": mode}})  # fmt: skip
    memory.create_thread(thread_id="g1", resource_id="alice", title="Garden",
                         metadata={"topic": "garden"})  # fmt: skip
    memory.create_thread(thread_id="g2", resource_id="alice", title="Shed",
                         metadata={"topic": "repairs"})  # fmt: skip
    memory.create_thread(thread_id="b1", resource_id="bob", title="Bob's garden")
    memory.save_messages(
        [(HumanMessage if i % 2 == 0 else AIMessage)(t) for i, t in enumerate(GARDEN[:4])],
        thread_id="g1", resource_id="alice", created_at=[T0 + timedelta(hours=i) for i in range(4)],
    )  # fmt: skip
    memory.save_messages([HumanMessage(GARDEN[4])], thread_id="g2", resource_id="alice")
    memory.save_messages([HumanMessage("bob grows tomatoes and basil too, secret zq81")],
                         thread_id="b1", resource_id="bob")  # fmt: skip
    memory.flush(60)
    return memory


class TestMemoryRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard retriever suite, bodies unchanged."""

    @property
    def retriever_constructor(self) -> type[MemoryRetriever]:
        return MemoryRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"memory": garden_memory(), "resource_id": "alice"}

    @property
    def retriever_query_example(self) -> str:
        return "what grows in my garden?"


def test_documents_carry_where_and_when_and_scores() -> None:
    memory = garden_memory()
    docs = memory.as_retriever(resource_id="alice", k=2, message_range=1).invoke("tomato sun")
    assert len(docs) == 2 and all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert "Tomatoes" in top.page_content or "tomatoes" in top.page_content
    meta = top.metadata
    assert meta["resource_id"] == "alice" and meta["thread_id"] == "g1"
    assert meta["thread_title"] == "Garden" and meta["role"] in ("user", "assistant")
    assert datetime.fromisoformat(meta["created_at"]).tzinfo is not None
    assert set(meta["scores"]) == {"vector", "keyword"} and meta["score"] > 0
    assert top.id == meta["message_id"]
    assert top.page_content in meta["context"] and meta["context"].count("\n") >= 1
    keyword = memory.as_retriever(resource_id="alice", mode="keyword").invoke("shed roof")
    assert keyword[0].page_content == GARDEN[4] and "context" not in keyword[0].metadata


def test_scope_filter_threshold_and_k_per_call(call_mode: str = "sync") -> None:
    memory = garden_memory()
    in_g2 = memory.as_retriever(resource_id="alice", thread_id="g2").invoke("tomatoes")
    assert {d.metadata["thread_id"] for d in in_g2} <= {"g2"}
    repairs = memory.as_retriever(resource_id="alice", filter={"topic": "repairs"})
    assert [d.metadata["thread_id"] for d in repairs.invoke("tomatoes roof")] == ["g2"]
    strict = memory.as_retriever(resource_id="alice", mode="vector", threshold=0.99)
    assert strict.invoke("tomatoes") == []
    assert len(memory.as_retriever(resource_id="alice", k=4).invoke("garden", k=1)) == 1
    with pytest.raises(ConfigurationError, match="k must be"):
        memory.as_retriever(resource_id="alice").invoke("garden", k=0)


def test_the_resource_comes_from_the_config_and_never_crosses() -> None:
    memory = garden_memory()
    retriever = memory.as_retriever(k=10)
    for config in ({"configurable": {"resource_id": "alice"}},
                   {"configurable": {"user_id": "alice"}}):  # fmt: skip
        docs = retriever.invoke("tomatoes basil", config)
        assert docs and {d.metadata["resource_id"] for d in docs} == {"alice"}
        assert not any("zq81" in d.page_content for d in docs)
    bobs = retriever.invoke("tomatoes basil", {"configurable": {"user_id": "bob"}})
    assert [d.metadata["thread_id"] for d in bobs] == ["b1"]
    assert memory.as_retriever(resource_id="carol").invoke("tomatoes") == []
    assert memory.as_retriever(resource_id="bob", thread_id="g1").invoke("tomatoes") == []
    with pytest.raises(ConfigurationError, match="whose memory"):
        retriever.invoke("tomatoes")


async def test_the_async_twin_answers_the_same() -> None:
    memory = garden_memory()
    retriever = memory.as_retriever(resource_id="alice", k=3)
    sync = retriever.invoke("tomatoes sun")
    assert [d.id for d in await retriever.ainvoke("tomatoes sun")] == [d.id for d in sync]
    assert len(await retriever.ainvoke("tomatoes sun", k=1)) == 1


def format_docs(docs: list[Document]) -> str:
    return "\n".join(d.page_content for d in docs)


def test_in_an_lcel_chain_and_create_retrieval_chain() -> None:
    from langchain_classic.chains import create_retrieval_chain
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain

    memory = garden_memory()
    retriever = memory.as_retriever(resource_id="alice", k=2)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this memory:\n{context}"), ("human", "{input}")]
    )
    model = strict_model(AIMessage("Tomatoes, on the balcony."), AIMessage("Tomatoes."))
    lcel = {"context": itemgetter("input") | retriever | RunnableLambda(format_docs),
            "input": lambda x: x["input"]} | prompt | model  # fmt: skip
    answer = lcel.invoke({"input": "what do I grow?"})
    assert answer.content == "Tomatoes, on the balcony."
    assert "I grow tomatoes on the balcony" in model.seen[-1][0].content
    chain = create_retrieval_chain(retriever, create_stuff_documents_chain(model, prompt))
    result = chain.invoke({"input": "what do I grow?"})
    assert result["answer"] == "Tomatoes." and len(result["context"]) == 2
    assert all(d.metadata["resource_id"] == "alice" for d in result["context"])


async def test_create_retrieval_chain_async() -> None:
    from langchain_classic.chains import create_retrieval_chain
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain

    memory = garden_memory()
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this memory:\n{context}"), ("human", "{input}")]
    )
    model = strict_model(AIMessage("The shed roof."))
    chain = create_retrieval_chain(memory.as_retriever(k=1),
                                   create_stuff_documents_chain(model, prompt))  # fmt: skip
    result = await chain.ainvoke({"input": "what leaks?"},
                                 {"configurable": {"user_id": "alice"}})  # fmt: skip
    assert result["answer"] == "The shed roof."
    assert result["context"][0].page_content == GARDEN[4]


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_on_every_backend(storage, mode: str) -> None:
    memory = garden_memory(storage, mode=mode)
    docs = memory.as_retriever(resource_id="alice", k=3).invoke("tomatoes")
    assert docs and {d.metadata["resource_id"] for d in docs} == {"alice"}
    assert (
        memory.as_retriever(resource_id="bob", k=5).invoke("tomatoes")[0].metadata["thread_id"]
        == "b1"
    )
