"""No wait without a bound: a stuck vector writer, a lock held elsewhere, a hung Observer
(tests/test_observational_memory.py) each cost at most their timeout, then a clear outcome."""

from __future__ import annotations

import logging
import os
import threading
import uuid

import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import Memory, PostgresStorage, SQLiteStorage
from langchain_mastra_memory.errors import StorageError


class StuckOnDocuments(DeterministicFakeEmbedding):
    """Embeds queries at once; documents only once `gate` is set (a hung model or server)."""

    model_config = {"arbitrary_types_allowed": True}  # noqa: RUF012
    gate: threading.Event

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.gate.wait()
        return super().embed_documents(texts)


def test_a_search_waits_for_a_stuck_writer_no_longer_than_flush_timeout(caplog) -> None:
    gate = threading.Event()
    memory = Memory(storage=SQLiteStorage(":memory:"),
                    embedder=StuckOnDocuments(size=8, gate=gate),
                    options={"semantic_recall": {"mode": "hybrid"}})  # fmt: skip
    memory.create_thread(thread_id="t1", resource_id="alice")
    memory.recall_index.upkeep.flush_timeout = 0.2
    memory.save_messages([HumanMessage("the kiln fires at dawn")], thread_id="t1",
                         resource_id="alice")  # fmt: skip
    found: list = []
    search = threading.Thread(
        target=lambda: found.append(memory.recall_index.search("kiln", resource_id="alice"))
    )
    with caplog.at_level(logging.WARNING):
        search.start()
        search.join(60)  # without the bound: until the model answers, here never
        stuck = search.is_alive()
        gate.set()
        search.join()
    assert not stuck
    assert "vector writer is still busy" in caplog.text
    assert found and found[0], "the keyword side still finds the new message"
    assert memory.flush(30)


@pytest.mark.postgres
def test_a_lock_held_elsewhere_fails_the_write_after_lock_timeout_and_changes_nothing() -> None:
    dsn = os.environ["LMM_TEST_POSTGRES_DSN"]
    schema = f"w_{uuid.uuid4().hex[:12]}"
    storage = PostgresStorage(dsn, schema=schema, lock_timeout=0.3)
    try:
        storage.create_thread(thread_id="t1", resource_id="alice")
        storage.save_messages([HumanMessage("first")], thread_id="t1", resource_id="alice")
        with psycopg.connect(dsn) as holder:  # another process's transaction, never ending
            holder.execute(f'SELECT id FROM "{schema}".memory_threads WHERE id = %s FOR UPDATE',
                           ("t1",))  # fmt: skip
            with pytest.raises(StorageError, match="lock timeout"):
                storage.save_messages([HumanMessage("second")], thread_id="t1",
                                      resource_id="alice")  # fmt: skip
            holder.rollback()
        assert [s.message.content for s in storage.list_messages("t1")] == ["first"]
        storage.save_messages([HumanMessage("second")], thread_id="t1", resource_id="alice")
        assert len(storage.list_messages("t1")) == 2
    finally:
        storage.drop_schema()
        storage.close()
