"""The isolation matrix: every public way to read memory, tried by bob on alice's data.

Alice owns thread ``tA`` (messages, recall vectors, working memory, an observation log, graph
checkpoints, store items), each holding the word `SECRET`. Bob owns ``tB``. Every read path
(Memory's methods and their async twins, each integration shape, the store, the checkpointer,
observational memory, the CLI) runs as bob against alice's thread or namespace, on SQLite and
PostgreSQL, with observational memory off and in both scopes: each is refused
(`ResourceMismatchError`, or the store's `InvalidStoreInputError` for a forged namespace) or
returns nothing of alice's. `test_every_public_read_path_is_in_the_matrix` fails when a public
method or CLI command appears that is neither in the matrix nor listed as not reading memory:
a new read path must join.

With a second party in the room, the matrix goes on in: `test_live_owners.py` (a live
checkpointer after a transfer, and after another process deleted a thread and another resource
took the id: SQLite and PostgreSQL, two real processes), `test_read_only_turns.py` (a read-only
caller beside a writable one, every shape), `test_delete_resource.py` (erasing one tenant
touches nothing of another) and `test_fences.py` (text written by an attacker).
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import os
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from typer.testing import CliRunner

from langchain_mastra_memory import (
    ChromaVectorStore,
    LangChainVectorStore,
    MastraStorage,
    MastraVectorStore,
    Memory,
    MemoryChatMessageHistory,
    MessageHistory,
    MilvusVectorStore,
    PgVectorStore,
    PostgresStorage,
    QdrantEdgeVectorStore,
    QdrantVectorStore,
    ResourceMismatchError,
    SemanticRecall,
    SQLiteStorage,
    WorkingMemory,
)
from langchain_mastra_memory.cli import app
from langchain_mastra_memory.integrations.checkpointer import MemoryCheckpointer
from langchain_mastra_memory.integrations.store import InvalidStoreInputError, MemoryStore
from langchain_mastra_memory.observational.extractors import Extractor
from langchain_mastra_memory.observational.prompts import REFLECTOR_INSTRUCTIONS
from langchain_mastra_memory.storage.records import scope_key
from langchain_mastra_memory.testing import strict_model
from langchain_mastra_memory.threads.ids import resolve_ids
from langchain_mastra_memory.threads.transfer import export_lines
from tests.helpers import delta_state, drop_milvus_collections

SECRET = "Zanzibar-kq7731"  # in each of alice's stores; bob asks about "Zanzibar"
LEAK = "kq7731"  # what bob must never see (not hex: a random uuid cannot contain it)
QUESTION = "What is the Zanzibar locker code and travel plan?"
LATER = datetime(2100, 1, 1, tzinfo=timezone.utc)  # a moment after every write: the whole log
ALICE_TURNS = [
    f"My locker code is {SECRET}, remember it.",
    f"Also my travel plan: {SECRET} in March, Lisbon after.",
    "I am allergic to peanuts, by the way.",
]


class EchoObserver(FakeListChatModel):
    """Observer and Reflector: each observation repeats the lines it was shown."""

    responses: list = ["unused"]  # noqa: RUF012

    def _call(self, messages, *args, **kwargs):
        if messages[0].content == REFLECTOR_INSTRUCTIONS:
            return "Date: 2026-11-22\n- [high] (reflection not used here)"
        shown = messages[-1].content.split("<new-messages>")[-1].split("</new-messages>")[0]
        lines = [line for line in shown.splitlines() if line.startswith("[")]
        notes = f"\n<notes>\n{lines[0]}\n</notes>" if "<notes>" in messages[-1].content else ""
        return "Date: 2026-11-22\n" + "\n".join(f"- [high] Said: {line}" for line in lines) + notes


def cfg(thread: str | None, resource: str | None = None) -> dict:
    configurable: dict[str, str] = {}
    if thread:
        configurable["thread_id"] = thread
    if resource:
        configurable["resource_id"] = resource
    return {"configurable": configurable}


ALICE, BOB_ON_A, BOB_ON_B = cfg("tA", "alice"), cfg("tA", "bob"), cfg("tB", "bob")
BOB_ON_D = cfg("tD", "bob")  # alice's delta-channel thread


class CopyingSaver(InMemorySaver):
    """An in-memory saver that offers LangGraph's optional ``copy_thread``."""

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.storage[target_thread_id] = copy.deepcopy(self.storage[source_thread_id])
        for (thread, ns, checkpoint), writes in list(self.writes.items()):
            if thread == source_thread_id:
                self.writes[(target_thread_id, ns, checkpoint)] = copy.deepcopy(writes)


@dataclass
class World:
    memory: Memory
    kind: str  # backend
    om: str | None  # observational memory's scope, or None
    db: Path | None  # the SQLite file (the CLI's cases)
    graph: Any  # alice's graph, compiled on memory.checkpointer()
    store: MemoryStore
    delta_graph: Any = None  # the same, its messages in LangGraph's DeltaChannel (deep agents')


def graph_on(memory: Memory, saver: Any = None, schema: Any = MessagesState) -> Any:
    def reply(state: dict) -> dict:
        return {"messages": [AIMessage(f"Noted: {state['messages'][-1].content}")]}

    builder = StateGraph(schema)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=memory.checkpointer(saver))


def vector_store(kind: str, folder: Path) -> Any:
    """The recall store of a world: the backend's default, or another engine beside SQLite."""
    if kind == "sqlite+qdrant":
        return QdrantVectorStore(folder / "qdrant")
    if kind == "sqlite+qdrant-edge":  # Qdrant's own engine, in this process
        return QdrantEdgeVectorStore(folder / "edge")
    if kind == "sqlite+milvus":
        return MilvusVectorStore(folder / "milvus.db")
    if kind == "sqlite+milvus-server":  # the session's real server (`milvus_uri` sets it)
        return MilvusVectorStore(uri=os.environ["LMM_TEST_MILVUS_URI"])
    if kind == "sqlite+langchain":
        from langchain_core.vectorstores import InMemoryVectorStore

        from langchain_mastra_memory.recall.embedders.cache import _default_minilm

        return LangChainVectorStore(InMemoryVectorStore(_default_minilm()))
    return None


