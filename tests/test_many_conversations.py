"""Many conversations in one async process: more turns at once than the event loop's default
executor has threads, and none of them waits on another through it.

The race of issue 71, forced through the public API: turn A's question is saved and the vector
writer takes it, but is slow to reach its embedding (its embedder's first call is slow); as
many other turns as the default executor has threads search meanwhile and wait for the writer;
then A searches for its own question, claiming the text's embedding (a symmetric embedder
shares the query's and the document's), and the writer waits for that embedding. Were the
waiters parked on the default executor, A's embedding would queue behind them: a circular wait
that only the 30 s timeouts break ("the vector writer is still busy after 30 s").
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import HumanMessage
from pydantic import PrivateAttr

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.recall.embedders.cache import EMBEDDING_CACHE

DEFAULT_EXECUTOR_THREADS = 4


class SlowFirstCall(DeterministicFakeEmbedding):
    """A symmetric embedder whose first call takes `first_call` seconds (a model loading)."""

    symmetric: bool = True
    first_call: float = 1.5
    _started: bool = PrivateAttr(default=False)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _maybe_slow(self) -> None:
        with self._lock:
            first, self._started = not self._started, True
        if first:
            time.sleep(self.first_call)

    def embed_query(self, text: str) -> list[float]:
        self._maybe_slow()
        return super().embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._maybe_slow()
        return super().embed_documents(texts)


def _memory() -> Memory:
    EMBEDDING_CACHE.clear()  # a text cached by another test would skip the claim
    return Memory(
        storage=SQLiteStorage(":memory:"),
        embedder=SlowFirstCall(size=16),
        options={"semantic_recall": {"top_k": 2, "message_range": 0}},
    )


async def _the_race(memory: Memory, *, question: str) -> list[object]:
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(DEFAULT_EXECUTOR_THREADS, thread_name_prefix="default")
    )
    asked = HumanMessage(question, id="a-question")
    # (1) A's question is saved: the writer takes it and starts on its slow first call
    await memory.asave_turn([asked], thread_id="a", resource_id="alice")
    # (2) as many turns as the default executor has threads search, waiting for the writer
    others = [
        asyncio.ensure_future(
            memory.acontext(
                [HumanMessage(f"What about plan {i}?")], thread_id=f"b{i}", resource_id="bob"
            )
        )
        for i in range(DEFAULT_EXECUTOR_THREADS)
    ]
    await asyncio.sleep(0.3)
    # (3) A searches with its own question (never waited for), claiming its embedding;
    # (4) the writer reaches the same text and waits for A's embedding
    mine = await memory.acontext([asked], thread_id="a", resource_id="alice")
    return [mine, *(await asyncio.gather(*others))]


def test_turns_beyond_the_default_executor_never_wait_on_each_other(
    caplog: pytest.LogCaptureFixture,
) -> None:
    memory = _memory()
    with caplog.at_level(logging.WARNING, logger="langchain_mastra_memory"):
        contexts = asyncio.run(
            asyncio.wait_for(_the_race(memory, question="Where did I park the car?"), 120)
        )
    busy = [r.getMessage() for r in caplog.records if "still busy" in r.getMessage()]
    assert busy == []
    assert len(contexts) == DEFAULT_EXECUTOR_THREADS + 1
    assert memory.flush(30)  # and the writer wrote A's question
    assert memory.vector_backlog().pending == 0
    found = memory.search_messages("park the car", resource_id="alice", mode="vector")
    assert [h.message.content for h in found.items] == ["Where did I park the car?"]
    theirs = memory.search_messages("park the car", resource_id="bob", mode="vector")
    assert "Where did I park the car?" not in [h.message.content for h in theirs.items]


def test_nested_concurrent_steps_never_wait_on_a_queued_step() -> None:
    """Sync turns beyond `twins`' pool: each runs two steps at once, the second of which runs
    two more (a turn's recall beside its history, recall's keyword and vector sides). A pool
    thread never waits on a step queued behind it."""
    from langchain_mastra_memory.twins import both, call, run_sync

    class Slow:
        def work(self) -> str:
            time.sleep(0.2)
            return "done"

    slow = Slow()

    def inner():  # type: ignore[no-untyped-def]
        return (yield both(call(slow.work), call(slow.work)))

    def outer():  # type: ignore[no-untyped-def]
        first, second = yield both(call(slow.work), inner())
        return first, second

    start = threading.Barrier(8)
    results: list[object] = []

    def turn() -> None:
        start.wait()
        results.append(run_sync(outer()))

    threads = [threading.Thread(target=turn, daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert results == [("done", ("done", "done"))] * 8
