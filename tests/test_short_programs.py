"""A program that ends before its vectors are written: no traceback at exit, and the next
process over the same storage makes every message searchable by itself (its writer sweeps the
durable backlog at start; `flush()` means everything stored so far, whoever stored it).

Each program is a real subprocess (`short_program.py`) on the default embedder (MiniLM), over
SQLite with embedded Chroma, PostgreSQL with pgvector, a Chroma server, Qdrant and a Milvus
server; ended by its last line, by ``asyncio.run`` returning, by an uncaught exception, by
``sys.exit`` inside an async program, and by ``kill -9`` mid-save.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import free_port, start_chroma_server
from langchain_core.messages import AIMessage, HumanMessage
from short_program import RESOURCE, open_memory, open_storage

from langchain_mastra_memory import Memory, PostgresStorage
from langchain_mastra_memory.messages import embedding_pieces

pytestmark = pytest.mark.slow
PROGRAM = Path(__file__).with_name("short_program.py")
LIBRARY_LINE = "langchain_mastra_memory"


def run_program(world: str, where: str, how: str, n: int = 200, exit_drain: float = 2.0):
    """Run the short program to its end; its completed process."""
    return subprocess.run(
        [sys.executable, str(PROGRAM), world, where, how, str(n), str(exit_drain)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )


def assert_quiet(done: subprocess.CompletedProcess, *, expected_error: str | None = None) -> None:
    """No traceback but the program's own, and memory said nothing above INFO."""
    tracebacks = done.stderr.count("Traceback")
    if expected_error is None:
        assert tracebacks == 0, done.stderr[-4000:]
    else:
        assert tracebacks == 1 and expected_error in done.stderr, done.stderr[-4000:]
        assert "langchain_mastra_memory/" not in done.stderr  # not one of memory's frames
    assert "cannot schedule new futures" not in done.stderr
    ours = [line for line in done.stderr.splitlines() if f" {LIBRARY_LINE}" in line]
    assert all(line.startswith("INFO ") for line in ours), ours


def saved_ids(memory: Memory) -> list[str]:
    """Every message id stored for the resource, oldest first."""
    threads = memory.list_threads(resource_id=RESOURCE)
    return [
        m.id or ""
        for t in threads
        for m in memory.get_messages(thread_id=t.id, resource_id=RESOURCE)
    ]


