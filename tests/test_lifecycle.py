"""Thread lifecycle as in Mastra 1.x: a clone that copies what the thread knows (filtered or
limited messages, its working memory, its observation log, its vectors at once), and giving a
thread to another resource."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import (
    ConfigurationError,
    Memory,
    MemoryStorage,
    ResourceMismatchError,
    ThreadNotFoundError,
)

T0 = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
KEY = "thread:t1"


@pytest.fixture
def memory(storage: MemoryStorage) -> Memory:
    """Hybrid recall with real vectors; alice's thread t1: six messages an hour apart, a
    thread-scoped working memory and an observation log covering the first four."""
    memory = Memory(storage=storage, options={"semantic_recall": {"scope": "thread"}})
    memory.create_thread(thread_id="t1", resource_id="alice", title="Garden")
    texts = ["I grow tomatoes", "Tomatoes need sun", "Also basil on the balcony",
             "Basil likes water", "The shed is blue", "A blue shed, noted"]  # fmt: skip
    memory.save_messages(
        [(HumanMessage if i % 2 == 0 else AIMessage)(t, id=f"m{i}") for i, t in enumerate(texts)],
        thread_id="t1", resource_id="alice",
        created_at=[T0 + timedelta(hours=i) for i in range(6)],
    )  # fmt: skip
    storage.modify_working_memory(
        lambda _: "# Garden\n- grows: tomatoes, basil", resource_id="alice", thread_id="t1"
    )
    assert storage.claim_observation(KEY, owner="test", seconds=60)
    storage.commit_observation(
        KEY, owner="test", resource_id="alice", text="* user grows tomatoes and basil",
        current_task=None, message_ids=["m0", "m1", "m2", "m3"], token_count=8.0,
    )  # fmt: skip
    memory.flush(60)
    return memory


def texts(memory: Memory, thread_id: str) -> list[str]:
    return [m.content for m in memory.get_messages(thread_id=thread_id)]


def test_a_clone_copies_messages_working_memory_log_and_vectors(memory: Memory, call) -> None:
    clone = call(memory, "clone_thread", "t1", new_thread_id="c1", resource_id="alice")
    assert clone.metadata["clone"]["source_thread_id"] == "t1" and clone.title == "Garden"
    assert texts(memory, "c1") == texts(memory, "t1")
    copied = memory.get_messages(thread_id="c1")
    assert not {m.id for m in copied} & {f"m{i}" for i in range(6)}  # new ids
    wm = memory.storage.get_working_memory(resource_id="alice", thread_id="c1")
    assert wm == "# Garden\n- grows: tomatoes, basil"
    (group,) = memory.storage.observation_log("thread:c1")
    assert group.text == "* user grows tomatoes and basil"
    assert list(group.message_ids) == [m.id for m in copied[:4]]  # the copies it covers
    unobserved = memory.storage.unobserved_messages("thread:c1", resource_id="alice",
                                                    thread_id="c1")  # fmt: skip
    assert [m.message.content for m in unobserved] == texts(memory, "t1")[4:]
    assert memory.storage.unembedded() == []  # vectors written before clone_thread returned
    hits = memory.recall_index.search("blue shed", resource_id="alice", thread_id="c1")
    assert hits and {h.thread_id for h in hits} == {"c1"}
    assert memory.storage.observation_log(KEY)[0].message_ids == ("m0", "m1", "m2", "m3")


def test_a_clone_takes_filtered_and_limited_messages(memory: Memory, call) -> None:
    ranged = call(
        memory, "clone_thread", "t1",
        message_filter={"since": T0 + timedelta(hours=1), "until": T0 + timedelta(hours=5)},
    )  # fmt: skip
    assert texts(memory, ranged.id) == ["Tomatoes need sun", "Also basil on the balcony",
                                        "Basil likes water", "The shed is blue"]  # fmt: skip
    newest = call(memory, "clone_thread", "t1", message_limit=2)
    assert texts(memory, newest.id) == ["The shed is blue", "A blue shed, noted"]
    # the log's one group speaks of messages left behind: not carried (issue 49 item 3)
    assert memory.storage.observation_history(f"thread:{newest.id}") == []
    unobserved = memory.storage.unobserved_messages(
        f"thread:{newest.id}", resource_id="alice", thread_id=newest.id
    )
    assert len(unobserved) == 2
    picked = call(
        memory, "clone_thread", "t1", message_filter={"message_ids": ["m1", "m4", "nope"]},
        message_limit=1,
    )  # fmt: skip
    assert texts(memory, picked.id) == ["The shed is blue"]
    assert texts(memory, call(memory, "clone_thread", "t1", message_limit=0).id) == []


@pytest.mark.parametrize(
    "bad",
    [{"message_limit": -1}, {"message_filter": {"colour": "red"}},
     {"message_filter": {"since": "yesterday"}}, {"message_filter": ["m1"]}],
)  # fmt: skip
def test_bad_clone_options_are_refused_and_nothing_is_made(memory: Memory, bad: dict) -> None:
    with pytest.raises(ConfigurationError):
        memory.clone_thread("t1", new_thread_id="c9", **bad)
    assert memory.get_thread("c9") is None


def test_another_resource_cannot_clone(memory: Memory, call) -> None:
    with pytest.raises(ResourceMismatchError):
        call(memory, "clone_thread", "t1", new_thread_id="c2", resource_id="mallory")
    assert memory.get_thread("c2") is None


def test_a_transfer_moves_everything_to_the_new_owner(memory: Memory, call) -> None:
    moved = call(memory, "transfer_thread", "t1", to_resource_id="bob", resource_id="alice")
    assert moved.resource_id == "bob"
    storage = memory.storage
    assert {s.resource_id for s in storage.list_messages("t1")} == {"bob"}
    assert storage.get_working_memory(resource_id="bob", thread_id="t1").startswith("# Garden")
    with pytest.raises(ResourceMismatchError):
        storage.get_working_memory(resource_id="alice", thread_id="t1")
    assert [g.resource_id for g in storage.observation_log(KEY)] == ["bob"]
    assert [t.id for t in memory.list_threads(resource_id="alice")] == []
    assert storage.search_text("tomatoes", resource_id="alice") == []  # owner tokens followed
    assert {h[0] for h in storage.search_text("tomatoes", resource_id="bob")} == {"m0", "m1"}
    index = memory.recall_index
    assert index.search("blue shed", resource_id="alice", thread_id="t1") == []
    assert {h.message_id for h in index.search("blue shed", resource_id="bob", thread_id="t1")}
    assert memory.search_messages("basil", resource_id="alice").total == 0
    assert memory.search_messages("basil", resource_id="bob", mode="keyword").total == 2


def test_a_transfer_is_for_the_owner_only(memory: Memory, call) -> None:
    with pytest.raises(ResourceMismatchError):
        call(memory, "transfer_thread", "t1", to_resource_id="mallory", resource_id="mallory")
    assert memory.get_thread("t1").resource_id == "alice"
    assert {s.resource_id for s in memory.storage.list_messages("t1")} == {"alice"}
    with pytest.raises(ThreadNotFoundError):
        call(memory, "transfer_thread", "nope", to_resource_id="bob")
    with pytest.raises(ConfigurationError):
        call(memory, "transfer_thread", "t1", to_resource_id="")
    same = call(memory, "transfer_thread", "t1", to_resource_id="alice")  # already its owner
    assert same.resource_id == "alice" and len(texts(memory, "t1")) == 6


def test_a_clone_after_a_restart_copies_vectors_and_embeds_nothing(
    storage: MemoryStorage, call
) -> None:
    """The originals' vectors are read back and written under the copies' ids: a new process
    (an empty embedding cache) clones a thread without one call to the model."""
    from test_embeddings import Counting

    from langchain_mastra_memory.recall.embedders import EMBEDDING_CACHE

    first = Counting()
    writer = Memory(storage=storage, embedder=first, options={"semantic_recall": True})
    writer.create_thread(thread_id="long", resource_id="alice")
    lines = [f"Note {i}: the {c} fence by the {p} needs paint. Then lunch." for i, (c, p) in
             enumerate((c, p) for c in ("red", "blue", "green") for p in ("pond", "shed", "gate"))]  # fmt: skip
    writer.save_messages([HumanMessage(t) for t in lines], thread_id="long", resource_id="alice")
    writer.flush(60)
    assert first.texts >= len(lines)
    writer.recall_index.upkeep.writer.close()  # the restart: the first process is gone
    EMBEDDING_CACHE.clear()
    counting = Counting()
    reader = Memory(storage=storage, embedder=counting, vector=writer.vector,
                    options={"semantic_recall": True})  # fmt: skip
    reader.recall_index.upkeep.index_name()  # the model's dimension, probed once per process
    counting.texts = 0
    clone = call(reader, "clone_thread", "long", new_thread_id="copy", resource_id="alice")
    assert counting.texts == 0
    assert storage.unembedded() == []
    copies = {m.id for m in reader.get_messages(thread_id=clone.id)}
    index = reader.recall_index.upkeep.index_name()
    originals = {m.id: m for m in reader.get_messages(thread_id="long")}
    copied = writer.vector.vectors(index, "alice", sorted(copies))
    source = writer.vector.vectors(index, "alice", sorted(originals))
    assert len(copied) == len(lines) and all(len(v) == 2 for v in copied.values())  # 2 pieces
    assert first.texts >= len(lines) and counting.texts == 0
    text = {m.id: m.content for m in reader.get_messages(thread_id="copy")}
    by_text = {text[i]: v for i, v in copied.items()}
    for message_id, pieces in source.items():  # the same vectors (to float32's last bit)
        assert np.allclose(by_text[originals[message_id].content], pieces, atol=1e-6)
    hits = reader.recall_index.search("the blue fence by the gate", resource_id="alice",
                                      thread_id="copy", within_thread=True, mode="vector")  # fmt: skip
    # the copy is searchable (the top hit is one of its gate notes: red/blue/green by the gate
    # score within float noise of each other, so which of them leads is not asserted)
    assert hits and hits[0].message_id in text and "by the gate" in text[hits[0].message_id]
