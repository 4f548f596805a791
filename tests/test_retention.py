"""Retention (`lifecycle.retention`): ``options["retention"]`` and ``memory.prune()``.

Ages are made as a deployment's data gets them: rows written, then their times moved back
(a message's ``created_at``, a thread's ``updated_at``, an item's ``updated_at``, an
observation's ``created_at``), in SQLite + Chroma and PostgreSQL + pgvector alike.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import echo_graph
from langchain_core.messages import AIMessage, HumanMessage
from typer.testing import CliRunner

from langchain_mastra_memory import Memory, MemoryStorage, SQLiteStorage
from langchain_mastra_memory.cli import app
from langchain_mastra_memory.errors import ConfigurationError

DAYS_200 = timedelta(days=200)


def backdate(storage: MemoryStorage, table: str, column: str, key: str, ids: list, age: timedelta):
    """Move rows' times back by `age` (as if written then)."""
    when = datetime.now(timezone.utc) - age
    with storage._transaction(write=True) as conn:
        for row_id in ids:
            storage._run(
                conn,
                f"UPDATE {table} SET {column} = ? WHERE {key} = ?",
                (storage._time(when), row_id),
            )


def tomatoes(memory: Memory, thread: str = "t1", owner: str = "alice") -> None:
    """Two messages 200 days old and one new, all about tomatoes, embedded."""
    memory.create_thread(thread_id=thread, resource_id=owner)
    memory.save_messages(
        [HumanMessage("my tomato seeds came from grandma", id=f"{thread}-old1"),
         AIMessage("grandma's tomato seeds are heirlooms", id=f"{thread}-old2")],
        thread_id=thread, resource_id=owner,
    )  # fmt: skip
    backdate(memory.storage, "memory_messages", "created_at", "id",
             [f"{thread}-old1", f"{thread}-old2"], DAYS_200)  # fmt: skip
    memory.save_messages([HumanMessage("the new tomato bed gets sun", id=f"{thread}-new1")],
                         thread_id=thread, resource_id=owner)  # fmt: skip
    memory.flush(120)


def hits(memory: Memory, mode: str, owner: str = "alice") -> set[str]:
    page = memory.search_messages("tomato seeds", resource_id=owner, mode=mode, per_page=20)
    return {hit.message.id for hit in page.items}


RECALL = {"top_k": 5, "message_range": 0}


def test_old_messages_leave_storage_and_keyword_and_vector_recall(
    storage: MemoryStorage, call: Any
) -> None:
    """The issue's measure: SQLite + Chroma and PostgreSQL + pgvector, sync and async."""
    memory = Memory(
        storage=storage, options={"semantic_recall": RECALL, "retention": {"messages": "90d"}}
    )
    tomatoes(memory)
    for mode in ("keyword", "vector"):
        assert {"t1-old1", "t1-old2"} <= hits(memory, mode)  # found before
    report = call(memory, "prune")
    assert (report.messages, report.done) == (2, True)
    assert [m.id for m in memory.get_messages(thread_id="t1")] == ["t1-new1"]
    for mode in ("keyword", "vector", "hybrid"):
        found = hits(memory, mode)
        assert "t1-new1" in found and not found & {"t1-old1", "t1-old2"}, mode
    assert call(memory, "prune").messages == 0  # nothing left to do


def test_nothing_is_pruned_unless_configured(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options={"semantic_recall": RECALL})
    tomatoes(memory)
    report = memory.prune()
    assert report.total() == 0 and len(memory.get_messages(thread_id="t1")) == 3


