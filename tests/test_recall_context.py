"""Recall's built-in second stage: each top candidate ranked with the conversation around it
(the real offline model, embedded Chroma)."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import LangChainVectorStore, Memory, SQLiteStorage
from langchain_mastra_memory.recall.context import MESSAGE_VECTORS, in_context, neighbours, windows
from langchain_mastra_memory.recall.ranking import RecallHit
from langchain_mastra_memory.storage.records import StoredMessage

QUESTION = "Is Deborah married?"
ANSWER = "We did. My husband and I are trying to be as good a family as my parents were."
SESSIONS = [
    ("s1", [HumanMessage("Did you two finally tie the knot last summer, Deborah?", name="Sam"),
            AIMessage(ANSWER, name="Deborah"), HumanMessage("That sounds wonderful.", name="Sam")]),
    ("s2", [HumanMessage("How is the garden doing?", name="Sam"),
            AIMessage("The tomatoes are finally red and the basil is huge.", name="Deborah")]),
    ("s3", [HumanMessage("My cousin got married in Spain, a beautiful wedding.", name="Sam"),
            AIMessage("Weddings in Spain sound lovely.", name="Deborah")]),
    ("s4", [HumanMessage("Any plans for the weekend?", name="Sam"),
            AIMessage("Probably a long walk and some reading.", name="Deborah"),
            HumanMessage("Is the new job treating you well?", name="Sam"),
            AIMessage("Yes, the team is friendly and the work is interesting.", name="Deborah")]),
]  # fmt: skip


def conversation(vector: object = None, **recall: object) -> Memory:
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        vector=vector,
        options={"semantic_recall": {"top_k": 3, "message_range": 0, **recall}},
    )
    for thread, messages in SESSIONS:
        memory.create_thread(thread_id=thread, resource_id="deb")
        memory.save_messages(messages, thread_id=thread, resource_id="deb")
    memory.flush()
    return memory


def ranked_texts(memory: Memory, limit: int = 6) -> list[str]:
    index = memory.recall_index
    assert index is not None
    hits = index.search(QUESTION, resource_id="deb", limit=limit)
    texts = {s.message.id: str(s.message.content) for s in memory.storage.get_messages_by_id(
        [h.message_id for h in hits])}  # fmt: skip
    return [texts[h.message_id] for h in hits]


def test_the_conversation_around_an_answer_moves_it_into_the_top_k() -> None:
    plain = ranked_texts(conversation(context_weight=0.0))
    default = ranked_texts(conversation())
    assert ANSWER not in plain[:3]  # the first stage alone: the cousin's wedding wins
    assert ANSWER in default[:3]
    assert default.index(ANSWER) < plain.index(ANSWER)
    assert sorted(default) == sorted(plain)  # the same candidates, reordered


async def test_the_async_search_ranks_as_the_sync_one() -> None:
    memory = conversation()
    index = memory.recall_index
    assert index is not None
    sync = index.search(QUESTION, resource_id="deb", limit=6)
    assert await index.asearch(QUESTION, resource_id="deb", limit=6) == sync


def test_a_cold_process_reads_the_vectors_back_and_ranks_the_same() -> None:
    memory = conversation()
    warm = ranked_texts(memory)
    MESSAGE_VECTORS.clear()  # as after a restart: nothing remembered
    assert ranked_texts(memory) == warm
    assert len(MESSAGE_VECTORS.data) >= 6  # read back from the vector store, kept


def test_another_resource_never_lends_its_conversation() -> None:
    memory = conversation()
    memory.create_thread(thread_id="x", resource_id="eve")
    memory.save_messages(
        [HumanMessage("Are you married?", name="Eve"), AIMessage("Yes, happily.", name="Ann")],
        thread_id="x",
        resource_id="eve",
    )
    memory.flush()
    index = memory.recall_index
    assert index is not None
    eves = {m.id for m in memory.get_messages(thread_id="x")}
    assert not eves & {h.message_id for h in index.search(QUESTION, resource_id="deb", limit=9)}


def test_a_store_that_cannot_read_vectors_back_keeps_the_first_stage_order() -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_mastra_memory.recall.embeddings import _default_minilm

    def on_langchain(**recall: object) -> Memory:
        store = LangChainVectorStore(InMemoryVectorStore(_default_minilm()))
        return conversation(store, **recall)

    assert ranked_texts(on_langchain()) == ranked_texts(on_langchain(context_weight=0.0))


def stored(message_id: str, thread_id: str) -> StoredMessage:
    from datetime import datetime, timezone

    return StoredMessage(
        message=HumanMessage("x", id=message_id),
        thread_id=thread_id,
        resource_id="r",
        created_at=datetime.now(timezone.utc),
    )


def test_a_candidates_neighbour_is_the_message_before_it_in_its_thread() -> None:
    around = [stored("a1", "a"), stored("a2", "a"), stored("b1", "b"), stored("b2", "b")]
    found = neighbours(["a2", "b1", "b2", "gone"], around)
    assert found == {"a2": ["a1"], "b1": [], "b2": ["b1"]}


def test_a_window_is_the_unit_sum_of_the_known_means_and_scores_add_to_the_first_stage() -> None:
    means = {"a": np.array([1.0, 0.0]), "n": np.array([0.0, 1.0])}
    found = windows({"a": ["n", "tool-result"], "lonely": ["tool-result"]}, means)
    assert set(found) == {"a"}
    np.testing.assert_allclose(found["a"], [2**-0.5, 2**-0.5], rtol=1e-6)
    hits = [RecallHit("a", "t", 0.5), RecallHit("lonely", "t", 1.0)]
    reordered = in_context(hits, found, [0.0, 1.0], weight=2.0)
    assert [h.message_id for h in reordered] == ["a", "lonely"]
    assert reordered[0].score == pytest.approx(2.0 * 2**-0.5)  # normalised 0 + 2 * cos
    assert reordered[1].score == pytest.approx(1.0)  # no window: its normalised score alone