def assert_every_message_found(memory: Memory, ids: list[str]) -> None:
    """After `flush()` alone (no backfill): each message has exactly its vectors, none twice,
    and a vector search for a message's own text finds it first."""
    assert ids
    assert memory.flush(timeout=300)
    assert memory.storage.count_unembedded() == 0
    assert memory.recall_index is not None
    name = memory.recall_index.upkeep.index_name()
    stored = memory.storage.get_messages_by_id(ids)
    assert sorted(s.message.id for s in stored) == sorted(ids)
    pieces = {s.message.id: len(embedding_pieces(s.message)) for s in stored}
    vectors = memory.vector.vectors(name, RESOURCE, ids)
    assert {i: len(v) for i, v in vectors.items()} == pieces
    dimension = len(next(iter(vectors.values()))[0])
    assert memory.vector.count(name, dimension, RESOURCE) == sum(pieces.values())  # none twice
    embedder = memory.recall_index.upkeep.embedder
    for s in stored[:: max(1, len(stored) // 8)]:
        vector = embedder.embed_query(s.message.text)
        [best] = memory.vector.query(name, vector, top_k=1, resource_id=RESOURCE)
        assert best.message_id == s.message.id, s.message.text
        page = memory.search_messages(
            s.message.text, resource_id=RESOURCE, mode="vector", per_page=50
        )
        assert s.message.id in {hit.message.id for hit in page.items}, s.message.text


@pytest.fixture
def sqlite_world(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path)


@pytest.mark.parametrize(
    ("how", "returncode", "error"),
    [
        ("sync", 0, None),
        ("async", 0, None),
        ("raise", 1, "the program itself failed"),
        ("async-exit", 3, None),
    ],
)
def test_a_short_program_exits_quietly_and_the_next_process_finds_every_message(
    sqlite_world: str, how: str, returncode: int, error: str | None
) -> None:
    done = run_program("sqlite", sqlite_world, how)
    assert done.returncode == returncode, done.stderr[-4000:]
    assert done.stdout.strip() == "saved"
    assert_quiet(done, expected_error=error)
    memory = open_memory("sqlite", sqlite_world)  # a new process: no backfill_embeddings()
    ids = saved_ids(memory)
    assert len(ids) == 200
    assert_every_message_found(memory, ids)
    memory.close()


def test_what_the_exit_drain_leaves_waits_for_the_next_start_and_one_info_line_says_so(
    sqlite_world: str,
) -> None:
    """No drain at exit (``exit_drain: 0``): the batch under way ends, no other starts (600
    messages are three batches), and the rest waits in the backlog, as the INFO line says."""
    done = run_program("sqlite", sqlite_world, "sync", n=600, exit_drain=0.0)
    assert done.returncode == 0, done.stderr[-4000:]
    assert_quiet(done)
    said = [line for line in done.stderr.splitlines() if "wait for their vectors" in line]
    assert len(said) == 1, done.stderr[-4000:]
    waiting = int(re.search(r"(\d+) stored messages wait", said[0]).group(1))
    memory = open_memory("sqlite", sqlite_world)
    assert 200 <= waiting == memory.storage.count_unembedded() <= 600  # the backlog, as said
    assert_every_message_found(memory, saved_ids(memory))
    memory.close()


def test_a_process_killed_mid_save_loses_nothing_it_acknowledged_from_recall(
    sqlite_world: str,
) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(PROGRAM), "sqlite", sqlite_world, "kill", "0", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    acknowledged: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:  # the writer is busy meanwhile: saves outrun one linger
        acknowledged += line.split()[1:]
        if len(acknowledged) >= 120:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    memory = open_memory("sqlite", sqlite_world)
    stored = set(saved_ids(memory))
    assert set(acknowledged) <= stored
    assert memory.storage.count_unembedded() > 0  # killed with vectors still to write
    assert_every_message_found(memory, sorted(stored))
    memory.close()


# -- the other engines, and two processes at once -----------------------------------------------
@pytest.fixture(scope="module")
def chroma_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    port = free_port()
    server = start_chroma_server(tmp_path_factory.mktemp("chroma"), port)
    os.environ["LMM_TEST_CHROMA_PORT"] = str(port)
    yield port
    server.terminate()
    server.wait(10)


@pytest.fixture
def postgres_world() -> Iterator[str]:
    dsn, schema = os.environ["LMM_TEST_POSTGRES_DSN"], f"t_{uuid.uuid4().hex[:12]}"
    yield f"{dsn}|{schema}"
    storage = PostgresStorage(dsn, schema=schema)
    storage.drop_schema()
    storage.close()


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(world, where) for each engine, a fresh place each (a resource no other test writes:
    a Chroma or Milvus server is shared)."""
    kind = request.param
    if kind == "postgres":
        yield kind, request.getfixturevalue("postgres_world")
        return
    if kind == "chroma-server":
        request.getfixturevalue("chroma_port")
    if kind == "milvus-server":
        request.getfixturevalue("milvus_uri")
    yield kind, str(tmp_path)


@pytest.fixture(autouse=True)
def own_resource(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's messages in a resource of their own (servers outlive a test)."""
    import short_program

    resource = f"alice-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(short_program, "RESOURCE", resource)
    monkeypatch.setitem(globals(), "RESOURCE", resource)
    monkeypatch.setenv("LMM_TEST_RESOURCE", resource)


ENGINES = [
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("chroma-server", marks=pytest.mark.chroma_server),
    "qdrant",
    "milvus-server",
]


@pytest.mark.parametrize("world", ENGINES, indirect=True)
def test_every_engine_the_next_process_writes_what_an_ended_one_left(
    world: tuple[str, str],
) -> None:
    kind, where = world
    done = run_program(kind, where, "async", n=600, exit_drain=0.0)  # no batch at exit but one
    assert done.returncode == 0, done.stderr[-4000:]
    assert_quiet(done)
    memory = open_memory(kind, where)
    assert memory.storage.count_unembedded() > 0
    assert_every_message_found(memory, saved_ids(memory))
    memory.close()


@pytest.mark.parametrize(
    "world",
    [
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("chroma-server", marks=pytest.mark.chroma_server),
    ],
    indirect=True,
)
def test_two_live_processes_drain_one_backlog_with_every_vector_once(
    world: tuple[str, str],
) -> None:
    """A program leaves 200 or more messages unembedded; two start at once over the same storage,
    both sweep that backlog while both save 200 of their own: every message ends with exactly
    its vectors, none twice."""
    kind, where = world
    assert run_program(kind, where, "sync", n=600, exit_drain=0.0).returncode == 0
    left = open_storage(kind, where)
    assert left.count_unembedded() >= 200
    left.close()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    both = [
        subprocess.Popen(
            [sys.executable, str(PROGRAM), kind, where, "sync", "200", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for _ in range(2)
    ]  # fmt: skip
    for proc in both:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0 and out.strip() == "saved", err[-4000:]
        assert "Traceback" not in err, err[-4000:]
    memory = open_memory(kind, where)
    ids = saved_ids(memory)
    assert len(ids) == 1000
    assert_every_message_found(memory, ids)
    memory.close()


# -- observational memory's and titles' work behind the turn -------------------------------------
HUNG_WORK = textwrap.dedent(
    """
    import sys, time
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_mastra_memory import Memory, SQLiteStorage

    class Hung(FakeListChatModel):  # an Observer or title model that never answers in time
        responses: list = ["never"]
        def _call(self, messages, *args, **kwargs):
            print("called", flush=True)
            time.sleep(120)
            return "too late"

    option = {"model": Hung(), "message_tokens": 100, "buffer_tokens": None,
              "block_after": 100.0}
    options = {"observational_memory": option} if sys.argv[2] == "observer" else {
        "generate_title": {"model": Hung()}}
    memory = Memory(storage=SQLiteStorage(sys.argv[1]), options={**options, "exit_drain": 1.0})
    memory.create_thread(thread_id="t1", resource_id="alice")
    memory.save_messages(
        [(HumanMessage if i % 2 == 0 else AIMessage)(
            f"Message {i}: I live in Lisbon and I am allergic to peanuts.") for i in range(10)],
        thread_id="t1", resource_id="alice")
    print("saved", flush=True)
    sys.stdin.readline()  # ends when the test says so (the model call is under way)
    """
)


def run_until_called(db: Path, work: str) -> tuple[str, str]:
    """Run the hung program until its model call is under way, then let it end; its output.
    (A subprocess timeout far below the model's 120 s: the exit never waits for the call.)"""
    proc = subprocess.Popen(
        [sys.executable, "-c", HUNG_WORK, str(db), work],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    lines = {proc.stdout.readline().strip() for _ in range(2)}
    assert lines == {"saved", "called"}
    out, err = proc.communicate("\n", timeout=30)
    assert proc.returncode == 0, err[-4000:]
    return out, err


def test_an_observer_cut_by_the_exit_commits_nothing_and_the_next_process_observes_at_once(
    tmp_path: Path,
) -> None:
    from test_observational_memory import Scripted

    from langchain_mastra_memory import SQLiteStorage
    from langchain_mastra_memory.storage.records import scope_key

    db = tmp_path / "m.db"
    _, err = run_until_called(db, "observer")
    assert "Traceback" not in err, err[-4000:]
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    storage = SQLiteStorage(db)
    assert storage.observation_log(key) == []  # nothing half-committed
    observer = Scripted(calls=[])
    options = {"model": observer, "message_tokens": 100, "buffer_tokens": None}
    memory = Memory(storage=storage, options={"observational_memory": options})
    memory.save_messages(  # the next save: its lease was given back at exit, so no wait
        [AIMessage("Noted: Lisbon, no peanuts.")], thread_id="t1", resource_id="alice"
    )
    assert memory.flush(timeout=30)
    (group,) = storage.observation_log(key)
    assert len(group.message_ids) == 11 and len(observer.calls) == 1  # all of them, once
    memory.close()


def test_a_title_cut_by_the_exit_is_written_by_the_next_process(tmp_path: Path) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from langchain_mastra_memory import SQLiteStorage

    db = tmp_path / "m.db"
    _, err = run_until_called(db, "title")
    assert "Traceback" not in err, err[-4000:]
    storage = SQLiteStorage(db)
    assert storage.get_thread("t1").title is None
    titler = FakeListChatModel(responses=["Lisbon and peanuts"])
    memory = Memory(storage=storage, options={"generate_title": {"model": titler}})
    memory.save_messages([HumanMessage("And I like tea.")], thread_id="t1", resource_id="alice")
    assert memory.flush(timeout=30)
    assert storage.get_thread("t1").title == "Lisbon and peanuts"
    memory.close()