@pytest.mark.parametrize(
    "retention, named",
    [
        ({"messages": "soon"}, "['messages']: 'soon' is not a duration"),
        ({"messages": "0d"}, "must be longer than zero"),
        ({"messages": timedelta(days=-3)}, "must be longer than zero"),
        ({"messages": "-3d"}, "is not a duration"),
        ({"messages": 90}, "is not a duration"),
        ({"forever": "1d"}, "unknown kind 'forever'"),
        ({"checkpoints": {"keep": 0}}, "['checkpoints']['keep']: 0"),
        ({"checkpoints": {"max_age": "1d", "ttl": 3}}, "unknown option(s) ['ttl']"),
        ({"threads": {}}, "['threads']: give 'max_age'"),
        ("90d", "must be a dict of ages by kind"),
    ],
)
def test_a_bad_retention_is_a_configuration_error_naming_the_option(
    retention: Any, named: str
) -> None:
    with pytest.raises(ConfigurationError, match="retention") as caught:
        Memory(storage=SQLiteStorage(":memory:"), options={"retention": retention})
    assert named in str(caught.value)


def test_a_pruned_message_leaves_the_checkpoints_and_the_observation_log(
    storage: MemoryStorage, call: Any
) -> None:
    memory = Memory(storage=storage, options={"retention": {"messages": "90d"}})
    app = echo_graph(memory.checkpointer())
    config = {"configurable": {"thread_id": "g1", "resource_id": "alice"}}
    for i in range(3):
        app.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, config)
    ids = [m.id for m in memory.get_messages(thread_id="g1")]
    first_turn = ids[:2]  # the first question and its echo
    key = "thread:g1"
    assert storage.claim_observation(key, owner="w", seconds=30)
    storage.commit_observation(key, owner="w", resource_id="alice", text="* likes turns",
                               current_task=None, message_ids=ids[:4], token_count=3)  # fmt: skip
    backdate(storage, "memory_messages", "created_at", "id", first_turn, DAYS_200)
    assert call(memory, "prune").messages == 2
    state = [m.id for m in app.get_state(config).values["messages"]]
    assert state == ids[2:]  # the state reads on without them
    for snapshot in app.get_state_history(config):
        assert not set(first_turn) & {m.id for m in snapshot.values.get("messages", [])}
    (group,) = storage.observation_log(key)
    assert list(group.message_ids) == ids[2:4] and group.text == "* likes turns"
    app.invoke({"messages": [HumanMessage("turn 3", id="u3")]}, config)  # the graph goes on
    after = [m.id for m in app.get_state(config).values["messages"]]
    assert after[:-1] == [*ids[2:], "u3"]
    assert [m.id for m in memory.get_messages(thread_id="g1")] == after


def test_idle_threads_go_whole_with_their_checkpoints(storage: MemoryStorage, call: Any) -> None:
    memory = Memory(storage=storage, options={"retention": {"threads": "30d"}})
    app = echo_graph(memory.checkpointer())
    for thread in ("idle", "busy"):
        config = {"configurable": {"thread_id": thread, "resource_id": "alice"}}
        app.invoke({"messages": [HumanMessage(f"hello from {thread}")]}, config)
    backdate(storage, "memory_threads", "updated_at", "id", ["idle"], timedelta(days=45))
    report = call(memory, "prune")
    assert report.threads == 1
    assert memory.get_thread("idle") is None and memory.get_thread("busy") is not None
    idle = {"configurable": {"thread_id": "idle", "resource_id": "alice"}}
    assert app.get_state(idle).values == {}  # its checkpoints went with it
    busy = {"configurable": {"thread_id": "busy", "resource_id": "alice"}}
    assert len(app.get_state(busy).values["messages"]) == 2


