"""Observational memory's log in storage: groups with provenance, a cursor and a lease that
only a committed run moves, reflections that replace exactly what they condensed — in SQLite
and PostgreSQL, sync and async, across threads and processes."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import SQLiteStorage
from langchain_mastra_memory.storage.observations import scope_key


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
