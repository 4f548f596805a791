"""`Memory.observations_as_of` (Mastra's ``getObservationsAsOf``): the observation log as it
stood at a past moment, through real turns with a scripted Observer and Reflector: at every
moment it equals what the log read then. SQLite and PostgreSQL, sync and async; a thread of
another resource is refused, an unknown one is an error; a clone keeps the history."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from test_observational_memory import Scripted, chat_turns

from langchain_mastra_memory import Memory
from langchain_mastra_memory.errors import (
    ConfigurationError,
    ResourceMismatchError,
    ThreadNotFoundError,
)
from langchain_mastra_memory.storage.records import now_utc, scope_key


def moment() -> datetime:
    """An instant strictly between two writes."""
    time.sleep(0.02)
    at = now_utc()
    time.sleep(0.02)
    return at


def om_memory(storage, **option) -> Memory:
    settings = {"model": Scripted(calls=[]), "message_tokens": 100, "buffer_tokens": None,
                "observation_tokens": 60, **option}  # fmt: skip
    return Memory(storage=storage, options={"observational_memory": settings})


def test_the_log_at_each_past_moment_is_the_log_read_then(storage, call) -> None:
    memory = om_memory(storage)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    ref = {"thread_id": "t1", "resource_id": "alice"}
    chat_turns(memory, 1)
    snapshots = [(moment(), [])]
    for start in range(1, 16, 3):  # observations, then reflections condensing them
        chat_turns(memory, 3, start=start)
        assert memory.flush()
        snapshots.append((moment(), [(g.id, g.text) for g in storage.observation_log(key)]))
    kinds = {g.kind for g in storage.observation_history(key)}
    assert kinds == {"observation", "reflection"}  # both happened along the way
    assert len({tuple(log) for _, log in snapshots}) >= 4  # the log changed several times
    for at, log in snapshots:
        groups = call(memory, "observations_as_of", at, **ref)
        assert [(g.id, g.text) for g in groups] == log
    # a naive datetime is UTC; before anything, nothing
    naive = snapshots[0][0].replace(tzinfo=None)
    assert call(memory, "observations_as_of", naive, **ref) == []


def test_another_resource_or_an_unknown_thread_is_refused(storage, call) -> None:
    memory = om_memory(storage)
    chat_turns(memory, 4)
    assert memory.flush()
    later = now_utc() + timedelta(seconds=1)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    before = storage.observation_history(key)
    assert before  # there is a log to steal
    with pytest.raises(ResourceMismatchError):
        call(memory, "observations_as_of", later, thread_id="t1", resource_id="bob")
    with pytest.raises(ThreadNotFoundError):
        call(memory, "observations_as_of", later, thread_id="nope", resource_id="alice")
    with pytest.raises(ConfigurationError, match="needs thread_id"):
        call(memory, "observations_as_of", later, resource_id="alice")
    with pytest.raises(ConfigurationError, match="scope must be"):
        call(memory, "observations_as_of", later, resource_id="alice", scope="everyone")
    with pytest.raises(TypeError, match="at must be a datetime"):
        call(memory, "observations_as_of", "2026-11-28", thread_id="t1", resource_id="alice")
    with pytest.raises(ValueError):  # an id no thread may have
        call(memory, "observations_as_of", later, thread_id="", resource_id="alice")
    # bob's own resource-scoped log is empty, never alice's
    assert call(memory, "observations_as_of", later, resource_id="bob", scope="resource") == []
    assert storage.observation_history(key) == before  # nothing changed by the refusals


def test_resource_scope_and_a_clone_keep_their_history(storage, call) -> None:
    memory = om_memory(storage, scope="resource")
    chat_turns(memory, 4)
    assert memory.flush()
    then = moment()
    log = [g.text for g in storage.observation_log(scope_key("resource", resource_id="alice",
                                                             thread_id=None))]  # fmt: skip
    assert log
    got = call(memory, "observations_as_of", then, resource_id="alice")  # the memory's scope
    assert [g.text for g in got] == log
    thread_scoped = om_memory(storage)  # another memory on the same data, thread scope
    assert call(thread_scoped, "observations_as_of", then, resource_id="alice", thread_id="t1",
                scope="resource") == got  # fmt: skip

    copy = om_memory(storage)
    first = om_memory(storage)
    chat_turns(first, 4, start=100)  # (thread scope now: a thread log of t1 too)
    assert first.flush()
    now = moment()
    own = call(first, "observations_as_of", now, thread_id="t1", resource_id="alice")
    assert own
    copy.clone_thread("t1", new_thread_id="t1-copy", resource_id="alice")
    cloned = call(copy, "observations_as_of", now, thread_id="t1-copy", resource_id="alice")
    assert [g.text for g in cloned] == [g.text for g in own]  # as it stood then, copied
