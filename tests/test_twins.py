"""`twins`: an algorithm written once runs sync or async; its steps name bound methods, so the
type checker checks each call against the method (issue 85: no method names as strings)."""

from __future__ import annotations

import asyncio
import threading

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