def build_world(kind: str, om: str | None, folder: Path) -> World:
    dsn = os.environ["LMM_TEST_POSTGRES_DSN"]
    storage = (
        PostgresStorage(dsn, schema=f"t_{uuid.uuid4().hex[:12]}")
        if kind == "postgres"
        # every read through the replica route (`read_dsn`), here the same server
        else PostgresStorage(dsn, schema=f"t_{uuid.uuid4().hex[:12]}", read_dsn=dsn)
        if kind == "postgres+replica"
        # every operation through PgBouncer in transaction pooling mode (`server_for`)
        else PostgresStorage(
            os.environ["LMM_TEST_PGBOUNCER_DSN"], schema=f"t_{uuid.uuid4().hex[:12]}"
        )
        if kind == "postgres+pgbouncer"
        # memory on a Mastra store's own tables, shared with Mastra (`MastraStorage`)
        else MastraStorage(folder / "mastra.db")
        if kind.startswith("mastra")
        else SQLiteStorage(folder / "memory.db")
    )
    options: dict[str, Any] = {
        "semantic_recall": {"scope": "resource", "top_k": 3, "message_range": 1},
        "working_memory": {"enabled": True},
    }
    if om:
        options["observational_memory"] = {
            "model": EchoObserver(),
            "scope": om,
            "message_tokens": 40,
            "buffer_tokens": None,
            "extractors": [Extractor("Notes", "What the user asked to remember")],
            # rolling archives: every group but the newest leaves the log for an archive
            "archive": {"after_tokens": 20, "keep_tokens": 1, "max_catalog_tokens": 600},
        }
    vector = (  # recall's vectors in Mastra's own index, shared with a Mastra agent
        MastraVectorStore(storage) if kind == "mastra+vectors" else vector_store(kind, folder)
    )
    memory = Memory(storage=storage, vector=vector, options=options)
    graph = graph_on(memory)
    for text in ALICE_TURNS:
        graph.invoke({"messages": [HumanMessage(text)]}, ALICE)
    memory.update_working_memory(f"# Alice\n- Locker: {SECRET}", resource_id="alice")
    store = memory.store()
    store.put(("alice", "notes"), "k1", {"text": f"alice's note: {SECRET}"})
    delta_graph = graph_on(memory, schema=delta_state(2))
    for text in ALICE_TURNS:  # in thread tD, read back across snapshots
        delta_graph.invoke({"messages": [HumanMessage(text)]}, cfg("tD", "alice"))
    graph.invoke({"messages": [HumanMessage("Hello, I am Bob.")]}, BOB_ON_B)
    memory.update_working_memory("# Bob\n- Likes: chess", resource_id="bob")
    store.put(("bob", "notes"), "k1", {"text": "bob's note"})
    assert memory.flush(60)
    if om:
        key = scope_key(om, resource_id="alice", thread_id="tA")
        archived = memory.storage.observation_archives([key], limit=50)
        assert SECRET in "".join(g.text for g in memory.storage.observation_log(key))
        assert SECRET in "".join(g.text for a in archived for g in a.groups)
        assert SECRET in memory.storage.extracted_values(key)["notes"]
    assert SECRET in repr(memory.get_messages(thread_id="tA"))
    return World(
        memory,
        kind,
        om,
        None
        if kind.startswith("postgres")
        else folder / ("mastra.db" if kind.startswith("mastra") else "memory.db"),
        graph,
        store,
        delta_graph,
    )


WORLDS = (
    [
        pytest.param((kind, om), id=f"{kind}-om:{om or 'off'}", marks=marks)
        for kind, marks in [("sqlite", ()), ("postgres", (pytest.mark.postgres,))]
        for om in (None, "thread", "resource")
    ]
    + [  # reads from a replica (`PostgresStorage(read_dsn=...)`)
        pytest.param(
            ("postgres+replica", None), id="postgres+replica-om:off", marks=pytest.mark.postgres
        )
    ]
    + [  # behind PgBouncer, transaction pooling (`server_for` starts it)
        pytest.param(
            ("postgres+pgbouncer", om),
            id=f"postgres+pgbouncer-om:{om or 'off'}",
            marks=pytest.mark.postgres,
        )
        for om in (None, "thread")
    ]
    + [  # a Mastra store's own tables (`MastraStorage`)
        pytest.param(("mastra", om), id=f"mastra-om:{om or 'off'}") for om in (None, "thread")
    ]
    + [pytest.param(("mastra+vectors", None), id="mastra+vectors-om:off")]  # Mastra's index
    + [  # recall's other vector engines, beside SQLite
        pytest.param((kind, None), id=f"{kind}-om:off")
        for kind in (
            "sqlite+qdrant",
            "sqlite+qdrant-edge",
            "sqlite+milvus",
            "sqlite+milvus-server",
            "sqlite+langchain",
        )
    ]
)
ENGINE_STORES = ("QdrantVectorStore", "QdrantEdgeVectorStore", "MilvusVectorStore")
ALL_STORES = (
    "PgVectorStore", "ChromaVectorStore", *ENGINE_STORES, "LangChainVectorStore",
    "MastraVectorStore",
)  # fmt: skip


def built_world(request: pytest.FixtureRequest, folder: Path) -> Iterator[World]:
    kind, om = request.param
    server_for(kind, request)
    built = build_world(kind, om, folder)
    yield built
    end_world(built)


def server_for(kind: str, request: pytest.FixtureRequest) -> None:
    """A world on the real Milvus server starts it (once a session) and empties it after."""
    if kind == "postgres+pgbouncer":
        bouncer = request.getfixturevalue("pgbouncer")("transaction", ignore_options=True)
        os.environ["LMM_TEST_PGBOUNCER_DSN"] = bouncer.dsn
    if kind == "sqlite+milvus-server":
        uri = request.getfixturevalue("milvus_uri")
        request.addfinalizer(lambda: drop_milvus_collections(uri))


def end_world(world: World) -> None:
    if isinstance(world.memory.storage, PostgresStorage):
        world.memory.storage.drop_schema()
    world.memory.storage.close()


