"""Recall's built-in second stage: each top candidate ranked with the conversation around it
(the real offline model, embedded Chroma)."""

from __future__ import annotations

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import LangChainVectorStore, Memory, SQLiteStorage
from langchain_mastra_memory.recall.ranking import (
    MESSAGE_VECTORS,
    RecallHit,
    by_thread,
    in_context,
    neighbours,
    remember,
    remembered,
    windows,
    with_follow_ups,
)
from langchain_mastra_memory.storage.records import Neighbour

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


def conversation(
    vector: object = None, *, sessions: list = SESSIONS, resource: str = "deb", **recall: object
) -> Memory:
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        vector=vector,
        options={"semantic_recall": {"top_k": 3, "message_range": 0, **recall}},
    )
    for thread, messages in sessions:
        memory.create_thread(thread_id=thread, resource_id=resource)
        memory.save_messages(messages, thread_id=thread, resource_id=resource)
    memory.flush()
    return memory


def ranked_texts(
    memory: Memory, limit: int = 6, *, query: str = QUESTION, resource: str = "deb"
) -> list[str]:
    index = memory.recall_index
    assert index is not None
    hits = index.search(query, resource_id=resource, limit=limit)
    texts = {s.message.id: str(s.message.content) for s in memory.storage.get_messages_by_id(
        [h.message_id for h in hits], resource_id=resource)}  # fmt: skip
    return [texts[h.message_id] for h in hits]


def test_the_conversation_around_an_answer_moves_it_into_the_top_k() -> None:
    plain = ranked_texts(conversation(context_weight=0.0))
    windowed = ranked_texts(conversation(follow_ups=0, thread_weight=0.0))
    assert ANSWER not in plain[:3]  # the first stage alone: the cousin's wedding wins
    assert ANSWER in windowed[:3]
    assert windowed.index(ANSWER) < plain.index(ANSWER)
    assert sorted(windowed) == sorted(plain)  # the same candidates, reordered
    assert ANSWER in ranked_texts(conversation())[:3]  # and with the default's other rules


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

    from langchain_mastra_memory.recall.embedders.cache import _default_minilm

    def on_langchain(**recall: object) -> Memory:
        store = LangChainVectorStore(InMemoryVectorStore(_default_minilm()))
        return conversation(store, **recall)

    assert ranked_texts(on_langchain()) == ranked_texts(on_langchain(context_weight=0.0))


def stored(message_id: str, thread_id: str, text: str = "x", kind: str = "human") -> Neighbour:
    return Neighbour(message_id, thread_id, kind, text)


def test_a_candidates_neighbour_is_the_message_before_it_in_its_thread() -> None:
    around = [stored("a1", "a"), stored("a2", "a"), stored("b1", "b"), stored("b2", "b")]
    found = neighbours(["a2", "b1", "b2", "gone"], around)
    assert found == {"a2": ["a1"], "b1": [], "b2": ["b1"]}


def test_a_question_candidates_neighbour_is_its_answer() -> None:
    around = [
        stored("a1", "a", "We moved last spring."),
        stored("a2", "a", "Where did you end up moving?"),
        stored("a3", "a", "Lisbon!"),
        stored("b1", "b", "Did you like it\uff1f"),  # full-width question mark
        stored("b2", "b", "Not at first?  "),  # the thread's last message: no answer in it
        stored("c1", "c", "The light there."),
    ]
    found = neighbours(["a2", "a3", "b1", "b2"], around)
    assert found == {"a2": ["a3"], "a3": ["a2"], "b1": ["b2"], "b2": []}


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


def unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else vector


@pytest.mark.parametrize("seed", range(6))
def test_means_and_windows_made_as_matrices_are_the_per_message_sums(seed: int) -> None:
    """`remember` and `windows` build one matrix each: the same vectors as a mean per message
    and a sum per candidate (messages of 1-8 pieces, a zero vector, a message with no pieces,
    candidates with no known mean, an own share other than 1)."""
    rng = np.random.default_rng(seed)
    pieces = {f"m{n}": rng.standard_normal((int(rng.integers(1, 9)), 16)) for n in range(40)}
    pieces["zero"], pieces["none"] = np.zeros((1, 16)), np.zeros((0, 16))
    means = remember(f"test-means-{seed}", pieces)
    assert set(means) == set(pieces) - {"none"}
    for message_id, mean in means.items():
        np.testing.assert_allclose(mean, unit(pieces[message_id].mean(axis=0)), atol=1e-6)
    cached = remembered(f"test-means-{seed}", list(pieces))
    assert set(cached) == set(means)
    means["m0"][:] = 7.0  # (the cache holds its own copies)
    np.testing.assert_allclose(cached["m0"], unit(pieces["m0"].mean(axis=0)), atol=1e-6)
    means = remembered(f"test-means-{seed}", list(pieces))
    ids = [*means, "unknown", "tool-result"]
    window_ids = {
        candidate: [str(m) for m in rng.choice(ids, size=int(rng.integers(0, 4)), replace=False)]
        for candidate in [*rng.choice(ids, size=20, replace=False)]
    }
    share = float(rng.choice([1.0, 0.5, 2.0]))
    found = windows(window_ids, means, own_share=share)
    for candidate, around in window_ids.items():
        parts = ([share * means[candidate]] if candidate in means else []) + [
            means[m] for m in around if m in means
        ]
        if not parts:
            assert candidate not in found
            continue
        np.testing.assert_allclose(found[candidate], unit(np.sum(parts, axis=0)), atol=1e-6)


