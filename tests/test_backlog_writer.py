"""Embeddings leave the turn's critical path: saved messages are embedded by a background
writer from the durable backlog; `flush()` and a later search wait for it; a crash loses none."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import ChromaVectorStore, Memory, SQLiteStorage


class GatedEmbeddings(Embeddings):
    """A real (tiny, deterministic) embedder that waits at a gate before each batch."""

    model_name = "gated-8"

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


def test_a_crash_before_the_writer_ran_loses_no_backlog(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os
        from langchain_core.messages import HumanMessage
        from langchain_mastra_memory import ChromaVectorStore, Memory, SQLiteStorage
        memory = Memory(storage=SQLiteStorage({str(tmp_path / "m.db")!r}),
                        vector=ChromaVectorStore(path={str(tmp_path / "v")!r}),
                        options={{"semantic_recall": {{"mode": "vector"}}}})
        memory.create_thread(resource_id="alice", thread_id="t1")
        memory.recall_index.writer.notify = lambda: None  # the writer never gets to run
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