@pytest.fixture(scope="module", params=WORLDS)
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    yield from built_world(request, tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module", params=[w for w in WORLDS if w.values[0][0] == "sqlite"])
def file_world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    """A world in a SQLite file: the CLI's (it takes --db; PostgreSQL is reached through Memory)."""
    yield from built_world(request, tmp_path_factory.mktemp("file-world"))


# -- the cases -------------------------------------------------------------------------------------
REFUSED, NOTHING = "refused", "nothing"
VECTOR_READS = tuple(
    f"{s}.{m}"
    for s in ALL_STORES
    for m in ("query", "present", "vectors", "ranking_vectors")
    if not (s in ("LangChainVectorStore", "MastraVectorStore") and m == "vectors")  # (none back)
    and (m != "ranking_vectors" or s == "ChromaVectorStore")  # (the context stage's read)
)


@dataclass(frozen=True)
class Case:
    covers: tuple[str, ...]  # the public read paths it exercises ("Class.method", "cli command")
    run: Callable[[World], Any]
    expect: str  # REFUSED or NOTHING
    sqlite_file_only: bool = False


def arun(coro: Any) -> Any:
    return asyncio.run(coro)


async def collect(aiterator: Any) -> list:
    return [item async for item in aiterator]


def invoke_cli(world: World, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--db", str(world.db)])
    if "belongs to another resource" in result.output:
        raise ResourceMismatchError(result.output)
    return result.output


def middleware_turn(world: World, config: dict) -> Any:
    from langchain.agents import create_agent

    agent = create_agent(strict_model(AIMessage("ok")), [], middleware=[world.memory.middleware()])
    return agent.invoke({"messages": [HumanMessage(QUESTION)]}, config)


def hook(world: World) -> Any:
    return world.memory.pre_model_hook()


ASK = [HumanMessage(QUESTION)]
CASES = [
    # Memory: threads and messages
    Case(("Memory.get_thread",), lambda w: w.memory.get_thread("tA", resource_id="bob"), NOTHING),
    Case(("Memory.aget_thread",), lambda w: arun(w.memory.aget_thread("tA", resource_id="bob")), NOTHING),
    Case(("Memory.list_threads",), lambda w: w.memory.list_threads(resource_id="bob"), NOTHING),
    Case(("Memory.alist_threads",), lambda w: arun(w.memory.alist_threads(resource_id="bob")), NOTHING),
    Case(("Memory.get_messages",), lambda w: w.memory.get_messages(thread_id="tA", resource_id="bob"), REFUSED),
    Case(("Memory.aget_messages",), lambda w: arun(w.memory.aget_messages(thread_id="tA", resource_id="bob")), REFUSED),
    # pages, search, the recall tool, the lifecycle (Mastra 1.x)
    Case(("Memory.page_threads",), lambda w: w.memory.page_threads(resource_id="bob", archived=None), NOTHING),
    Case(("Memory.apage_threads",), lambda w: arun(w.memory.apage_threads(resource_id="bob")), NOTHING),
    Case(("Memory.page_messages",), lambda w: w.memory.page_messages("tA", resource_id="bob"), REFUSED),
    Case(("Memory.apage_messages",), lambda w: arun(w.memory.apage_messages("tA", resource_id="bob")), REFUSED),
    Case(("Memory.page_messages",), lambda w: w.memory.page_messages(
        "tB", resource_id="bob", include=alices_ids(w), include_window=3, query=QUESTION), NOTHING),
    Case(("Memory.search_messages",), lambda w: w.memory.search_messages(QUESTION, resource_id="bob"), NOTHING),
    Case(("Memory.asearch_messages",), lambda w: arun(w.memory.asearch_messages(
        QUESTION, resource_id="bob", include_archived=True, mode="keyword")), NOTHING),
    Case(("Memory.search_messages",), lambda w: w.memory.search_messages(
        QUESTION, resource_id="bob", thread_id="tA"), REFUSED),
    Case(("Memory.recall_tool",), lambda w: w.memory.recall_tool().invoke(
        {"name": "search_memory", "args": {"query": QUESTION}, "id": "c1", "type": "tool_call"},
        BOB_ON_B), NOTHING),
    Case(("Memory.recall_tool",), lambda w: w.memory.recall_tool().invoke(
        {"name": "search_memory", "args": {"query": QUESTION, "thread_id": "tA"}, "id": "c2",
         "type": "tool_call"}, BOB_ON_B), NOTHING),
    # ... listing conversations and searching observation logs (the tool's other modes)
    Case(("Memory.recall_tool",), lambda w: w.memory.recall_tool().invoke(
        {"name": "search_memory", "args": {"mode": "threads"}, "id": "c3", "type": "tool_call"},
        BOB_ON_B), NOTHING),
    Case(("Memory.recall_tool",), lambda w: arun(w.memory.recall_tool().ainvoke(
        {"name": "search_memory", "args": {"mode": "threads", "query": "Zanzibar locker"},
         "id": "c4", "type": "tool_call"}, BOB_ON_B)), NOTHING),
    Case(("Memory.recall_tool",), lambda w: w.memory.recall_tool().invoke(
        {"name": "search_memory", "args": {"query": QUESTION, "mode": "observations"}, "id": "c5",
         "type": "tool_call"}, BOB_ON_B), NOTHING),
    Case(("Memory.recall_tool",), lambda w: w.memory.recall_tool().invoke(
        {"name": "search_memory", "args": {"query": QUESTION, "mode": "observations",
         "thread_id": "tA"}, "id": "c6", "type": "tool_call"}, BOB_ON_B), NOTHING),
    Case(("Memory.as_runnable",), lambda w: w.memory.as_runnable().invoke({"input": ASK}, {
        "configurable": {**BOB_ON_B["configurable"], "memory_options": {
            "last_messages": 100, "semantic_recall": {"filter": {"p": {"$ne": 1}}, "top_k": 10}}}}), NOTHING),
    Case(("Memory.archive_thread",), lambda w: w.memory.archive_thread("tA", resource_id="bob"), REFUSED),
    Case(("Memory.aarchive_thread",), lambda w: arun(w.memory.aarchive_thread("tA", resource_id="bob")), REFUSED),
    Case(("Memory.unarchive_thread",), lambda w: w.memory.unarchive_thread("tA", resource_id="bob"), REFUSED),
    Case(("Memory.transfer_thread",), lambda w: w.memory.transfer_thread(
        "tA", to_resource_id="bob", resource_id="bob"), REFUSED),
    Case(("Memory.atransfer_thread",), lambda w: arun(w.memory.atransfer_thread(
        "tA", to_resource_id="bob", resource_id="bob")), REFUSED),
    # the turn: history, recall, working memory, observational memory
    Case(("Memory.recall",), lambda w: w.memory.recall(thread_id="tA", resource_id="bob", new_messages=ASK), REFUSED),
    Case(("Memory.arecall",), lambda w: arun(w.memory.arecall(thread_id="tA", resource_id="bob", new_messages=ASK)), REFUSED),
    Case(("Memory.recall",), lambda w: w.memory.recall(thread_id="tB", resource_id="bob", new_messages=ASK), NOTHING),
    Case(("Memory.context",), lambda w: w.memory.context(ASK, thread_id="tA", resource_id="bob"), REFUSED),
    Case(("Memory.acontext",), lambda w: arun(w.memory.acontext(ASK, thread_id="tA", resource_id="bob")), REFUSED),
    Case(("Memory.context",), lambda w: w.memory.context(ASK, thread_id="tB", resource_id="bob"), NOTHING),
    Case(("Memory.acontext",), lambda w: arun(w.memory.acontext(ASK, thread_id="tB", resource_id="bob")), NOTHING),
    Case(("Memory.context",), lambda w: w.memory.context(ASK, thread_id="tNew", resource_id="bob"), NOTHING),
    Case(("Memory.get_working_memory",), lambda w: w.memory.get_working_memory(resource_id="bob"), NOTHING),
    Case(("Memory.aget_working_memory",), lambda w: arun(w.memory.aget_working_memory(resource_id="bob")), NOTHING),
    # a thread-only config on alice's thread: the thread id stands for the owner, and is refused
    Case(("Memory.ids",), lambda w: w.memory.as_runnable().invoke({"input": ASK}, cfg("tA")), REFUSED),
    # writes that would reveal or move alice's data
    Case(("Memory.update_messages",), lambda w: w.memory.update_messages(
        [HumanMessage("x", id=w.memory.get_messages(thread_id="tA")[0].id)], resource_id="bob"), REFUSED),
    Case(("Memory.delete_messages",), lambda w: w.memory.delete_messages(
        [w.memory.get_messages(thread_id="tA")[0].id], resource_id="bob"), REFUSED),
    Case(("Memory.clone_thread",), lambda w: w.memory.clone_thread("tA", resource_id="bob"), REFUSED),
    Case(("Memory.branch_thread",), lambda w: w.memory.branch_thread("tA", resource_id="bob"), REFUSED),
    Case(("Memory.abranch_thread",), lambda w: arun(w.memory.abranch_thread("tA", resource_id="bob")), REFUSED),
    Case(("Memory.list_branches",), lambda w: w.memory.list_branches("tA", resource_id="bob"), REFUSED),
    Case(("Memory.alist_branches",), lambda w: arun(w.memory.alist_branches("tA", resource_id="bob")), REFUSED),
    Case(("Memory.aclone_thread",), lambda w: arun(w.memory.aclone_thread("tA", resource_id="bob")), REFUSED),
    Case(("Memory.delete_thread",), lambda w: w.memory.delete_thread("tA", resource_id="bob"), REFUSED),
    Case(("Memory.update_thread",), lambda w: w.memory.update_thread("tA", title="x", resource_id="bob"), REFUSED),
    Case(("Memory.save_messages",), lambda w: w.memory.save_messages(
        [HumanMessage("hi")], thread_id="tA", resource_id="bob"), REFUSED),
    Case(("Memory.save_turn", "Memory.ensure_thread"), lambda w: w.memory.save_turn(
        [HumanMessage("hi")], thread_id="tA", resource_id="bob"), REFUSED),
    Case(("Memory.save_new",), lambda w: w.memory.save_new([HumanMessage("hi")], thread_id="tA", resource_id="bob"), REFUSED),
    # the shapes
    Case(("Memory.as_runnable",), lambda w: w.memory.as_runnable().invoke({"input": ASK}, BOB_ON_A), REFUSED),
    Case(("Memory.as_runnable",), lambda w: arun(w.memory.as_runnable().ainvoke({"input": ASK}, BOB_ON_A)), REFUSED),
    Case(("Memory.as_runnable",), lambda w: w.memory.as_runnable().invoke({"input": ASK}, BOB_ON_B), NOTHING),
    Case(("Memory.wrap",), lambda w: w.memory.wrap(strict_model(AIMessage("ok"))).invoke(ASK, BOB_ON_A), REFUSED),
    Case(("Memory.wrap",), lambda w: w.memory.wrap(strict_model(AIMessage("ok"))).invoke(ASK, BOB_ON_B), NOTHING),
    Case(("Memory.pre_model_hook", "Memory.as_node"), lambda w: hook(w).invoke({"messages": ASK}, BOB_ON_A), REFUSED),
    Case(("Memory.pre_model_hook",), lambda w: arun(hook(w).ainvoke({"messages": ASK}, BOB_ON_A)), REFUSED),
    Case(("Memory.pre_model_hook",), lambda w: hook(w).invoke({"messages": ASK}, BOB_ON_B), NOTHING),
    Case(("Memory.middleware",), lambda w: middleware_turn(w, BOB_ON_A), REFUSED),
    Case(("Memory.middleware",), lambda w: middleware_turn(w, BOB_ON_B), NOTHING),
    Case(("Memory.chat_history", "MemoryChatMessageHistory.messages"),
         lambda w: w.memory.chat_history(thread_id="tA", resource_id="bob").messages, REFUSED),
    Case(("MemoryChatMessageHistory.aget_messages",),
         lambda w: arun(w.memory.chat_history(thread_id="tA", resource_id="bob").aget_messages()), REFUSED),
    Case(("Memory.working_memory_tool",), lambda w: w.memory.working_memory_tool().invoke(
        {"name": "update_working_memory", "args": {"memory": "# Bob\n- Likes: go"}, "id": "c1",
         "type": "tool_call"}, BOB_ON_B), NOTHING),
    # processors on their own
    Case(("SemanticRecall",), lambda w: SemanticRecall(
        storage=w.memory.storage, vector=w.memory.vector, embedder=w.memory.embedder, scope="resource",
    ).invoke(ASK, BOB_ON_B), NOTHING),
    Case(("MessageHistory",), lambda w: MessageHistory(w.memory.storage, last_messages=10).invoke([], BOB_ON_A), REFUSED),
    Case(("WorkingMemory",), lambda w: WorkingMemory(w.memory.storage).invoke([], BOB_ON_B), NOTHING),
    Case(("RecallIndex.search",), lambda w: w.memory.recall_index.search(QUESTION, resource_id="bob"), NOTHING),
    Case(("MemoryStorage.search_text",), lambda w: w.memory.storage.search_text(QUESTION, resource_id="bob"), NOTHING),
    Case(("Memory.as_retriever",), lambda w: w.memory.as_retriever(resource_id="bob", k=20).invoke(QUESTION), NOTHING),
    Case(("Memory.as_retriever",), lambda w: w.memory.as_retriever(resource_id="bob", thread_id="tA", message_range=3).invoke(QUESTION), NOTHING),
    Case(("Memory.as_retriever",), lambda w: w.memory.as_retriever(k=20, mode="keyword").invoke(QUESTION, cfg("tB", "bob")), NOTHING),
    Case(("Memory.as_retriever",), lambda w: w.memory.as_retriever(k=20).invoke(QUESTION, {"configurable": {"user_id": "bob"}}), NOTHING),
    Case(("Memory.as_retriever",), lambda w: arun(w.memory.as_retriever(resource_id="bob", k=20).ainvoke(QUESTION)), NOTHING),
    Case(VECTOR_READS, lambda w: vector_hits(w, resource_id="bob"), NOTHING),
    Case(VECTOR_READS, lambda w: vector_hits(w, resource_id="bob", thread_id="tA"), NOTHING),
    Case(VECTOR_READS, lambda w: vector_hits(w, resource_id="bob", twin=True), NOTHING),
    # the checkpointer and the graph
    Case(("MemoryCheckpointer.get_tuple", "MemoryCheckpointer.get"),
         lambda w: w.graph.checkpointer.get_tuple(BOB_ON_A), REFUSED),
    Case(("MemoryCheckpointer.aget_tuple",), lambda w: arun(w.graph.checkpointer.aget_tuple(BOB_ON_A)), REFUSED),
    Case(("MemoryCheckpointer.list",), lambda w: list(w.graph.checkpointer.list(BOB_ON_A)), REFUSED),
    Case(("MemoryCheckpointer.alist",), lambda w: arun(collect(w.graph.checkpointer.alist(BOB_ON_A))), REFUSED),
    Case(("MemoryCheckpointer.list",), lambda w: list(w.graph.checkpointer.list(cfg(None, "bob"))), NOTHING),
    Case(("MemoryCheckpointer.get_delta_channel_history",), lambda w: w.graph.checkpointer.get_delta_channel_history(
        config=BOB_ON_A, channels=["messages"]), REFUSED),
    # ... and a graph whose messages live in a DeltaChannel (rebuilt from snapshot and writes)
    Case(("MemoryCheckpointer.get_delta_channel_history",), lambda w: w.delta_graph.checkpointer.get_delta_channel_history(
        config=BOB_ON_D, channels=["messages"]), REFUSED),
    Case(("MemoryCheckpointer.aget_delta_channel_history",), lambda w: arun(w.delta_graph.checkpointer.aget_delta_channel_history(
        config=BOB_ON_D, channels=["messages"])), REFUSED),
    Case(("MemoryCheckpointer.get_tuple",), lambda w: w.delta_graph.get_state(BOB_ON_D), REFUSED),
    Case(("MemoryCheckpointer.put",), lambda w: w.delta_graph.invoke({"messages": ASK}, BOB_ON_D), REFUSED),
    Case(("MemoryCheckpointer.list",), lambda w: list(w.delta_graph.get_state_history(BOB_ON_D)), REFUSED),
    Case(("MemoryCheckpointer.list",), lambda w: [t.checkpoint for t in w.delta_graph.checkpointer.list(
        cfg(None, "bob"))], NOTHING),
    # ... and LangGraph Server's checkpointer (reads by thread id alone trusted): naming bob,
    # by config or as the server's authenticated caller, is still refused
    Case(("MemoryCheckpointer.get_tuple",), lambda w: w.memory.checkpointer(
        w.graph.checkpointer.saver, trust_thread_reads=True).get_tuple(BOB_ON_A), REFUSED),
    Case(("MemoryCheckpointer.get_tuple",), lambda w: w.memory.checkpointer(
        w.graph.checkpointer.saver, trust_thread_reads=True).get_tuple(
        {"configurable": {"thread_id": "tA", "langgraph_auth_user_id": "bob"}}), REFUSED),
    Case(("MemoryCheckpointer.put",), lambda w: w.graph.invoke(
        {"messages": ASK}, {"configurable": {"thread_id": "tA", "langgraph_auth_user_id": "bob"}}), REFUSED),
    Case(("Memory.context",), lambda w: w.memory.context(ASK, **dict(zip(("thread_id", "resource_id"), resolve_ids(
        {"configurable": {"thread_id": "tB", "langgraph_auth_user_id": "bob"}}), strict=True))), NOTHING),
    # Mastra 1.x's summarizeThread and listMessagesById
    Case(("Memory.summarize_thread",), lambda w: w.memory.summarize_thread(
        "tA", model=EchoObserver(), resource_id="bob"), REFUSED),
    Case(("Memory.summarize_thread",), lambda w: arun(w.memory.asummarize_thread(
        "tB", model=EchoObserver(), resource_id="bob")).summary, NOTHING),
    # the observation log as it stood at a moment (Mastra's getObservationsAsOf), in both scopes
    Case(("Memory.observations_as_of",), lambda w: w.memory.observations_as_of(
        LATER, thread_id="tA", resource_id="bob"), REFUSED),
    Case(("Memory.observations_as_of",), lambda w: arun(w.memory.aobservations_as_of(
        LATER, thread_id="tA", resource_id="bob", scope="resource")), REFUSED),
    Case(("Memory.observations_as_of",), lambda w: w.memory.observations_as_of(
        LATER, thread_id="tB", resource_id="bob"), NOTHING),
    Case(("Memory.aobservations_as_of",), lambda w: arun(w.memory.aobservations_as_of(
        LATER, resource_id="bob", scope="resource")), NOTHING),
    # rolling archives (Mastra's observation.archive) through the recall tool: bob's listing,
    # his search, and alice's archive ids named outright
    Case(("Memory.recall_tool",), lambda w: w.memory.recall_tool().invoke(
        {"mode": "observations"}, BOB_ON_B), NOTHING),
    Case(("Memory.recall_tool",), lambda w: arun(w.memory.recall_tool().ainvoke(
        {"mode": "observations", "query": QUESTION}, BOB_ON_B)), NOTHING),
    Case(("Memory.recall_tool",), lambda w: [w.memory.recall_tool(resource_id="bob").invoke(
        {"archive_id": archive_id}) for archive_id in alices_archives(w)], NOTHING),
    Case(("Memory.recall_tool",), lambda w: [arun(w.memory.recall_tool().ainvoke(
        {"archive_id": archive_id, "group_id": group_id, "mode": "observations"}, BOB_ON_A))
        for archive_id, group_id in alices_archived_groups(w)], NOTHING),
    # the values extractors keep (Mastra's Extractor), in both scopes
    Case(("Memory.extracted_values",), lambda w: w.memory.extracted_values(
        thread_id="tA", resource_id="bob"), REFUSED),
    Case(("Memory.aextracted_values",), lambda w: arun(w.memory.aextracted_values(
        thread_id="tA", resource_id="bob", scope="resource")), REFUSED),
    Case(("Memory.extracted_values",), lambda w: w.memory.extracted_values(
        thread_id="tB", resource_id="bob"), NOTHING),
    Case(("Memory.aextracted_values",), lambda w: arun(w.memory.aextracted_values(
        resource_id="bob", scope="resource")), NOTHING),
    Case(("Memory.list_messages_by_id",), lambda w: w.memory.list_messages_by_id(
        [m.id for m in w.memory.get_messages(thread_id="tA")], resource_id="bob"), NOTHING),
    Case(("Memory.alist_messages_by_id",), lambda w: arun(w.memory.alist_messages_by_id(
        [m.id for m in w.memory.get_messages(thread_id="tA")], resource_id="bob")), NOTHING),
    Case(("MemoryCheckpointer.copy_thread",), lambda w: graph_on(w.memory, CopyingSaver()).checkpointer.copy_thread(
        "tA", "tB"), REFUSED),
    Case(("MemoryCheckpointer.put",), lambda w: w.graph.invoke({"messages": ASK}, BOB_ON_A), REFUSED),
    Case(("MemoryCheckpointer.get_tuple",), lambda w: w.graph.get_state(BOB_ON_A), REFUSED),
    Case(("MemoryCheckpointer.list",), lambda w: list(w.graph.get_state_history(BOB_ON_A)), REFUSED),
    # the store: namespaces are its isolation; a forged dotted label must not cross them
    Case(("MemoryStore.batch",), lambda w: w.store.batch([GetOp(("alice.notes",), "k1")]), REFUSED),
    Case(("MemoryStore.batch",), lambda w: arun(w.store.abatch([GetOp(("alice.notes",), "k1")])), REFUSED),
    Case(("MemoryStore.batch",), lambda w: w.store.batch(
        [SearchOp(("alice.notes",), query=QUESTION)]), REFUSED),
    Case(("MemoryStore.batch",), lambda w: w.store.batch(
        [PutOp(("working_memory.alice",), "current", {"content": "forged"})]), REFUSED),
    Case(("MemoryStore.batch",), lambda w: w.store.batch([ListNamespacesOp(
        match_conditions=(MatchCondition("prefix", ("bob.x",)),))]), REFUSED),
    Case(("MemoryStore.get",), lambda w: w.store.get(("bob", "notes"), "k1"), NOTHING),
    Case(("MemoryStore.get",), lambda w: w.store.get(("working_memory", "bob"), "current"), NOTHING),
    Case(("MemoryStore.search",), lambda w: w.store.search(("bob",), query=QUESTION), NOTHING),
    Case(("MemoryStore.search",), lambda w: w.store.search(("working_memory", "bob")), NOTHING),
    Case(("MemoryStore.list_namespaces",), lambda w: w.store.list_namespaces(prefix=("bob",)), NOTHING),
    # transfer and the CLI (a SQLite file)
    Case(("export_lines",), lambda w: list(export_lines(w.memory, "tA", resource_id="bob")), REFUSED),
    Case(("cli export",), lambda w: invoke_cli(w, "export", "tA", "--resource", "bob"), REFUSED, True),
    Case(("cli messages",), lambda w: invoke_cli(w, "messages", "tA", "--resource", "bob"), REFUSED, True),
    Case(("cli threads show",), lambda w: invoke_cli(w, "threads", "show", "tA", "--resource", "bob"), NOTHING, True),
    Case(("cli threads list",), lambda w: invoke_cli(w, "threads", "list", "--resource", "bob"), NOTHING, True),
    Case(("cli recall",), lambda w: invoke_cli(w, "recall", QUESTION, "--resource", "bob"), NOTHING, True),
    Case(("cli recall",), lambda w: invoke_cli(w, "recall", QUESTION, "--resource", "bob", "--thread", "tA"), NOTHING, True),
    Case(("cli working-memory show",), lambda w: invoke_cli(w, "working-memory", "show", "--resource", "bob"), NOTHING, True),
]  # fmt: skip


def alices_ids(w: World) -> list[str]:
    return [m.id or "" for m in w.memory.get_messages(thread_id="tA", resource_id="alice")]


def vector_hits(w: World, *, twin: bool = False, **part: str) -> Any:
    """What the vector store itself (pgvector / Chroma) finds for bob, searching and asking
    which of alice's messages have vectors, as the stored messages (the store answers with
    ids; the messages are what would leak)."""
    index, store = w.memory.recall_index, w.memory.vector
    assert index is not None and index.embedder is not None and store is not None
    vector, name = index.embedder.embed_query(QUESTION), index.upkeep.index_name()
    alices = [m.id or "" for m in w.memory.get_messages(thread_id="tA", resource_id="alice")]
    copies = hasattr(store, "vectors")  # a LangChain store hands no vectors back
    assert store.query(name, vector, top_k=20, resource_id="alice")  # alice's are there
    assert store.present(name, "alice", alices)
    assert not copies or store.vectors(name, "alice", alices)  # what a clone copies
    ranks = hasattr(store, "ranking_vectors")  # what the context stage reads (Chroma)
    assert not ranks or store.ranking_vectors(name, "alice", alices)
    copied: dict = {}
    ranked: dict = {}
    if twin:
        hits = arun(store.aquery(name, vector, top_k=20, **part))
        present = arun(store.apresent(name, part["resource_id"], alices))
        if copies:
            copied = arun(store.avectors(name, part["resource_id"], alices))
        if ranks:
            ranked = arun(store.aranking_vectors(name, part["resource_id"], alices))
    else:
        hits = store.query(name, vector, top_k=20, **part)
        present = store.present(name, part["resource_id"], alices)
        if copies:
            copied = store.vectors(name, part["resource_id"], alices)
        if ranks:
            ranked = store.ranking_vectors(name, part["resource_id"], alices)
    found = [h.message_id for h in hits] + sorted(present) + sorted(copied) + sorted(ranked)
    return w.memory.storage.get_messages_by_id(found)


def alices_archives(w: World) -> list[str]:
    """The ids of alice's archives in every scope (one made-up id when there are none)."""
    keys = [scope_key(om, resource_id="alice", thread_id=t) for om in ("thread", "resource")
            for t in ("tA", "tD")]  # fmt: skip
    found = [a.id for a in w.memory.storage.observation_archives(keys, limit=50)]
    assert found or w.om is None  # (a world with observational memory archived her secret)
    return found or ["arc-0000000000000000"]


def alices_archived_groups(w: World) -> list[tuple[str, str]]:
    pairs = []
    for archive_id in alices_archives(w):
        archive = w.memory.storage.observation_archive(archive_id)
        pairs += [(archive_id, g.id) for g in archive.groups] if archive else [(archive_id, "g")]
    return pairs


def case_id(case: Case) -> str:
    return f"{'+'.join(case.covers)}:{case.expect}"


@pytest.mark.parametrize("case", [c for c in CASES if not c.sqlite_file_only], ids=case_id)
def test_bob_never_reads_alices_memory(world: World, case: Case) -> None:
    attempt(world, case)


@pytest.mark.parametrize("case", [c for c in CASES if c.sqlite_file_only], ids=case_id)
def test_bob_never_reads_alices_memory_through_the_cli(file_world: World, case: Case) -> None:
    attempt(file_world, case)


def attempt(world: World, case: Case) -> None:
    """Bob's read: refused or without alice's data; alice's data all still there."""
    if case.expect == REFUSED:
        with pytest.raises((ResourceMismatchError, InvalidStoreInputError)) as refused:
            case.run(world)
        assert LEAK not in str(refused.value)
    else:
        assert LEAK not in repr(case.run(world))
    # and alice still has all of hers
    assert SECRET in repr(world.memory.get_messages(thread_id="tA", resource_id="alice"))
    assert SECRET in world.memory.get_working_memory(resource_id="alice")
    assert SECRET in repr(world.store.get(("alice", "notes"), "k1"))


def test_a_thread_only_config_says_what_the_rule_did(world: World) -> None:
    with pytest.raises(ResourceMismatchError, match="no resource_id or user_id was given"):
        world.memory.context(ASK, thread_id="tA", resource_id="tA")
    with pytest.raises(ResourceMismatchError, match="no resource_id or user_id was given"):
        world.graph.get_state(cfg("tA"))


# -- the matrix covers every public read path --------------------------------------------------------
NOT_READS = {
    # the owner's own calls, with no other resource's data to reach
    "Memory.create_thread": "creates a thread for the caller; an existing id is ThreadExistsError",
    "Memory.update_working_memory": "writes the caller's working memory (read back by get_working_memory)",
    "Memory.flush": "waits for this process's writes",
    "Memory.close": "drains this process's writes and releases its files; returns a bool",
    "ChromaVectorStore.close": "releases the store's client; returns nothing",
    "Memory.settled": "waits for this process's background work; returns nothing",
    "cli mcp": "starts a server: its tools' reads are attacked in tests/test_mcp.py (another resource's thread, search, working memory, observations, writing into another's thread, naming another resource)",
    "Memory.backfill_embeddings": "embeds what storage holds; returns a count",
    "Memory.checkpointer": "builds the checkpointer (its reads are in the matrix)",
    "Memory.store": "builds the store (its reads are in the matrix)",
    "MemoryStore.put": "a write; forged namespaces are refused by batch (in the matrix)",
    "MemoryStore.delete": "a write by namespace, the store's own isolation unit",
    "MemoryCheckpointer.put_writes": "pending writes of a checkpoint put checked by put",
    "MemoryCheckpointer.delete_thread": "LangGraph's API names no resource (the developer's call)",
    "MemoryCheckpointer.delete_for_runs": "deletes by run id, returns nothing",
    "MemoryCheckpointer.prune": "deletes old checkpoints, returns nothing",
    "MemoryCheckpointer.forget": "deletes a thread's checkpoints, returns nothing",
    "MemoryCheckpointer.write_back": "rewrites a thread's checkpoints in the saver's format; "
    "returns a count (its reads resolve lists of that thread only: tests/test_checkpoint_refs.py)",
    "MemoryCheckpointer.prune_checkpoints": "deletes a thread's old checkpoints; returns a count",
    "Memory.prune": "deletes by age alone across resources and returns counts only "
    "(tests/test_retention.py: each resource's old messages go, nothing newer, recall per owner)",
    "cli prune": "the operator's retention run; prints counts (tests/test_retention.py)",
    "MemoryCheckpointer.get_next_version": "a version counter",
    "MemoryCheckpointer.with_allowlist": "configures serialization",
    "MemoryChatMessageHistory.add_message": "a write to the history's own thread, checked",
    "MemoryChatMessageHistory.add_messages": "a write to the history's own thread, checked",
    "MemoryChatMessageHistory.add_user_message": "a write to the history's own thread, checked",
    "MemoryChatMessageHistory.add_ai_message": "a write to the history's own thread, checked",
    "MemoryChatMessageHistory.clear": "deletes the history's own thread's messages, checked",
    **{
        f"{store}.{name}": why
        for store in ALL_STORES
        for name, why in {
            "upsert": "a write (the memory's writer, after storage's own checks)",
            "delete": "a delete by ids / thread / resource, returns nothing",
            "count": "how many vectors an index (or a resource's part) holds: a number",
            "warm": "loads a resource's part for exact search; returns a flag",
        }.items()
    },
    "ChromaVectorStore.collection": "Chroma's own collection handle: the operator's, not a user's",
    "QdrantEdgeVectorStore.optimize": "builds an index's graph in the engine; returns a flag",
    "QdrantEdgeVectorStore.flush": "writes the engine's pending changes to disk",
    "ChromaVectorStore.partitions": "Chroma's collections of an index: the operator's",
    "ChromaVectorStore.from_url": "a constructor",
    **{f"{store}.close": "releases the engine's client" for store in ENGINE_STORES},
    "MastraVectorStore.close": "ends its libsql worker process",
    "cli setup": "installs model files",
    "cli reindex": "embeds what storage holds; prints a count",
    "cli import": "a write; a line naming another resource's thread is refused",
    "cli import-mastra": "the operator's copy of a whole Mastra store into --db (every resource's, as the store holds them); prints counts; a thread another resource owns there stops it, nothing lands (tests/test_mastra_store.py)",
    "cli export-mastra": "the operator's copy of the whole of --db into a Mastra store; prints counts (tests/test_mastra_store.py)",
    "cli demo": "a database of its own",
    "cli threads delete": "the operator's command (tested to delete checkpoints and the log too)",
    "Memory.delete_resource": "erases the named resource, returns a flag (tests/test_delete_resource.py "
    "scans every table and engine: nothing of it left, nothing of another touched)",
    "cli forget": "the operator's erasure of one resource (tests/test_delete_resource.py)",
    "Memory.vector_backlog": "a count of messages waiting for vectors and the writer's last error",
    "cli backlog": "prints that count",
    "cli working-memory set": "a write to the named resource",
    "cli ui": "a web server: its pages are scoped to one resource in their URL, and crafted URLs "
    "for another resource's thread are 404 without its data (tests/test_ui.py)",
}
SURFACES = [
    Memory, MemoryStore, MemoryCheckpointer, MemoryChatMessageHistory, PgVectorStore,
    ChromaVectorStore, QdrantVectorStore, QdrantEdgeVectorStore, MilvusVectorStore,
    LangChainVectorStore, MastraVectorStore,
]  # fmt: skip


def public_paths() -> set[str]:
    """Every public method (sync name; its async twin goes with it) of the surfaces, and every
    CLI command."""
    import typer.main

    paths: set[str] = set()
    for cls in SURFACES:
        names = {n for n, v in inspect.getmembers(cls) if not n.startswith("_") and callable(v)}
        names |= {"messages"} if cls is MemoryChatMessageHistory else set()
        paths |= {
            f"{cls.__name__}.{n}" for n in names if not (n.startswith("a") and n[1:] in names)
        }
    command = typer.main.get_command(app)
    for name, sub in command.commands.items():  # type: ignore[attr-defined]
        if hasattr(sub, "commands"):
            paths |= {f"cli {name} {inner}" for inner in sub.commands}
        else:
            paths.add(f"cli {name}")
    return paths


def test_every_public_read_path_is_in_the_matrix() -> None:
    covered = {path for case in CASES for path in case.covers}
    covered |= {re.sub(r"\.a(\w+)$", r".\1", path) for path in covered}  # a twin covers its name
    missing = public_paths() - covered - set(NOT_READS)
    assert not missing, f"public paths neither in the isolation matrix nor in NOT_READS: {missing}"
    assert not set(NOT_READS) & covered


# -- deleting a thread leaves nothing for the id's next owner ----------------------------------------
@pytest.mark.parametrize("om", ["thread", "resource"])
def test_a_deleted_threads_next_owner_sees_no_log_and_no_state(
    storage: Any, om: str, call: Callable[..., Any]
) -> None:
    options = {"observational_memory": {"model": EchoObserver(), "scope": om, "message_tokens": 60,
                                         "buffer_tokens": None}}  # fmt: skip
    memory = Memory(storage=storage, options=options)
    graph = graph_on(memory)
    for text in ALICE_TURNS:
        graph.invoke({"messages": [HumanMessage(text)]}, ALICE)
    assert memory.flush(30)
    assert call(memory, "delete_thread", "tA", resource_id="alice")
    assert memory.get_thread("tA") is None
    # the id's next owner (bob, or alice again) starts empty: no log, no state, no messages
    # (with resource scope alice's own log stays hers: it is keyed by her, not by the thread)
    for owner in ("bob", "alice") if om == "thread" else ("bob",):
        assert LEAK not in repr(memory.context(ASK, thread_id="tA", resource_id=owner))
        assert graph.get_state(cfg("tA", owner)).values == {}
    graph.invoke({"messages": [HumanMessage("Hello, I am Bob.")]}, BOB_ON_A)
    assert [m.content for m in memory.get_messages(thread_id="tA")] == [
        "Hello, I am Bob.",
        "Noted: Hello, I am Bob.",
    ]
    if om == "thread":
        key = scope_key("thread", resource_id="bob", thread_id="tA")
        assert SECRET not in repr(memory.storage.observation_log(key, buffered=True))


def test_checkpoints_of_a_thread_deleted_elsewhere_are_nobodys(tmp_path: Path) -> None:
    """The CLI (another process) deletes alice's thread: after a restart, bob's graph on that
    id neither reads alice's state nor mirrors her messages into his thread."""
    db = tmp_path / "memory.db"
    memory = Memory(storage=SQLiteStorage(db))
    graph = graph_on(memory)  # the default saver: SqliteSaver in the same file
    graph.invoke({"messages": [HumanMessage(ALICE_TURNS[0])]}, ALICE)
    memory.storage.close()
    result = CliRunner().invoke(app, ["threads", "delete", "tA", "--yes", "--db", str(db)])
    assert result.exit_code == 0, result.output
    restarted = Memory(storage=SQLiteStorage(db))
    graph = graph_on(restarted)
    assert graph.get_state(BOB_ON_A).values == {}
    graph.invoke({"messages": [HumanMessage("Hello, I am Bob.")]}, BOB_ON_A)
    assert SECRET not in repr(graph.get_state(BOB_ON_A).values)
    assert SECRET not in repr(list(graph.get_state_history(BOB_ON_A)))
    assert SECRET not in repr(restarted.get_messages(thread_id="tA"))


async def test_orphaned_checkpoints_in_another_saver_are_purged_for_the_next_owner() -> None:
    """A saver memory cannot reach from the CLI (here one shared InMemorySaver): the thread is
    deleted through another Memory on the same storage; the next owner's first put purges
    what was left, and reads before it see nothing."""
    saver = InMemorySaver()
    storage = SQLiteStorage(":memory:")
    graph = graph_on(Memory(storage=storage), saver)
    await graph.ainvoke({"messages": [HumanMessage(ALICE_TURNS[0])]}, ALICE)
    other_process = Memory(storage=storage)
    assert other_process.delete_thread("tA")
    assert saver.get_tuple(cfg("tA")) is not None  # that Memory could not reach this saver
    graph = graph_on(Memory(storage=storage), saver)
    assert (await graph.aget_state(BOB_ON_A)).values == {}
    await graph.ainvoke({"messages": [HumanMessage("Hello, I am Bob.")]}, BOB_ON_A)
    history = [s async for s in graph.aget_state_history(BOB_ON_A)]
    assert SECRET not in repr(history)


def test_deleting_through_memory_deletes_the_checkpoints_of_its_checkpointers(
    call: Callable[..., Any],
) -> None:
    saver = InMemorySaver()
    memory = Memory(storage=SQLiteStorage(":memory:"))
    graph = graph_on(memory, saver)
    graph.invoke({"messages": [HumanMessage(ALICE_TURNS[0])]}, ALICE)
    assert call(memory, "delete_thread", "tA")
    assert saver.get_tuple(cfg("tA")) is None
    assert graph.get_state(ALICE).values == {}


def test_copy_thread_copies_within_the_owner_only() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    graph = graph_on(memory, CopyingSaver())
    graph.invoke({"messages": [HumanMessage(ALICE_TURNS[0])]}, ALICE)
    graph.invoke({"messages": [HumanMessage("Hello, I am Bob.")]}, BOB_ON_B)
    graph.checkpointer.copy_thread("tA", "tA-copy")
    assert SECRET in repr(graph.get_state(cfg("tA-copy", "alice")).values)
    assert SECRET in repr(memory.get_messages(thread_id="tA-copy", resource_id="alice"))
    with pytest.raises(ResourceMismatchError):
        graph.checkpointer.copy_thread("tA", "tB")
    assert LEAK not in repr(graph.get_state(BOB_ON_B).values)


def test_the_replica_world_reads_through_the_replica_route(world: World) -> None:
    """The world on `read_dsn` really read through it (else the matrix proved nothing new)."""
    replica = getattr(world.memory.storage, "replica", None)
    if world.kind != "postgres+replica":
        assert replica is None
        return
    assert replica is not None and replica.served["replica"] > 0
