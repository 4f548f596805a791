"""Embeddings leave the turn's critical path: saved messages are embedded by a background
writer from the durable backlog; `flush()` and a later search wait for it; a crash loses none."""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import ChromaVectorStore, Memory, SQLiteStorage
from langchain_mastra_memory.recall.embedders import CachedEmbeddings


class GatedEmbeddings(Embeddings):
    """A real (tiny, deterministic) embedder that waits at a gate before each batch."""

    model_name = "gated-8"
    symmetric = True  # a query's vector is the document's: one cache entry, one embedding

    def __init__(self) -> None:
        self.gate = threading.Event()

    def _vector(self, text: str) -> list[float]:
        return [float((hash(text) >> i) & 1) + 0.1 for i in range(8)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.gate.wait(30)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def gated_memory(embedder: GatedEmbeddings) -> Memory:
    """Vector recall on `embedder`, with alice's thread t1."""
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        vector=ChromaVectorStore(),
        embedder=embedder,
        options={"semantic_recall": {"mode": "vector"}},
    )
    memory.create_thread(resource_id="alice", thread_id="t1")
    return memory


def test_save_returns_before_the_embedding_and_flush_waits_for_it() -> None:
    embedder = GatedEmbeddings()
    memory = gated_memory(embedder)
    memory.save_messages([HumanMessage("first")], thread_id="t1", resource_id="alice")
    # the embedder is still blocked, yet the save has returned: the turn does not wait
    assert len(memory.storage.unembedded()) == 1
    assert memory.flush(timeout=0.2) is False  # still at the gate
    embedder.gate.set()
    assert memory.flush(timeout=30) is True
    assert memory.storage.unembedded() == []
    hits = memory.recall_index.search("first", resource_id="alice")
    assert [h.thread_id for h in hits] == ["t1"]


def test_a_search_waits_for_what_this_process_saved() -> None:
    embedder = GatedEmbeddings()
    embedder.gate.set()
    memory = gated_memory(embedder)
    saved = memory.save_messages([HumanMessage("a note")], thread_id="t1", resource_id="alice")
    hits = memory.recall_index.search("a note", resource_id="alice")  # no flush by the caller
    assert [h.message_id for h in hits] == [saved[0].id]