MOVED = "Lisbon! The light there is amazing and the pastries are even better."
MOVES = [
    ("s1", [HumanMessage("Where did you end up moving after you sold the house, Ana?", name="Sam"),
            AIMessage(MOVED, name="Ana"), HumanMessage("I am so happy for you.", name="Sam")]),
    ("s2", [HumanMessage("The city council wants to move the market to the river.", name="Sam"),
            AIMessage("Moving the market would annoy the whole city.", name="Ana")]),
    ("s3", [HumanMessage("My brother moved to a new city for his job.", name="Sam"),
            AIMessage("Moving cities for work is hard.", name="Ana")]),
    ("s4", [HumanMessage("Which movie did you watch in the city cinema?", name="Sam"),
            AIMessage("A French comedy, very silly.", name="Ana")]),
]  # fmt: skip


MOVE = "Which city did Ana move to?"


def moves(**recall: object) -> Memory:
    """Ana's sessions; a pool of 3 (the first stage's top 3 only)."""
    return conversation(sessions=MOVES, resource="ana", rerank_pool=3, **recall)


def found_texts(memory: Memory) -> list[str]:
    return ranked_texts(memory, 3, query=MOVE, resource="ana")


def test_the_answer_after_a_matching_question_joins_the_candidates() -> None:
    alone = found_texts(moves(follow_ups=0))
    assert MOVED not in alone  # the first stage's pool of 3: the question, not its answer
    assert "Where did you end up moving after you sold the house, Ana?" in alone
    assert MOVED in found_texts(moves())


def test_a_thread_where_the_best_candidates_gather_ranks_higher() -> None:
    assert MOVED not in found_texts(moves(thread_weight=0.0))  # the question shares its window
    default = found_texts(moves())
    assert sum(t in default for t in (MOVED, MOVES[0][1][0].content)) == 2  # s1's pair


async def test_follow_ups_and_threads_rank_the_same_in_the_async_search() -> None:
    memory = moves()
    index = memory.recall_index
    assert index is not None
    sync = index.search(MOVE, resource_id="ana", limit=3)
    assert await index.asearch(MOVE, resource_id="ana", limit=3) == sync


def test_a_follow_up_is_the_next_user_or_assistant_message_of_the_same_thread() -> None:
    around = [stored("a1", "a"), stored("a2", "a"), stored("b1", "b"), stored("b2", "b")]
    around.append(stored("b3", "b", "42", kind="tool"))
    hits = [RecallHit("a1", "", 0.9), RecallHit("a2", "", 0.7), RecallHit("b2", "", 0.5)]
    found = with_follow_ups(hits, around, top=3)
    # a2 follows a1 but is a candidate already; nothing follows a2 in its thread (b1 is
    # another thread's); b2's next is a tool result
    assert [h.message_id for h in found] == ["a1", "a2", "b2"]
    found = with_follow_ups([RecallHit("b1", "", 0.9), RecallHit("a1", "", 0.2)], around, top=1)
    assert found[-1] == RecallHit("b2", "b", 0.2)  # after the top 1 only, at the pool's floor
    assert len(found) == 3
    assert with_follow_ups(hits, around, top=0) == hits


def test_a_thread_gains_in_proportion_to_its_share_of_the_best_scores() -> None:
    hits = [RecallHit("a", "t1", 1.0), RecallHit("b", "t2", 0.9), RecallHit("c", "t2", 0.8)]
    boosted = by_thread(hits, weight=0.5)
    assert [h.message_id for h in boosted] == ["b", "c", "a"]  # t2: 1.7, t1: 1.0
    assert boosted[0].score == pytest.approx(0.9 + 0.5)
    assert boosted[2].score == pytest.approx(1.0 + 0.5 * 1.0 / 1.7)
    assert by_thread(hits, weight=0.0) == hits


@pytest.mark.parametrize("bad", [{"follow_ups": -1}, {"thread_weight": -0.5}, {"follow_ups": "x"}])
def test_follow_ups_and_thread_weight_refuse_bad_values(bad: dict[str, object]) -> None:
    from pydantic import ValidationError

    from langchain_mastra_memory.recall.options import RecallOptions

    with pytest.raises(ValidationError):
        RecallOptions(**bad)


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_neighbours_are_the_windows_without_their_message_objects(
    backend: str, tmp_path
) -> None:
    """`message_neighbours` reads what the context stage needs (id, thread, type, searchable
    text) in `message_windows`' order, as the contract's default derives it from the windows;
    another resource's ids give nothing (sync and async)."""
    from conftest import make_storage

    from langchain_mastra_memory.storage.base import ConversationStorage

    memory = Memory(
        storage=make_storage("sqlite-file" if backend == "sqlite" else backend, tmp_path),
        options={"semantic_recall": False},
    )
    for thread, messages in [*SESSIONS, ("bob-t", [HumanMessage("Bob's own note")])]:
        owner = "bob" if thread == "bob-t" else "deb"
        memory.create_thread(thread_id=thread, resource_id=owner)
        memory.save_messages(messages, thread_id=thread, resource_id=owner)
    storage = memory.storage
    ids = [m.id or "" for t, _ in SESSIONS[:2] for m in memory.get_messages(thread_id=t)][1:4]
    light = storage.message_neighbours(ids, resource_id="deb")
    derived = ConversationStorage.message_neighbours(storage, ids, resource_id="deb")
    assert light == derived and len(light) >= len(ids)
    assert [n.type for n in light if n.id == ids[0]] == ["ai"]
    assert any(n.text == f"Deborah: {ANSWER}" for n in light)  # the name, as search has it
    assert await storage.amessage_neighbours(ids, resource_id="deb") == light
    assert storage.message_neighbours(ids, resource_id="bob") == []
    assert await storage.amessage_neighbours(ids, resource_id="bob") == []
