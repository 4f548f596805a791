"""Observational memory's log in storage: groups with provenance, a cursor and a lease that
only a committed run moves, reflections that replace exactly what they condensed — in SQLite
and PostgreSQL, sync and async, across threads and processes."""

from __future__ import annotations

import multiprocessing
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import SQLiteStorage
from langchain_mastra_memory.storage.records import now_utc, scope_key


def turns(storage, thread: str, n: int, owner: str = "alice") -> list[str]:
    if storage.get_thread(thread) is None:
        storage.create_thread(thread_id=thread, resource_id=owner)
    saved = storage.save_messages(
        [m for i in range(n) for m in (HumanMessage(f"q{i}"), AIMessage(f"a{i}"))],
        thread_id=thread,
        resource_id=owner,
    )
    return [s.message.id for s in saved]


def observe(storage, key: str, owner: str, ids: list[str], text: str = "obs"):
    return storage.commit_observation(
        key, owner=owner, resource_id="alice", text=text, current_task=None,
        message_ids=ids, token_count=3.0,
    )  # fmt: skip


def test_a_committed_observation_moves_the_cursor_past_what_it_covers(storage, call) -> None:
    ids = turns(storage, "t1", 3)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    unseen = call(storage, "unobserved_messages", key, resource_id="alice", thread_id="t1")
    assert [s.message.id for s in unseen] == ids
    before = call(storage, "unobserved_tokens", key, resource_id="alice", thread_id="t1")
    assert before == pytest.approx(sum(s.token_count for s in unseen)) and before > 0
    assert call(storage, "claim_observation", key, owner="run-1", seconds=30) is True
    group = call(
        storage, "commit_observation", key, owner="run-1", resource_id="alice",
        text="- [high] asked q0..q1", current_task="q2", message_ids=ids[:4], token_count=5.0,
    )  # fmt: skip
    assert group is not None and group.message_ids == tuple(ids[:4])
    unseen = call(storage, "unobserved_messages", key, resource_id="alice", thread_id="t1")
    assert [s.message.id for s in unseen] == ids[4:]
    after = call(storage, "unobserved_tokens", key, resource_id="alice", thread_id="t1")
    assert after == pytest.approx(sum(s.token_count for s in unseen))
    assert 0 < after < before
    (logged,) = call(storage, "observation_log", key)
    assert (logged.id, logged.text, logged.current_task) == (group.id, group.text, "q2")
    assert call(storage, "claim_observation", key, owner="run-2", seconds=30) is True  # released


def test_one_runner_per_scope_and_a_lost_lease_commits_nothing(storage) -> None:
    ids = turns(storage, "t1", 2)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    assert storage.claim_observation(key, owner="a", seconds=30)
    assert not storage.claim_observation(key, owner="b", seconds=30)  # a runs: b skips
    storage.release_observation(key, owner="b")  # not b's to release
    assert not storage.claim_observation(key, owner="b", seconds=30)
    storage.release_observation(key, owner="a")
    assert storage.claim_observation(key, owner="b", seconds=0.05)  # b's lease runs out ...
    time.sleep(0.1)
    assert storage.claim_observation(key, owner="c", seconds=30)  # ... and c takes it
    assert observe(storage, key, "b", ids) is None  # b's late result: nothing written
    assert storage.observation_log(key) == []
    assert len(storage.unobserved_messages(key, resource_id="alice", thread_id="t1")) == 4


def test_a_crash_between_the_model_and_storage_loses_no_message(storage) -> None:
    turns(storage, "t1", 2)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    assert storage.claim_observation(key, owner="crashed", seconds=0.05)
    time.sleep(0.1)  # the run died after its model call, before committing
    assert storage.claim_observation(key, owner="next", seconds=30)
    pending = storage.unobserved_messages(key, resource_id="alice", thread_id="t1")
    assert len(pending) == 4  # all still to observe


def test_a_reflection_replaces_exactly_the_groups_it_condensed(storage) -> None:
    ids = turns(storage, "t1", 3)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    groups = []
    for part in (ids[:2], ids[2:4], ids[4:]):
        storage.claim_observation(key, owner="o", seconds=30)
        groups.append(observe(storage, key, "o", part, text=f"obs {part[0]}"))
    storage.claim_observation(key, owner="r", seconds=30)
    reflection = storage.commit_reflection(
        key, owner="r", resource_id="alice", text="condensed", current_task=None,
        replaces=[g.id for g in groups[:2]], token_count=1.0,
    )  # fmt: skip
    assert reflection is not None and reflection.replaces == (groups[0].id, groups[1].id)
    assert [g.text for g in storage.observation_log(key)] == ["condensed", groups[2].text]
    storage.claim_observation(key, owner="r2", seconds=30)
    stale = storage.commit_reflection(  # condenses a group that is no longer active
        key, owner="r2", resource_id="alice", text="again", current_task=None,
        replaces=[groups[0].id, groups[2].id], token_count=1.0,
    )  # fmt: skip
    assert stale is None
    assert [g.text for g in storage.observation_log(key)] == ["condensed", groups[2].text]