@pytest.mark.parametrize(
    "held",
    [
        "memory.recall_index.upkeep.writer.notify = lambda *ids, **kw: None  # the writer never runs",
        "memory.recall_index.upkeep.writer.linger = 3600.0  # nobody waits: the write lingers",
    ],
    ids=["writer never ran", "write lingering"],
)
def test_a_crash_before_the_writer_ran_loses_no_backlog(tmp_path: Path, held: str) -> None:
    """What is not written yet (never started, or lingering) is in the durable backlog: the
    next process's first drain writes it."""
    script = textwrap.dedent(
        f"""
        import os
        from langchain_core.messages import HumanMessage
        from langchain_mastra_memory import ChromaVectorStore, Memory, SQLiteStorage
        memory = Memory(storage=SQLiteStorage({str(tmp_path / "m.db")!r}),
                        vector=ChromaVectorStore(path={str(tmp_path / "v")!r}),
                        options={{"semantic_recall": {{"mode": "vector"}}}})
        memory.create_thread(resource_id="alice", thread_id="t1")
        {held}
        memory.save_messages([HumanMessage("I keep bees on the roof.")],
                             thread_id="t1", resource_id="alice")
        os._exit(9)  # killed before any embedding
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=300)
    assert done.returncode == 9, done.stderr.decode()
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        vector=ChromaVectorStore(path=tmp_path / "v"),
        options={"semantic_recall": {"mode": "vector"}},
    )
    assert len(memory.storage.unembedded()) == 1  # the backlog survived the crash
    memory.save_messages([HumanMessage("hello")], thread_id="t1", resource_id="alice")
    memory.flush()  # the next save's writer drains all of it
    assert memory.storage.unembedded() == []
    hits = memory.recall_index.search("Where are the bees?", resource_id="alice")
    assert hits and hits[0].thread_id == "t1"


class HeldTexts(GatedEmbeddings):
    """Embeds at once, except texts in `held`, which wait at the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.held: set[str] = set()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.held & set(texts):
            self.gate.wait(30)
        return [self._vector(t) for t in texts]


def test_settle_waits_for_what_this_process_queued_except_what_it_is_told_to_ignore(
    call,
) -> None:
    embedder = HeldTexts()
    text = f"the question ({call.mode})"  # (the embedding cache is the process's)
    embedder.held.add(text)
    memory = gated_memory(embedder)
    writer = memory.recall_index.upkeep.writer
    [question] = memory.save_messages([HumanMessage(text)], thread_id="t1", resource_id="alice")
    assert call(writer, "wait_written", 0.2, ignoring=frozenset({question.id})) is True
    assert call(writer, "wait_written", 0.2) is False  # the question is still at the gate
    assert call(writer, "flush", 0.2) is False
    embedder.gate.set()
    assert call(writer, "wait_written", 30) is True
    assert memory.storage.unembedded() == []


def held_writes(memory: Memory) -> tuple[set[str], threading.Event]:
    """Vector writes of the messages whose ids are put in the returned set wait at the gate."""
    held: set[str] = set()
    gate = threading.Event()
    store = memory.recall_index.vector
    upsert = store.upsert

    @functools.wraps(upsert)
    def gated(self, index_name, records):
        if held & {r.message_id for r in records}:
            gate.wait(30)
        return upsert(index_name, records)

    store.upsert = types.MethodType(gated, store)  # (a bound method, as `twins.call` takes)
    return held, gate


def test_a_turn_s_recall_does_not_wait_for_the_vector_of_its_own_question(call, caplog) -> None:
    embedder = HeldTexts()
    memory = gated_memory(embedder)
    memory.recall_index.upkeep.flush_timeout = 1.0  # (a wait would end in a warning)
    held, gate = held_writes(memory)
    memory.save_messages(
        [HumanMessage("I keep bees on the roof.")], thread_id="t1", resource_id="alice"
    )
    memory.flush()
    question = HumanMessage(f"where do I keep my bees {call.mode}", id=f"q-{call.mode}")
    held.add(str(question.id))
    memory.save_messages([question], thread_id="t1", resource_id="alice")  # as a checkpointer
    context = call(memory, "context", [question], thread_id="t1", resource_id="alice")
    assert "I keep bees on the roof." in [m.content for m in context]
    assert "still busy" not in caplog.text  # the question's vector write was not waited for
    # another message this process saved is waited for (and its vector found)
    held.add(f"again-{call.mode}")
    memory.save_messages(
        [HumanMessage(f"bees again {call.mode}", id=f"again-{call.mode}")],
        thread_id="t1", resource_id="alice",
    )  # fmt: skip
    call(memory, "context", [HumanMessage("bees?")], thread_id="t1", resource_id="alice")
    assert "still busy" in caplog.text
    gate.set()
    assert memory.flush(timeout=30)


def test_a_query_waits_for_the_same_text_being_embedded_and_does_not_embed_it_again(
    call,
) -> None:
    embedder = HeldTexts()
    text, other = f"embedded once ({call.mode})", f"other ({call.mode})"
    embedder.held.add(text)
    calls: list[list[str]] = []
    inner = embedder.embed_documents
    embedder.embed_documents = lambda texts: (calls.append(list(texts)), inner(texts))[1]
    query = embedder.embed_query
    embedder.embed_query = lambda text: (calls.append([text]), query(text))[1]
    cached = CachedEmbeddings(embedder)
    writer = threading.Thread(target=cached.embed_documents, args=([text, other],))
    writer.start()  # at the gate, with `text` in flight
    while not calls:
        threading.Event().wait(0.01)
    threading.Timer(0.3, embedder.gate.set).start()
    vector = call(cached, "embed_query", text)  # waits for the writer's embedding
    writer.join(30)
    assert calls == [[text, other]]  # embedded once, by the writer
    assert vector == pytest.approx(embedder._vector(text))
    again = call(cached, "embed_documents", [text, other])
    assert again[0] == vector and again[1] == pytest.approx(embedder._vector(other))
    assert calls == [[text, other]]  # and cached


def test_a_query_waits_for_another_s_embedding_only_so_long(call, monkeypatch) -> None:
    from langchain_mastra_memory.recall.embedders import cache as embeddings

    monkeypatch.setattr(embeddings, "IN_FLIGHT_WAIT", 0.2)
    embedder = HeldTexts()
    text = f"a hung embedding ({call.mode})"
    embedder.held.add(text)
    cached = CachedEmbeddings(embedder)
    hung = threading.Thread(target=cached.embed_documents, args=([text],))
    hung.start()  # at the gate, with `text` in flight, until the end of the test
    while not cached.cache._computing:
        threading.Event().wait(0.01)
    assert call(cached, "embed_query", text) == pytest.approx(embedder._vector(text))
    embedder.gate.set()
    hung.join(30)


class RecordedTexts(HeldTexts):
    """`HeldTexts` that records every text it embeds as a document."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = super().embed_documents(texts)
        self.embedded.extend(texts)
        return vectors


def test_a_message_updated_after_it_was_handed_over_is_embedded_as_updated(call) -> None:
    """A save hands its messages to the writer (no read back); an update before the writer
    ran makes what was handed over stale: the writer reads storage instead."""
    embedder = RecordedTexts()
    memory = gated_memory(embedder)
    memory.save_messages([HumanMessage("warm-up")], thread_id="t1", resource_id="alice")
    assert memory.flush(timeout=30)  # the first drain reads storage (a sweep)
    embedder.held.add(f"blocker {call.mode}")
    memory.save_messages([HumanMessage(f"blocker {call.mode}")], thread_id="t1",
                         resource_id="alice")  # fmt: skip  # the writer waits at the gate
    [note] = memory.save_messages(
        [HumanMessage(f"the hive is blue {call.mode}", id=f"n-{call.mode}")],
        thread_id="t1", resource_id="alice",
    )  # fmt: skip
    edited = HumanMessage(f"the hive is green {call.mode}", id=note.id)
    call(memory, "update_messages", [edited], resource_id="alice")
    embedder.gate.set()
    assert memory.flush(timeout=30) and memory.storage.unembedded() == []
    assert stored_vector(memory, note.id) == pytest.approx(unit(embedder._vector(edited.text)))
    hits = memory.recall_index.search(f"the hive is green {call.mode}", resource_id="alice")
    assert hits and hits[0].message_id == note.id


def stored_vector(memory: Memory, message_id: str) -> list[float]:
    """The one vector the store holds for a message, as a unit vector."""
    assert memory.recall_index is not None and memory.vector is not None
    name = memory.recall_index.upkeep.index_name()
    [vector] = memory.vector.vectors(name, "alice", [message_id])[message_id]
    return unit(vector)


def unit(vector: Any) -> list[float]:
    norm = math.sqrt(sum(float(x) ** 2 for x in vector))
    return [float(x) / norm for x in vector]


def test_an_update_that_overtakes_the_drain_writing_it_wins(call) -> None:
    """The drain under way holds the message (its batch waits at the embedder) when an update
    embeds the new text: the drain's write of the old text lands last, so the writer writes
    the message again from storage once done."""
    embedder = RecordedTexts()
    memory = gated_memory(embedder)
    memory.save_messages([HumanMessage("warm-up")], thread_id="t1", resource_id="alice")
    assert memory.flush(timeout=30)  # (the first drain reads storage: a sweep)
    embedder.held.add(f"overtaken blocker {call.mode}")
    _, note = memory.save_messages(
        [HumanMessage(f"overtaken blocker {call.mode}"),
         HumanMessage(f"the overtaken hive is blue {call.mode}", id=f"n-{call.mode}")],
        thread_id="t1", resource_id="alice",
    )  # fmt: skip  # one drain holds both, at the gate
    while not memory.recall_index.upkeep.writer._busy:  # (texts of its own: none is cached)
        threading.Event().wait(0.01)
    edited = HumanMessage(f"the overtaken hive is green {call.mode}", id=note.id)
    call(memory, "update_messages", [edited], resource_id="alice")  # embeds green at once
    embedder.gate.set()
    assert memory.flush(timeout=30) and memory.storage.unembedded() == []
    blue = embedder.embedded.index(f"the overtaken hive is blue {call.mode}")
    assert (
        embedder.embedded.index(f"the overtaken hive is green {call.mode}") < blue
    )  # the race ran
    assert stored_vector(memory, note.id) == pytest.approx(unit(embedder._vector(edited.text)))


def test_a_delete_that_overtakes_the_drain_writing_it_leaves_no_vector() -> None:
    embedder = RecordedTexts()
    memory = gated_memory(embedder)
    memory.save_messages([HumanMessage("warm-up")], thread_id="t1", resource_id="alice")
    assert memory.flush(timeout=30)  # (the first drain reads storage: a sweep)
    embedder.held.add("deleted blocker")
    _, note = memory.save_messages(
        [HumanMessage("deleted blocker"), HumanMessage("the deleted hive is blue", id="n-gone")],
        thread_id="t1", resource_id="alice",
    )  # fmt: skip
    while not memory.recall_index.upkeep.writer._busy:
        threading.Event().wait(0.01)
    memory.delete_messages([note.id], resource_id="alice")
    embedder.gate.set()
    assert memory.flush(timeout=30)
    name = memory.recall_index.upkeep.index_name()
    assert memory.vector.vectors(name, "alice", [note.id]) == {}


def test_handed_over_messages_are_embedded_and_a_sweep_finds_what_was_not(tmp_path: Path) -> None:
    embedder = RecordedTexts()
    embedder.gate.set()
    memory = gated_memory(embedder)
    memory.save_messages([HumanMessage("one")], thread_id="t1", resource_id="alice")
    assert memory.flush(timeout=30)
    memory.save_messages([HumanMessage("two")], thread_id="t1", resource_id="alice")
    assert memory.flush(timeout=30) and memory.storage.unembedded() == []
    assert embedder.embedded == ["one", "two"]
    # a backlog left by another writer (stored, never handed over here) waits for a sweep:
    # a save's drain writes what was handed over only ...
    writer = memory.recall_index.upkeep.writer
    memory.storage.save_messages([HumanMessage("left over")], thread_id="t1", resource_id="alice")
    memory.save_messages([HumanMessage("three")], thread_id="t1", resource_id="alice")
    assert writer.flush(timeout=30)  # (this process's writes)
    assert [m.message.content for m in memory.storage.unembedded()] == ["left over"]
    writer._swept_at = -float("inf")  # ... until a minute later, a save's drain sweeps
    memory.save_messages([HumanMessage("four")], thread_id="t1", resource_id="alice")
    assert writer.flush(timeout=30) and memory.storage.unembedded() == []
    assert embedder.embedded[-2:] == ["left over", "four"]
    # and memory.flush() sweeps at once: everything stored so far, whoever stored it
    memory.storage.save_messages([HumanMessage("five")], thread_id="t1", resource_id="alice")
    assert memory.flush(timeout=30) and memory.storage.unembedded() == []
    assert embedder.embedded[-1] == "five"


def test_a_message_a_sweep_wrote_is_not_written_again_from_its_handover() -> None:
    """A save that lands while a sweep reads storage's backlog is in that read AND handed
    over for the next drain: the next drain skips what the sweep already wrote."""
    embedder = GatedEmbeddings()
    embedder.gate.set()
    memory = gated_memory(embedder)
    assert memory.recall_index is not None and memory.vector is not None
    writes: list[str] = []  # the message of every vector written
    upsert = memory.vector.upsert

    def recorded(index_name, records):  # type: ignore[no-untyped-def]
        writes.extend(r.message_id for r in records)
        return upsert(index_name, records)

    memory.vector.upsert = recorded  # type: ignore[method-assign]
    storage = memory.recall_index.storage
    reading, second_saved = threading.Event(), threading.Event()
    unembedded = storage.unembedded

    def sweep_read(*args, **kwargs):  # type: ignore[no-untyped-def]
        reading.set()
        second_saved.wait(30)  # the second save lands while the first drain's sweep waits
        return unembedded(*args, **kwargs)

    storage.unembedded = sweep_read  # type: ignore[method-assign]
    first = memory.save_messages([HumanMessage("first")], thread_id="t1", resource_id="alice")
    assert reading.wait(30)  # the first drain is sweeping
    second = memory.save_messages([HumanMessage("second")], thread_id="t1", resource_id="alice")
    second_saved.set()
    assert memory.flush(timeout=30)
    assert sorted(writes) == sorted(m.id for m in [*first, *second])  # each written once
    assert memory.vector_backlog().pending == 0


def recorded_upserts(memory: Memory) -> list[list[str]]:
    """Each vector-store write's message ids, as the writer makes them."""
    assert memory.vector is not None
    calls: list[list[str]] = []
    upsert = memory.vector.upsert

    def recorded(index_name, records):  # type: ignore[no-untyped-def]
        calls.append(sorted(r.message_id for r in records))
        return upsert(index_name, records)

    memory.vector.upsert = recorded  # type: ignore[method-assign]
    return calls


def test_saves_close_together_are_one_vector_write_and_a_flush_ends_the_wait(call) -> None:
    """The writer lingers for more saves (a vector store writes a partition in one call, at a
    cost per call), and a caller that needs the writes ends the linger at once."""
    embedder = GatedEmbeddings()
    embedder.gate.set()
    memory = gated_memory(embedder)
    assert memory.recall_index is not None
    memory.recall_index.upkeep.writer.linger = 3600.0  # (only a waiter can end it within the test)
    calls = recorded_upserts(memory)
    first = memory.save_messages([HumanMessage("one")], thread_id="t1", resource_id="alice")
    second = memory.save_messages([HumanMessage("two")], thread_id="t1", resource_id="alice")
    assert call(memory.recall_index.upkeep.writer, "flush", 30) is True
    assert calls == [sorted(m.id for m in [*first, *second])]  # one write for both
    third = memory.save_messages([HumanMessage("three")], thread_id="t1", resource_id="alice")
    hits = call(memory.recall_index, "search", "three", resource_id="alice")  # waits: ends it
    assert third[0].id in {h.message_id for h in hits}
    assert calls[1:] == [[third[0].id]]


def test_a_search_waits_only_for_its_own_resource_s_writes(call) -> None:
    """Another resource's queued vectors are never a search's hits: it does not wait for them."""
    embedder = HeldTexts()
    text = f"alice's held note ({call.mode})"
    embedder.held.add(text)
    memory = gated_memory(embedder)
    memory.create_thread(resource_id="bob", thread_id="t2")
    writer = memory.recall_index.upkeep.writer
    [held] = memory.save_messages([HumanMessage(text)], thread_id="t1", resource_id="alice")
    assert call(writer, "wait_written", 0.2, resource_id="alice") is False  # hers is at the gate
    assert call(writer, "wait_written", 0.2, resource_id="bob") is True  # his search goes on
    assert call(writer, "wait_written", 0.2) is False  # a caller naming no resource waits for all
    embedder.gate.set()
    assert call(writer, "wait_written", 30, resource_id="alice") is True
    assert held.id in {h.message_id for h in memory.recall_index.search(text, resource_id="alice")}


def test_a_search_has_only_its_own_resource_s_writes_made_at_once(call) -> None:
    """Another resource's saves go on lingering (to be written with its next ones)."""
    embedder = GatedEmbeddings()
    embedder.gate.set()
    memory = gated_memory(embedder)
    memory.create_thread(resource_id="bob", thread_id="t2")
    assert memory.recall_index is not None
    writer = memory.recall_index.upkeep.writer
    writer.linger = 3600.0
    memory.save_messages([HumanMessage("before")], thread_id="t1", resource_id="alice")
    assert call(writer, "flush", 30) is True  # (a first drain reads storage's whole backlog)
    calls = recorded_upserts(memory)
    [hers] = memory.save_messages([HumanMessage("hers")], thread_id="t1", resource_id="alice")
    [his] = memory.save_messages([HumanMessage("his")], thread_id="t2", resource_id="bob")
    assert call(writer, "wait_written", 30, resource_id="alice") is True
    assert calls == [[hers.id]]  # bob's was not written for her search
    [more] = memory.save_messages([HumanMessage("his too")], thread_id="t2", resource_id="bob")
    assert call(writer, "flush", 30) is True
    assert calls == [[hers.id], sorted([his.id, more.id])]  # his two: one write
    assert memory.vector_backlog().pending == 0
