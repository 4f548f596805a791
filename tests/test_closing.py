"""`Memory.close` / `aclose`: what a memory opened is released (found by the state machine of
issue 83: every `Memory` kept its files, sockets and threads until the process ended, about 16
descriptors each, so a process opening memories one after another ran out of them)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import ChromaVectorStore, Memory, SQLiteStorage, StorageError

OPTIONS = {"semantic_recall": {"mode": "vector", "top_k": 2}, "working_memory": {"enabled": True}}


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def memory_in(folder: Path) -> Memory:
    return Memory(storage=SQLiteStorage(folder / "m.db"),
                  vector=ChromaVectorStore(path=folder / "vectors"),
                  embedder=DeterministicFakeEmbedding(size=16), options=OPTIONS)  # fmt: skip


def use(memory: Memory) -> None:
    memory.create_thread(thread_id="t", resource_id="alice")
    memory.save_messages([HumanMessage("My boat is the Albatross."), AIMessage("Lovely.")],
                         thread_id="t", resource_id="alice")  # fmt: skip
    assert memory.flush(30)
    assert memory.search_messages("boat", resource_id="alice", mode="vector").items


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_memories_opened_one_after_another_hold_no_more_descriptors(mode: str, tmp_path) -> None:
    def open_use_close(n: int) -> None:
        folder = tmp_path / f"m{n}"
        folder.mkdir()
        if mode == "sync":
            with contextlib.closing(memory_in(folder)) as memory:
                use(memory)
            return

        async def run() -> bool:
            memory = memory_in(folder)
            await memory.acreate_thread(thread_id="t", resource_id="alice")
            await memory.asave_messages([HumanMessage("Tea, no sugar.")], thread_id="t",
                                        resource_id="alice")  # fmt: skip
            return await memory.aclose()

        assert asyncio.run(run())

    for n in range(3):  # (the first ones load what stays for the process: pools, models)
        open_use_close(n)
    ours = ("lmm-backlog-writer", "memory-titles", "memory-observer")
    running = lambda: sum(t.name.startswith(ours) for t in threading.enumerate())  # noqa: E731
    before, threads = open_descriptors(), running()
    for n in range(3, 9):
        open_use_close(n)
    assert open_descriptors() <= before + 1  # (not 16 more a memory)
    assert running() <= threads  # (none of the six left a thread of ours)


def test_a_closed_memory_says_so_and_its_data_is_there_for_the_next(tmp_path) -> None:
    memory = memory_in(tmp_path)
    use(memory)
    assert memory.close() is True
    with pytest.raises(StorageError, match="closed"):
        memory.get_messages(thread_id="t", resource_id="alice")
    again = memory_in(tmp_path)
    assert [m.content for m in again.get_messages(thread_id="t", resource_id="alice")] == [
        "My boat is the Albatross.", "Lovely."]  # fmt: skip
    hits = again.search_messages("My boat is the Albatross.", resource_id="alice", mode="vector")
    assert hits.items[0].message.content == "My boat is the Albatross."
    again.close()


def test_closing_one_of_two_memories_over_one_folder_leaves_the_other_working(tmp_path) -> None:
    first, second = memory_in(tmp_path), memory_in(tmp_path)
    use(first)
    first.close()  # (Chroma runs one engine per folder: it stops with the last client)
    second.save_messages([HumanMessage("Second one here.")], thread_id="t", resource_id="alice")
    assert second.flush(30)
    found = second.search_messages("Second one here.", resource_id="alice", mode="vector")
    assert found.items[0].message.content == "Second one here."
    second.close()


def test_a_client_given_to_the_vector_store_stays_the_caller_s(tmp_path) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path / "given"),
                                       settings=Settings(anonymized_telemetry=False))  # fmt: skip
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), vector=ChromaVectorStore(client=client),
                    embedder=DeterministicFakeEmbedding(size=16), options=OPTIONS)  # fmt: skip
    use(memory)
    memory.close()
    assert client.list_collections()  # still open: the caller closes it
    client.close()


def test_closing_stops_the_observer_s_thread(tmp_path) -> None:
    from test_observational_memory import Scripted

    def observed_once(n: int) -> None:
        memory = Memory(storage=SQLiteStorage(tmp_path / f"om{n}.db"), options={
            "observational_memory": {"model": Scripted(calls=[]), "message_tokens": 20,
                                     "buffer_tokens": None}})  # fmt: skip
        memory.create_thread(thread_id="t", resource_id="alice")
        memory.save_messages([HumanMessage("I moved to Lisbon in March, near the river."),
                              AIMessage("Noted: Lisbon, by the river.")],
                             thread_id="t", resource_id="alice")  # fmt: skip
        assert memory.flush(30)
        assert memory.storage.observation_log("thread:t")  # (the Observer's thread ran)
        assert memory.close()

    observers = lambda: sum(t.name == "memory-observer" for t in threading.enumerate())  # noqa: E731
    before = observers()
    for n in range(4):
        observed_once(n)
        assert observers() == before


def writer_threads() -> int:
    return sum(t.name == "lmm-backlog-writer" and t.is_alive() for t in threading.enumerate())


@pytest.mark.parametrize("failing", [False, True], ids=["block ends", "block raises"])
def test_with_memory_writes_its_vectors_and_closes_on_the_way_out(
    tmp_path: Path, failing: bool
) -> None:
    before = writer_threads()
    with contextlib.suppress(ValueError), memory_in(tmp_path) as memory:
        memory.create_thread(thread_id="t", resource_id="alice")
        memory.save_messages([HumanMessage("My boat is the Albatross.")], thread_id="t",
                             resource_id="alice")  # fmt: skip
        assert writer_threads() == before + 1
        if failing:
            raise ValueError("the block failed")
    assert writer_threads() == before  # stopped and joined
    with pytest.raises(StorageError):  # closed
        memory.get_messages(thread_id="t", resource_id="alice")
    after = SQLiteStorage(tmp_path / "m.db")
    assert after.count_unembedded() == 0  # written before the block ended
    after.close()


def test_async_with_memory_writes_its_vectors_and_closes_on_the_way_out(tmp_path: Path) -> None:
    before = writer_threads()

    async def program() -> None:
        async with memory_in(tmp_path) as memory:
            await memory.acreate_thread(thread_id="t", resource_id="alice")
            await memory.asave_messages([HumanMessage("Tea, no sugar.")], thread_id="t",
                                        resource_id="alice")  # fmt: skip
        with pytest.raises(StorageError):
            await memory.aget_messages(thread_id="t", resource_id="alice")

    asyncio.run(program())
    assert writer_threads() == before
    after = SQLiteStorage(tmp_path / "m.db")
    assert after.count_unembedded() == 0
    after.close()


def test_flush_writes_what_another_process_left_and_a_read_only_memory_writes_nothing(
    tmp_path: Path, call
) -> None:
    """`flush()` means everything stored so far is searchable, whoever stored it: messages
    in storage's backlog that this memory never saw (saved past it, as another process would)
    are written by its flush; a read-only memory leaves the backlog alone (its caller may hold
    a read-only role)."""
    memory = memory_in(tmp_path)
    memory.create_thread(thread_id="t", resource_id="alice")
    assert call(memory, "flush", 30)  # the start's sweep: nothing there
    reader = Memory(storage=SQLiteStorage(tmp_path / "m.db"),
                    vector=ChromaVectorStore(path=tmp_path / "vectors"),
                    embedder=DeterministicFakeEmbedding(size=16),
                    options={**OPTIONS, "read_only": True})  # fmt: skip
    memory.storage.save_messages([HumanMessage("The violin is in the attic.")], thread_id="t",
                                 resource_id="alice")  # fmt: skip
    assert call(reader, "flush", 30) is True and memory.storage.count_unembedded() == 1
    assert call(memory, "flush", 30) is True and memory.storage.count_unembedded() == 0
    hits = memory.search_messages("The violin is in the attic.", resource_id="alice", mode="vector")
    assert [h.message.content for h in hits.items] == ["The violin is in the attic."]
    reader.close()
    memory.close()


def test_a_memory_opened_over_a_backlog_writes_it_by_itself(tmp_path: Path) -> None:
    """No flush, no save: the writer sweeps at start, behind the turn (the next process of a
    program that ended early)."""
    storage = SQLiteStorage(tmp_path / "m.db")
    storage.create_thread(thread_id="t", resource_id="alice")
    storage.save_messages([HumanMessage(f"Note {i} about the garden.") for i in range(5)],
                          thread_id="t", resource_id="alice")  # fmt: skip
    storage.close()
    memory = memory_in(tmp_path)
    writer = memory.recall_index.upkeep.writer
    for _ in range(300):  # the sweep lingers a second at most: wait for it, bounded
        if memory.storage.count_unembedded() == 0:
            break
        threading.Event().wait(0.05)
    assert memory.storage.count_unembedded() == 0 and writer.last_error is None
    memory.close()


def test_an_idle_writer_sweeps_what_another_process_left(tmp_path: Path, monkeypatch) -> None:
    """A live memory whose writer has been idle for `SWEEP_EVERY` reads storage's backlog by
    itself: another process's leftovers are written with no save and no flush here."""
    from langchain_mastra_memory.recall import writer as backlog_writer

    monkeypatch.setattr(backlog_writer, "SWEEP_EVERY", 0.3)
    memory = memory_in(tmp_path)
    memory.create_thread(thread_id="t", resource_id="alice")
    assert memory.flush(30)  # (its start's sweep done: the writer idles from here)
    other = SQLiteStorage(tmp_path / "m.db")  # another process's save, past this memory
    other.save_messages([HumanMessage("The kayak is blue.")], thread_id="t", resource_id="alice")
    for _ in range(300):
        if memory.storage.count_unembedded() == 0:
            break
        threading.Event().wait(0.05)
    assert memory.storage.count_unembedded() == 0
    other.close()
    memory.close()


def test_a_storage_closed_under_the_writer_stops_it_quietly(tmp_path: Path, caplog) -> None:
    """Storage closed by its owner, not through `memory.close()`: the writer's next wake-up
    (an idle sweep, a flush) stops it without an error logged, and a flush returns."""
    memory = memory_in(tmp_path)
    use(memory)
    writer = memory.recall_index.upkeep.writer
    memory.storage.close()
    with caplog.at_level("WARNING"):
        writer.sweep()  # what the idle writer does every minute
        assert writer.flush(30) is False  # returns at once: the writer stopped, the sweep undone
    assert "writer failed" not in caplog.text
    assert writer._thread is not None
    writer._thread.join(10)
    assert not writer._thread.is_alive()