def test_checkpoints_beyond_the_newest_n_go_and_the_latest_state_reads_the_same(
    storage: MemoryStorage, call: Any
) -> None:
    memory = Memory(storage=storage, options={"retention": {"checkpoints": {"keep": 3}}})
    app = echo_graph(memory.checkpointer())
    config = {"configurable": {"thread_id": "c1", "resource_id": "alice"}}
    for i in range(8):
        app.invoke({"messages": [HumanMessage(f"turn {i}", id=f"u{i}")]}, config)
    before = app.get_state(config).values["messages"]
    count = len(list(app.get_state_history(config)))
    report = call(memory, "prune")
    left = len(list(app.get_state_history(config)))  # the newest 3, and an ancestor a kept
    assert 3 <= left <= 6 < count  # one reads a channel through (`keep_with_ancestors`)
    assert report.checkpoints == count - left
    assert app.get_state(config).values["messages"] == before
    with storage._transaction(write=False) as conn:
        rows = storage._run(conn, "SELECT count(*) FROM memory_checkpoint_lists").fetchone()[0]
    assert rows <= left  # kept lists became whole: the rows only pruned ones held are gone
    app.invoke({"messages": [HumanMessage("turn 8", id="u8")]}, config)
    assert [m.id for m in app.get_state(config).values["messages"]][-2] == "u8"


def test_checkpoints_older_than_an_age_go_never_the_latest(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"),
                    options={"retention": {"checkpoints": "1s"}})  # fmt: skip
    app = echo_graph(memory.checkpointer())
    config = {"configurable": {"thread_id": "c1", "resource_id": "alice"}}
    for i in range(3):
        app.invoke({"messages": [HumanMessage(f"turn {i}")]}, config)
    time.sleep(1.2)  # every checkpoint is now older than the age
    latest = app.get_state(config)
    count = len(list(app.get_state_history(config)))
    gone = memory.prune().checkpoints
    left = list(app.get_state_history(config))
    assert len(left) == count - gone <= 3 < count  # the latest (and what it reads through)
    assert left[0].values == latest.values and left[0].config == latest.config


def test_old_observations_and_store_items_without_a_ttl_go(storage: MemoryStorage, call: Any):
    memory = Memory(storage=storage,
                    options={"retention": {"observations": "30d", "items": "30d"}})  # fmt: skip
    memory.create_thread(thread_id="t1", resource_id="alice")
    for n, key in enumerate(("thread:t1", "resource:alice")):
        assert storage.claim_observation(key, owner="w", seconds=30)
        storage.commit_observation(key, owner="w", resource_id="alice", text=f"* fact {n}",
                                   current_task=None, message_ids=[], token_count=2)  # fmt: skip
    old_group = storage.observation_log("thread:t1")[0].id
    backdate(storage, "memory_observation_groups", "created_at", "id", [old_group], DAYS_200)
    store = memory.store()
    store.put(("notes", "alice"), "old", {"text": "old note"})
    store.put(("notes", "alice"), "new", {"text": "new note"})
    store.put(("notes", "alice"), "ttl", {"text": "its own ttl"}, ttl=60 * 24 * 365)
    for key in ("old", "ttl"):
        backdate(storage, "memory_store_items", "updated_at", "key", [key], DAYS_200)
    report = call(memory, "prune")
    assert (report.observations, report.items) == (1, 1)
    assert storage.observation_log("thread:t1") == []
    assert [g.text for g in storage.observation_log("resource:alice")] == ["* fact 1"]
    assert store.get(("notes", "alice"), "old") is None
    assert store.get(("notes", "alice"), "new") is not None
    assert store.get(("notes", "alice"), "ttl") is not None  # its TTL governs it


def test_a_prune_bounded_in_time_resumes_where_it_stopped(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"),
                    options={"retention": {"messages": "90d"}})  # fmt: skip
    memory.create_thread(thread_id="t1", resource_id="alice")
    ids = [f"m{i}" for i in range(250)]
    memory.save_messages([HumanMessage(f"note {i}", id=i) for i in ids],
                         thread_id="t1", resource_id="alice")  # fmt: skip
    backdate(memory.storage, "memory_messages", "created_at", "id", ids, DAYS_200)
    reports = []
    while not reports or not reports[-1].done:
        reports.append(memory.prune(max_seconds=0, batch_size=100))  # one batch a call
    assert [r.messages for r in reports] == [100, 100, 50]
    assert memory.get_messages(thread_id="t1") == []


