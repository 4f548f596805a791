"""`twins`: an algorithm written once runs sync or async; its steps name bound methods, so the
type checker checks each call against the method (issue 85: no method names as strings)."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import re
import threading
from typing import Any

import pytest

from langchain_mastra_memory import SQLiteStorage
from langchain_mastra_memory.twins import both, call, call_by_name, run_async, run_sync


class Shelf:
    """Sync methods and their async twins, recording which ran where."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, str]] = []

    def get(self, key: str) -> str:
        self.ran.append(("get", threading.current_thread().name))
        return key.upper()

    async def aget(self, key: str) -> str:
        self.ran.append(("aget", threading.current_thread().name))
        return key.upper()


def read(shelf: Shelf, *keys: str):
    found = []
    for key in keys:
        found.append((yield call(shelf.get, key)))
    return found


def test_a_bound_method_runs_as_is_when_sync_and_its_a_twin_when_async() -> None:
    shelf = Shelf()
    assert run_sync(read(shelf, "a", "b")) == ["A", "B"]
    assert asyncio.run(run_async(read(shelf, "c"))) == ["C"]
    assert [name for name, _ in shelf.ran] == ["get", "get", "aget"]


def test_a_real_storage_algorithm_runs_both_ways_and_both_runs_two_steps() -> None:
    storage = SQLiteStorage(":memory:")
    storage.create_thread(thread_id="t1", resource_id="alice")

    def two_reads():
        thread, missing = yield both(
            call(storage.get_thread, "t1"), call(storage.get_thread, "nope")
        )
        return thread.resource_id, missing

    assert run_sync(two_reads()) == ("alice", None)
    assert asyncio.run(run_async(two_reads())) == ("alice", None)


def test_a_function_put_in_place_of_a_method_is_its_own_twin() -> None:
    """A fault injected by replacing a method with a function (as the tests do to a vector
    store) runs in both modes: called as is, or, async, on memory's I/O threads."""
    shelf = Shelf()
    threads: list[str] = []

    def broken(key: str) -> str:
        threads.append(threading.current_thread().name)
        raise OSError(f"unreachable: {key}")

    shelf.get = broken  # type: ignore[method-assign]

    def guarded():
        try:
            yield call(shelf.get, "k")
        except OSError as exc:
            return str(exc)
        return "no error"

    assert run_sync(guarded()) == "unreachable: k"
    assert asyncio.run(run_async(guarded())) == "unreachable: k"
    assert threads[0] == threading.current_thread().name
    assert threads[1].startswith("lmm-io")  # not the event loop's thread
    assert shelf.ran == []  # the twin was not called behind the fault's back


def test_a_builtin_is_refused_and_a_name_chosen_at_run_time_has_its_own_call() -> None:
    with pytest.raises(TypeError, match="bound method"):
        call(len, "abc")
    shelf = Shelf()
    method = "get"
    assert run_sync(iter_one(call_by_name(shelf, method, "x"))) == "X"
    assert asyncio.run(run_async(iter_one(call_by_name(shelf, method, "y")))) == "Y"


def iter_one(step):
    return (yield step)


# -- every part's sync methods have their async twins (issue 95) ----------------------------------
def _parts() -> list[type]:
    import langchain_mastra_memory as lmm
    from langchain_mastra_memory.integrations.checkpointer import MemoryCheckpointer
    from langchain_mastra_memory.integrations.store import MemoryStore
    from langchain_mastra_memory.storage.mastra import MastraPostgresStorage, MastraSQLiteStorage
    from langchain_mastra_memory.turn.context import TurnContext
    from langchain_mastra_memory.turn.writes import MemoryWrites

    return [
        lmm.Memory, lmm.SQLiteStorage, lmm.PostgresStorage, MastraSQLiteStorage,
        MastraPostgresStorage, lmm.ChromaVectorStore, lmm.PgVectorStore, lmm.QdrantVectorStore,
        lmm.QdrantEdgeVectorStore, lmm.MilvusVectorStore, lmm.LangChainVectorStore,
        lmm.MastraVectorStore, MemoryCheckpointer, MemoryStore, lmm.MemoryChatMessageHistory,
        MemoryWrites, TurnContext,
    ]  # fmt: skip