def test_resource_scope_spans_threads_and_never_another_resource(storage) -> None:
    mine = turns(storage, "t1", 1) + turns(storage, "t2", 1)
    turns(storage, "b1", 1, owner="bob")
    key = scope_key("resource", resource_id="alice", thread_id=None)
    unseen = storage.unobserved_messages(key, resource_id="alice", thread_id=None)
    assert [s.message.id for s in unseen] == mine
    with pytest.raises(ValueError, match="needs thread_id"):
        scope_key("thread", resource_id="alice", thread_id=None)


def _claim_in_a_process(path: str, key: str, owner: str, out) -> None:
    out.put(SQLiteStorage(path).claim_observation(key, owner=owner, seconds=30))


@pytest.mark.slow
def test_processes_racing_for_a_scope_get_one_lease(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    SQLiteStorage(path).setup()
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [
        ctx.Process(target=_claim_in_a_process, args=(path, "thread:t1", f"p{i}", out))
        for i in range(4)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert sorted(out.get(timeout=5) for _ in workers) == [False, False, False, True]


def buffer(storage, key: str, ids: list[str], text: str):
    assert storage.claim_observation(key, owner=f"run-{text}", seconds=30)
    return storage.commit_observation(
        key, owner=f"run-{text}", resource_id="alice", text=text, current_task=None,
        message_ids=ids, token_count=3.0, buffered=True,
    )  # fmt: skip


def test_buffered_groups_wait_outside_the_log_until_activated(storage, call) -> None:
    """A buffered group moves only the buffer frontier: its messages stay in the context
    (after the cursor) while the Observer's next run starts after it. Activation turns the
    oldest groups active, as many as leave about `retain_tokens` raw, and moves the cursor."""
    ids = turns(storage, "t1", 6)  # 12 messages
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    ref = {"resource_id": "alice", "thread_id": "t1"}
    a, b, c = (buffer(storage, key, ids[i : i + 4], f"g{i}") for i in (0, 4, 8))
    assert not a.active and a.message_tokens == pytest.approx(
        sum(s.token_count for s in storage.get_messages_by_id(ids[:4]))
    )
    assert call(storage, "observation_log", key) == []
    assert [g.id for g in call(storage, "observation_log", key, buffered=True)] == [
        a.id, b.id, c.id,
    ]  # fmt: skip
    assert len(call(storage, "unobserved_messages", key, **ref)) == 12  # all still raw
    assert call(storage, "unobserved_messages", key, buffered=True, **ref) == []
    total = call(storage, "unobserved_tokens", key, **ref)

    # leave about one group's worth raw: the two oldest go into the log
    activated = call(storage, "activate_observations", key, retain_tokens=c.message_tokens, **ref)
    assert [g.id for g in activated] == [a.id, b.id] and all(g.active for g in activated)
    assert [g.id for g in call(storage, "observation_log", key)] == [a.id, b.id]
    raw = call(storage, "unobserved_messages", key, **ref)
    assert [s.message.id for s in raw] == ids[8:]  # the cursor is past b's last message
    assert call(storage, "unobserved_tokens", key, **ref) == pytest.approx(
        total - a.message_tokens - b.message_tokens
    )
    # at least one group, even when retaining more than is raw
    (last,) = call(storage, "activate_observations", key, retain_tokens=10**9, **ref)
    assert last.id == c.id and call(storage, "unobserved_messages", key, **ref) == []
    assert call(storage, "activate_observations", key, retain_tokens=0, **ref) == []  # none left


def test_a_reflection_leaves_buffered_groups_waiting_in_order(storage) -> None:
    ids = turns(storage, "t1", 4)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    ref = {"resource_id": "alice", "thread_id": "t1"}
    first, second = buffer(storage, key, ids[:4], "old"), buffer(storage, key, ids[4:], "new")
    storage.activate_observations(key, retain_tokens=second.message_tokens, **ref)
    assert storage.claim_observation(key, owner="reflector", seconds=30)
    reflection = storage.commit_reflection(
        key, owner="reflector", resource_id="alice", text="condensed", current_task=None,
        replaces=[first.id], token_count=1.0,
    )  # fmt: skip
    assert reflection is not None
    assert [g.id for g in storage.observation_log(key, buffered=True)] == [
        reflection.id, second.id,
    ]  # fmt: skip
    storage.activate_observations(key, retain_tokens=0, **ref)
    assert [g.text for g in storage.observation_log(key)] == ["condensed", "new"]


def test_an_unbuffered_commit_takes_the_waiting_groups_into_the_log(storage) -> None:
    ids = turns(storage, "t1", 3)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    waiting = buffer(storage, key, ids[:2], "ahead")
    assert storage.claim_observation(key, owner="now", seconds=30)
    group = observe(storage, key, "now", ids[2:], text="now")
    assert group is not None and group.active
    assert [g.id for g in storage.observation_log(key)] == [waiting.id, group.id]
    assert storage.unobserved_messages(key, resource_id="alice", thread_id="t1") == []


def test_a_log_written_before_buffering_migrates_active(tmp_path: Path, monkeypatch) -> None:
    """A file at schema 5 (the log without buffering) opens at the current schema: its groups
    stay in the log, its cursor holds, and buffering continues after it."""
    from helpers import thread_columns_before_archiving

    import langchain_mastra_memory.storage.sqlite.backend as sqlite_module
    from langchain_mastra_memory.storage.sqlite import schema as sqlite_schema

    current = sqlite_schema.MIGRATIONS
    path = tmp_path / "v5.db"
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", current[:5])
    thread_columns_before_archiving(monkeypatch)  # as then, for the whole test
    old = SQLiteStorage(path)
    ids = turns(old, "t1", 3)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    with old._transaction(write=True) as conn:  # what schema 5's commit wrote
        conn.execute(
            "INSERT INTO memory_observation_groups VALUES "
            "('g1', ?, 'alice', 'observation', 'old log', NULL, ?, '[]', 2.0, "
            "'2026-11-01T00:00:00+00:00', NULL)",
            (key, f'["{ids[0]}", "{ids[1]}"]'),
        )
        seq = conn.execute("SELECT seq FROM memory_messages WHERE id = ?", (ids[1],)).fetchone()
        conn.execute("INSERT INTO memory_observation_state (scope_key, seq) VALUES (?, ?)",
                     (key, seq[0]))  # fmt: skip
    old.close()
    monkeypatch.setattr(sqlite_module, "MIGRATIONS", current)
    monkeypatch.undo()
    storage = SQLiteStorage(path)
    assert storage.schema_version() == len(current)
    ref = {"resource_id": "alice", "thread_id": "t1"}
    (group,) = storage.observation_log(key)
    assert group.id == "g1" and group.active
    assert [s.message.id for s in storage.unobserved_messages(key, **ref)] == ids[2:]
    assert [s.message.id for s in storage.unobserved_messages(key, buffered=True, **ref)] == ids[2:]
    ahead = buffer(storage, key, ids[2:4], "ahead")
    assert [s.message.id for s in storage.unobserved_messages(key, buffered=True, **ref)] == ids[4:]
    storage.activate_observations(key, retain_tokens=0, **ref)
    assert [g.id for g in storage.observation_log(key)] == ["g1", ahead.id]
    # the old log counts from its creation; the new group from its activation
    at = datetime(2026, 11, 2, tzinfo=timezone.utc)
    assert [g.id for g in storage.observations_as_of(key, at)] == ["g1"]
    assert [g.id for g in storage.observations_as_of(key, now_utc())] == ["g1", ahead.id]


def test_the_log_as_it_stood_at_each_moment(storage, call) -> None:
    """`observations_as_of`: a group counts from when it joined the log (an observation at its
    activation, not while it waited buffered; a reflection at its commit), and the groups a
    reflection replaced count until that commit: what the model was shown then."""
    ids = turns(storage, "t1", 4)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    ref = {"resource_id": "alice", "thread_id": "t1"}

    def moment():  # a distinct instant between two writes
        time.sleep(0.02)
        at = now_utc()
        time.sleep(0.02)
        return at

    empty = moment()
    assert storage.claim_observation(key, owner="o", seconds=30)
    first = observe(storage, key, "o", ids[:2], text="first")
    after_first = moment()
    waiting = buffer(storage, key, ids[2:4], "waiting")
    while_buffered = moment()
    storage.activate_observations(key, retain_tokens=0, **ref)
    activated = moment()
    assert storage.claim_observation(key, owner="r", seconds=30)
    reflection = storage.commit_reflection(
        key, owner="r", resource_id="alice", text="condensed", current_task=None,
        replaces=[first.id, waiting.id], token_count=1.0,
    )  # fmt: skip
    reflected = moment()
    buffer(storage, key, ids[4:], "later")  # waits: in no past or present log

    def texts(at):
        return [g.text for g in call(storage, "observations_as_of", key, at)]

    assert texts(empty) == []
    assert texts(after_first) == ["first"]
    assert texts(while_buffered) == ["first"]  # written, not yet shown
    assert texts(activated) == ["first", "waiting"]
    assert texts(reflected) == ["condensed"]
    assert [g.id for g in call(storage, "observations_as_of", key, now_utc())] == [
        g.id for g in storage.observation_log(key)
    ] == [reflection.id]  # fmt: skip
    # another scope's log is not this one's
    other = scope_key("thread", resource_id="alice", thread_id="t2")
    assert call(storage, "observations_as_of", other, now_utc() + timedelta(days=1)) == []
