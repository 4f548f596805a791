"""`memory.store()` takes bad input the same way on every backend: checked before anything runs.

Ops given straight to ``batch``/``abatch`` are checked as LangGraph's own methods check theirs
(a dotted label would address another namespace: the store keeps namespaces as dotted text),
and values, keys and labels are refused alike by SQLite and PostgreSQL (what one stores the
other could not). Concurrent writers of the same keys in PostgreSQL never lose a batch.
"""

from __future__ import annotations

import math
import os
import threading
import uuid

import psycopg
import pytest
from conftest import Call
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from langchain_mastra_memory import Memory, PostgresStorage, StorageError
from langchain_mastra_memory.integrations.store import InvalidStoreInputError, MemoryStore


def make_store(storage, **options) -> MemoryStore:
    memory = Memory(storage=storage, options=options or None)
    return memory.store(index=False)


FORGED = [
    pytest.param([GetOp(("users", "alice.private"), "k")], id="get-dotted-label"),
    pytest.param([SearchOp(("users", "alice.private"))], id="search-dotted-prefix"),
    pytest.param(
        [PutOp(("working_memory.alice",), "current", {"content": "forged"})], id="put-forged-wm"
    ),
    pytest.param(
        [ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("a.b",)),))],
        id="list-dotted-condition",
    ),
    pytest.param([GetOp(("users", ""), "k")], id="empty-label"),
    pytest.param([GetOp(("users", "a\x00b"), "k")], id="nul-label"),
]


@pytest.mark.parametrize("ops", FORGED)
def test_ops_given_to_batch_cannot_cross_namespaces(storage, call: Call, ops) -> None:
    store = make_store(storage, working_memory={"enabled": True})
    store.put(("users", "alice", "private"), "k", {"secret": "alice's"})
    with pytest.raises(InvalidStoreInputError) as refused:
        call(store, "batch", [PutOp(("users", "bob"), "k", {"ok": True}), *ops])
    assert isinstance(refused.value, InvalidNamespaceError)  # what LangGraph's stores raise
    assert store.get(("users", "bob"), "k") is None  # the batch ran nothing, its good op neither
    assert store.get(("working_memory", "alice"), "current") is None
    assert [i.value for i in store.search(("users",))] == [{"secret": "alice's"}]


BAD_VALUES = [
    pytest.param({"x": math.nan}, "finite", id="nan"),
    pytest.param({"x": [1.0, math.inf]}, "finite", id="infinity"),
    pytest.param({"x": "a\x00b"}, "NUL", id="nul-in-string"),
    pytest.param({"x": "bad \ud800"}, "surrogate", id="lone-surrogate"),
    pytest.param({1: "key"}, "not a string", id="non-string-key"),
    pytest.param([["role", "admin"]], "must be a dict", id="list-not-dict"),
    pytest.param("text", "must be a dict", id="str-not-dict"),
]


@pytest.mark.parametrize(("value", "problem"), BAD_VALUES)
def test_values_every_backend_could_not_store_are_refused_alike(
    storage, call: Call, value, problem
) -> None:
    store = make_store(storage)
    with pytest.raises(InvalidStoreInputError, match=problem):
        call(store, "batch", [PutOp(("ns",), "k", value)])
    assert store.search(("ns",)) == []


def test_a_deeply_nested_value_is_a_clear_error_not_a_recursion_error(storage) -> None:
    value: dict = {}
    inner = value
    for _ in range(5_000):
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(InvalidStoreInputError, match="nested more than"):
        make_store(storage).put(("ns",), "k", value)


@pytest.mark.parametrize(
    ("namespace", "key", "problem"),
    [
        (("ns",), "a\x00b", "NUL"),
        (("ns",), "k" * 6_000, "longer than"),
        (("ns",), "é" * 600, "longer than 1024 bytes"),  # 600 characters, 1,200 bytes
        (("l" * 6_000,), "k", "longer than"),
        (("ns",), "bad \udfff", "surrogate"),
        (("ns", "bad \udfff"), "k", "surrogate"),
    ],
)
def test_keys_and_labels_are_refused_before_the_database(
    storage, call: Call, namespace, key, problem
) -> None:
    store = make_store(storage)
    with pytest.raises(InvalidStoreInputError, match=problem):
        call(store, "batch", [PutOp(namespace, key, {"v": 1})])
    with pytest.raises(InvalidStoreInputError, match=problem):
        call(store, "batch", [GetOp(namespace, key)])