FACTORY = "builds a part (its own methods have the twins), no I/O"
NO_TWIN = {  # "Class.method": why it has no async twin
    **{
        f"Memory.{n}": FACTORY
        for n in (
            "as_node",
            "as_retriever",
            "as_runnable",
            "chat_history",
            "checkpointer",
            "middleware",
            "pre_model_hook",
            "recall_tool",
            "store",
            "working_memory_tool",
            "wrap",
        )
    },
    "Memory.ids": "reads a config (no I/O)",
    "Memory.backfill_embeddings": "the operator's batch job (the CLI's reindex); the writer "
    "embeds behind async turns on its own",
    **{
        f"{c}.{n}": why
        for c in ("SQLiteStorage", "MastraSQLiteStorage")
        for n, why in {
            "borrowing": "a context manager lending this thread's connection (no I/O of its own)",
            "schema_version": "the migration check at open (sync, before any loop exists)",
        }.items()
    },
    **{
        f"{c}.{n}": why
        for c in ("PostgresStorage", "MastraPostgresStorage")
        for n, why in {
            "begin_statement": "the SQL text a transaction begins with (no I/O)",
            "connection_options": "the libpq options (no I/O)",
            "drop_schema": "the operator's teardown (tests, the CLI)",
            "on_close": "registers a callback (no I/O)",
            "where": "the server's address, for messages (no I/O)",
        }.items()
    },
    **{
        f"{c}.{n}": why
        for c in (
            "SQLiteStorage",
            "PostgresStorage",
            "MastraSQLiteStorage",
            "MastraPostgresStorage",
        )
        for n, why in {
            "delete_items_labelled": "the erasure of a resource's store items, inside "
            "`delete_resource`, whose twin runs it off the loop",
            "observation_history": "the explorer's and the CLI's history view (sync servers)",
        }.items()
    },
    **{
        f"{c}.catch_up": "reads Mastra's changes in; every read and write runs it first, "
        "async ones on the I/O threads"
        for c in ("MastraSQLiteStorage", "MastraPostgresStorage")
    },
    **{
        f"{c}.close": "releases the engine's client"
        for c in (
            "ChromaVectorStore",
            "QdrantVectorStore",
            "QdrantEdgeVectorStore",
            "MilvusVectorStore",
            "MastraVectorStore",
        )
    },
    "ChromaVectorStore.collection": "Chroma's collection handle (the operator's)",
    "ChromaVectorStore.from_url": "a constructor",
    "ChromaVectorStore.partitions": "Chroma's collections of an index (the operator's)",
    "MemoryCheckpointer.get_next_version": "a version counter (BaseCheckpointSaver's, sync only)",
    "MemoryCheckpointer.with_allowlist": "configures serialization (no I/O)",
    **{
        f"MemoryChatMessageHistory.{n}": "BaseChatMessageHistory's: its async twin is "
        "`aadd_messages`, as LangChain defines it"
        for n in ("add_ai_message", "add_message", "add_user_message")
    },
    "MemoryChatMessageHistory.aget_messages": "the twin of the `messages` property",
    "MemoryWrites.after_save": "hands saved messages to the writer (no I/O of its own)",
    "MemoryWrites.backfill": "the operator's batch job behind `backfill_embeddings`",
    "MemoryWrites.holding": "a context manager collecting saves (no I/O)",
    "MemoryWrites.saves_turns": "a flag (no I/O)",
    "TurnContext.recalled": "formats what a recall found (no I/O)",
}


def _signature(function: Any) -> inspect.Signature:
    """`function`'s signature, its annotations evaluated where they can be (an alias and what
    it names are then one type); as written where they cannot (a name imported for the type
    checker only)."""
    try:
        return inspect.signature(function, eval_str=True)
    except (NameError, TypeError, AttributeError, SyntaxError):
        return inspect.signature(function)


def _differences(sync: Any, twin: Any) -> list[str]:
    """How `twin`'s signature differs from `sync`'s: parameters (names, kinds, defaults,
    annotations) and result (an iterator's twin an async iterator)."""
    mine, theirs = _signature(sync), _signature(twin)
    found = [
        f"{a} / {b}"
        for a, b in itertools.zip_longest(mine.parameters.values(), theirs.parameters.values())
        if a != b
    ]
    result, twin_result = (str(s.return_annotation) for s in (mine, theirs))
    asynced = re.sub(
        r"\b(typing\.|collections\.abc\.)?(Iterator|Generator)\b", r"\1Async\2", result
    )
    if mine.return_annotation != theirs.return_annotation and twin_result not in {result, asynced}:
        found.append(f"-> {result} / -> {twin_result}")
    return found


def test_every_public_sync_method_of_every_part_has_its_async_twin_with_its_signature() -> None:
    """What `run_async` relies on (the ``a``-twin of a step's method): checked here for every
    part, not found by string at run time and hoped for."""
    missing, different = [], []
    for part in _parts():
        names = {n for n, v in inspect.getmembers(part) if not n.startswith("_") and callable(v)}
        for name in sorted(names):
            if name.startswith("a") and name[1:] in names:
                continue
            if f"a{name}" not in names:
                if f"{part.__name__}.{name}" not in NO_TWIN:
                    missing.append(f"{part.__name__}.{name}")
                continue
            sync, twin = getattr(part, name), getattr(part, f"a{name}")
            returns = str(_signature(twin).return_annotation)
            if not (inspect.iscoroutinefunction(twin) or inspect.isasyncgenfunction(twin)
                    or "AsyncIterator" in returns):  # fmt: skip
                different.append(f"{part.__name__}.a{name} is not async")
            elif problems := _differences(sync, twin):
                different.append(f"{part.__name__}.{name}: {'; '.join(problems)}")
    assert not missing, f"sync methods without an async twin (or a reason in NO_TWIN): {missing}"
    assert not different, "\n".join(different)
    known = {f"{p.__name__}.{n}" for p in _parts() for n in dir(p)}
    assert set(NO_TWIN) <= known, set(NO_TWIN) - known  # (no stale reason)