def _prune_in_a_process(path: str, out: Any) -> None:
    memory = Memory(storage=SQLiteStorage(path), options={"retention": {"messages": "90d"}})
    out.put(memory.prune(batch_size=25).messages)


def test_two_processes_pruning_at_once_remove_each_message_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory = Memory(storage=SQLiteStorage(path), options={"retention": {"messages": "90d"}})
    memory.create_thread(thread_id="t1", resource_id="alice")
    ids = [f"m{i}" for i in range(400)]
    memory.save_messages([HumanMessage(f"note {i}", id=i) for i in ids],
                         thread_id="t1", resource_id="alice")  # fmt: skip
    backdate(memory.storage, "memory_messages", "created_at", "id", ids, DAYS_200)
    memory.save_messages([HumanMessage("kept", id="new")], thread_id="t1", resource_id="alice")
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    workers = [context.Process(target=_prune_in_a_process, args=(str(path), out)) for _ in "ab"]
    for worker in workers:
        worker.start()
    removed = [out.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(60)
    assert sum(removed) == 400 and all(w.exitcode == 0 for w in workers)
    assert [m.id for m in memory.get_messages(thread_id="t1")] == ["new"]


def test_a_prune_beside_live_turns_keeps_every_new_turn(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"),
                    options={"retention": {"messages": "90d", "threads": "30d"}})  # fmt: skip
    memory.create_thread(thread_id="t1", resource_id="alice")
    old = [f"old{i}" for i in range(300)]
    memory.save_messages([HumanMessage(i, id=i) for i in old], thread_id="t1", resource_id="alice")
    backdate(memory.storage, "memory_messages", "created_at", "id", old, DAYS_200)
    app = echo_graph(memory.checkpointer())
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    turns = threading.Thread(target=lambda: [
        app.invoke({"messages": [HumanMessage(f"live {i}", id=f"live{i}")]}, config)
        for i in range(20)
    ])  # fmt: skip
    turns.start()
    while turns.is_alive():
        memory.prune(batch_size=20)
    turns.join()
    memory.prune()
    held = [m.id for m in memory.get_messages(thread_id="t1")]
    assert [i for i in held if i.startswith("live")] == [f"live{i}" for i in range(20)]
    assert not [i for i in held if i.startswith("old")]
    assert len(app.get_state(config).values["messages"]) == 40


def test_prune_takes_each_resource_s_old_messages_and_nothing_newer(storage: MemoryStorage):
    """The isolation matrix's entry: pruning is by age alone; it never moves, shows or keeps
    one resource's data for another, and reports counts only."""
    memory = Memory(storage=storage,
                    options={"semantic_recall": RECALL, "retention": {"messages": "90d"}})  # fmt: skip
    tomatoes(memory, "a1", "alice")
    tomatoes(memory, "b1", "bob")
    report = memory.prune()
    assert report.messages == 4 and "alice" not in repr(report) and "bob" not in repr(report)
    assert [m.id for m in memory.get_messages(thread_id="a1")] == ["a1-new1"]
    assert [m.id for m in memory.get_messages(thread_id="b1")] == ["b1-new1"]
    assert hits(memory, "hybrid", "bob") == {"b1-new1"}
    assert hits(memory, "hybrid", "alice") == {"a1-new1"}


def test_the_cli_prunes_what_its_options_name(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory = Memory(storage=SQLiteStorage(path), options={"semantic_recall": RECALL})
    tomatoes(memory)
    runner = CliRunner()
    bad = runner.invoke(app, ["prune", "--db", str(path), "--messages", "soon"])
    assert bad.exit_code != 0 and "not a duration" in bad.output
    assert len(memory.get_messages(thread_id="t1")) == 3  # nothing lost
    done = runner.invoke(app, ["prune", "--db", str(path), "--messages", "90d"])
    assert done.exit_code == 0, done.output
    assert "removed 2 messages" in done.output
    assert [m.id for m in memory.get_messages(thread_id="t1")] == ["t1-new1"]
    assert hits(memory, "vector") == {"t1-new1"}