def test_what_is_valid_round_trips_on_every_backend(storage, call: Call) -> None:
    store = make_store(storage)
    value = {"text": "naïve café ☕ \u2028 line", "n": 1.5, "deep": [[{"ok": None}]], "t": True}
    call(store, "batch", [PutOp(("users", "bob", "notes"), "k" * 500, value)])
    (item,) = call(store, "batch", [GetOp(("users", "bob", "notes"), "k" * 500)])
    assert item.value == value


# -- concurrent writers in PostgreSQL ------------------------------------------------------------
@pytest.mark.postgres
@pytest.mark.slow
def test_writers_of_the_same_keys_in_opposite_order_lose_no_batch() -> None:
    """Two writers (separate pools, as two processes) put the same 20 keys, one in order and
    one reversed, 120 batches each: every batch lands (rows are locked in one order, and a
    deadlock victim would be run again)."""
    dsn, schema = os.environ["LMM_TEST_POSTGRES_DSN"], f"t_{uuid.uuid4().hex[:12]}"
    first = PostgresStorage(dsn, schema=schema)
    second = PostgresStorage(dsn, schema=schema)
    errors: list[Exception] = []
    keys = [f"key-{i:02d}" for i in range(20)]

    def writer(storage: PostgresStorage, order: list[str], name: str) -> None:
        store = make_store(storage)
        for n in range(120):
            try:
                store.batch([PutOp(("shared",), k, {"by": name, "n": n}) for k in order])
            except Exception as exc:  # collected: the assertion below names them
                errors.append(exc)

    try:
        threads = [
            threading.Thread(target=writer, args=(first, keys, "forward")),
            threading.Thread(target=writer, args=(second, keys[::-1], "backward")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        items = make_store(first).search(("shared",), limit=100)
        assert len(items) == 20 and {i.value["n"] for i in items} <= {119}
    finally:
        first.drop_schema()
        first.close()
        second.close()


@pytest.mark.postgres
def test_a_deadlock_victim_is_run_again_then_reported() -> None:
    """PostgreSQL's deadlock error (SQLSTATE 40P01) reruns the whole transaction; after
    `DEADLOCK_ATTEMPTS` it is a `StorageError` saying what happened."""
    from langchain_mastra_memory.storage.postgres.backend import DEADLOCK_ATTEMPTS

    storage = PostgresStorage(
        os.environ["LMM_TEST_POSTGRES_DSN"], schema=f"t_{uuid.uuid4().hex[:12]}"
    )
    attempts: list[int] = []

    def victim(times: int):
        def transaction() -> str:
            attempts.append(1)
            if len(attempts) <= times:
                try:
                    raise psycopg.errors.DeadlockDetected("deadlock detected")
                except psycopg.Error as exc:
                    raise StorageError(f"PostgreSQL is unavailable: {exc}") from exc
            return "done"

        return transaction

    try:
        assert storage._retried(victim(2), "writing store items") == "done"
        assert len(attempts) == 3
        attempts.clear()
        with pytest.raises(StorageError, match="to break a deadlock") as failed:
            storage._retried(victim(99), "writing store items")
        assert len(attempts) == DEADLOCK_ATTEMPTS
        assert "nothing of it was applied" in str(failed.value)
        attempts.clear()
        with pytest.raises(StorageError, match="unavailable"):  # other errors: not retried
            storage._retried(
                lambda: (attempts.append(1), _raise(StorageError("unavailable")))[1], "x"
            )
        assert len(attempts) == 1
    finally:
        storage.drop_schema()
        storage.close()


def _raise(exc: Exception):
    raise exc