async def test_a_held_save_leaves_what_follows_to_the_caller_sync_and_async() -> None:
    """`MemoryWrites.holding` (a checkpoint's one transaction): `save` and `asave` alike hand
    the stored messages to the caller instead of starting what follows a save."""
    from langchain_core.messages import HumanMessage

    from langchain_mastra_memory import Memory

    memory = Memory(storage=SQLiteStorage(":memory:"))
    memory.create_thread(thread_id="t", resource_id="r")
    held: list = []
    with memory.writes.holding(held):
        memory.writes.save([HumanMessage("one", id="1")], thread_id="t", resource_id="r")
        await memory.writes.asave([HumanMessage("two", id="2")], thread_id="t", resource_id="r")
    assert [[s.message.id for s in batch] for batch in held] == [["1"], ["2"]]
    assert [m.id for m in memory.get_messages(thread_id="t")] == ["1", "2"]
    memory.close()


# Async methods written by hand (more than one statement, not one line over `run_async` or a
# pool): each says why it is not a step over its sync twin's algorithm (issue 95).
SAVER = "awaits the wrapped saver's own async method (or its sync one on memory's I/O threads)"
RUNNABLE = (
    "LangChain's async Runnable entry (`_acall_with_config`, skipped inside a run nobody listens"
    " to: `tracing.unheard`), around a step-written body"
)
WAITS = "awaits an event or a future: no thread is held while it waits, which a step cannot do"
HAND_WRITTEN = {
    "MemoryCheckpointer.aget_delta_channel_history": SAVER,
    "MemoryCheckpointer.aforget": SAVER,
    "MemoryCheckpointer.alist": "an async iterator (BaseCheckpointSaver's `alist`)",
    "ThreadOwners.acheck_owner": "the owner read from the saver (`aowner`), then a pure check",
    "FirstPuts.ahold": WAITS,
    "SaverIO.alist_all": "collects the saver's async iterator",
    "SaverIO.adelta_history": SAVER,
    "SaverIO.alatest": SAVER,
    "SaverIO.saver_alist": "an async iterator: the saver's own, or its list read on I/O threads",
    "MemoryWrapped.ainvoke": RUNNABLE,
    "MemoryWrapped.astream": "an async generator of the wrapped chain's chunks",
    "MemoryMiddleware.aafter_model": "LangChain's async hook: one awaited save when one is due",
    "MemoryRetriever.ainvoke": RUNNABLE,
    "Pruner.aprune": "one `run_async` of the steps, its result typed for mypy",
    "Reflector.ainvoke": "one `run_async` of the steps, after the prompt is built",
    "Changes.await_for": WAITS,
    "MemoryProcessor.ainvoke": RUNNABLE,
    "FunctionProcessor.aprocess": "the user's own async function, else the sync one's default",
    "TokenLimiterProcessor.ainvoke": "a lone message is CPU only (no I/O); the rest is RUNNABLE",
    "WorkingMemory.aprocess": "one awaited read (`WorkingMemoryStore.amessage`), then CPU only",
    "CachedEmbeddings.aembed_documents": WAITS + " (another caller embedding the same text)",
    "CachedEmbeddings.aembed_query": WAITS + " (another caller embedding the same text)",
    "BacklogWriter.aflush": WAITS,
    "Traced.aperform": "the async half of a step around a step (twins' `aperform` protocol)",
    "MemoryWrites.aclose": WAITS + ", then closing (no async form) on memory's I/O threads",
}


def hand_written_async_methods() -> set[str]:
    """Public async methods of the package's classes with more than one statement (a docstring
    aside) that is not a one-line shell."""
    import ast
    from pathlib import Path

    import langchain_mastra_memory

    found = set()
    for path in Path(langchain_mastra_memory.__file__).parent.rglob("*.py"):
        for cls in (
            n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)
        ):
            for f in cls.body:
                if not isinstance(f, ast.AsyncFunctionDef) or f.name.startswith("_"):
                    continue
                body = [b for b in f.body
                        if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]  # fmt: skip
                if len(body) > 1:
                    found.add(f"{cls.name}.{f.name}")
    return found


def test_every_async_method_written_by_hand_says_why_it_is_not_a_step() -> None:
    """The rest are one-line shells over the step algorithm their sync twin runs (`run_async`)
    or over memory's pools; a new hand-written body joins the list with its reason, or
    becomes steps (MemoryWrites, Erasure, the chat history, MessageHistory did, issue 95)."""
    found = hand_written_async_methods()
    assert len(found) > 10  # (the package is read)
    assert sorted(found - set(HAND_WRITTEN)) == []
    assert sorted(set(HAND_WRITTEN) - found) == []  # (a method that became steps leaves it)
