"""The caller's identity from LangGraph Server's auth owns the run; the server's own reads by
thread id are answered for the stored owner only where asked (`trust_thread_reads`); the
server module's settings come from the environment and a bad one names its variable.
The end-to-end run against a real server is `test_langgraph_server.py`."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime, ServerInfo

from langchain_mastra_memory import ConfigurationError, Memory, ResourceMismatchError, SQLiteStorage
from langchain_mastra_memory.langgraph_server import (
    memory_from_environment,
    settings,
)
from langchain_mastra_memory.threads.ids import caller_identity, resolve_ids
from tests.helpers import echo_graph


def as_caller(identity: str, **configurable: Any) -> dict:
    return {"configurable": {"thread_id": "t1", "langgraph_auth_user_id": identity, **configurable}}


def test_the_callers_identity_owns_the_run() -> None:
    assert resolve_ids(as_caller("alice")) == ("t1", "alice")
    assert resolve_ids(as_caller("alice", resource_id="alice")) == ("t1", "alice")
    assert resolve_ids(as_caller("alice"), default_resource_id="someone") == ("t1", "alice")
    for claim in ({"resource_id": "bob"}, {"user_id": "bob"}):
        with pytest.raises(ResourceMismatchError, match="a caller reaches its own memory"):
            resolve_ids(as_caller("alice", **claim))
    assert caller_identity({"configurable": {"langgraph_auth_user_id": ""}}) is None


def test_the_identity_in_the_runtimes_server_info_counts_too() -> None:
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        owner: str

    def who(state: State, runtime: Runtime) -> dict:
        return {"owner": resolve_ids({"configurable": {"thread_id": "t"}})[1]}

    builder = StateGraph(State)
    builder.add_node("who", who)
    builder.add_edge(START, "who")
    graph = builder.compile()
    info = ServerInfo(assistant_id="a", graph_id="g", user={"identity": "carol"})  # type: ignore[call-arg]
    out = graph.invoke(
        {"owner": ""}, {"configurable": {"__pregel_runtime": Runtime(server_info=info)}}
    )
    assert out["owner"] == "carol"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_reads_by_thread_id_alone_are_strict_unless_trusted(mode: str) -> None:
    memory, saver = Memory(storage=SQLiteStorage(":memory:")), InMemorySaver()
    strict = echo_graph(memory.checkpointer(saver))
    strict.invoke({"messages": [HumanMessage("hi")]}, as_caller("alice"))
    by_id = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    trusted = memory.checkpointer(saver, trust_thread_reads=True)

    def read(checkpointer: Any, config: dict) -> Any:
        if mode == "sync":
            return checkpointer.get_tuple(config)
        return asyncio.run(checkpointer.aget_tuple(config))

    with pytest.raises(ResourceMismatchError, match="no resource_id or user_id was given"):
        read(strict.checkpointer, by_id)
    found = read(trusted, by_id)
    assert found.config["configurable"]["resource_id"] == "alice"  # the stored owner's
    assert [t.config["configurable"]["resource_id"] for t in trusted.list(by_id)] == ["alice"] * 3
    history = trusted.get_delta_channel_history(config=by_id, channels=["messages"])
    assert set(history) == {"messages"}  # the owner's history, through the trusted read
    for other in (as_caller("bob"), {"configurable": {"thread_id": "t1", "user_id": "bob"}}):
        with pytest.raises(ResourceMismatchError):  # naming someone is still checked
            read(trusted, other)
    with pytest.raises(ResourceMismatchError):  # and a put always names its owner
        echo_graph(trusted).invoke({"messages": [HumanMessage("mine now")]}, as_caller("bob"))
    assert [str(m.content) for m in memory.get_messages(thread_id="t1")] == ["hi", "echo: hi"]


def test_the_server_memory_is_read_from_the_environment(tmp_path: Any) -> None:
    chosen = settings({"LMM_DB": str(tmp_path / "m.db"),
                       "LMM_OPTIONS": '{"last_messages": 7, "semantic_recall": false}'})  # fmt: skip
    assert chosen.db == str(tmp_path / "m.db") and not chosen.postgres
    memory = memory_from_environment({"LMM_DB": str(tmp_path / "m.db"),
                                      "LMM_OPTIONS": '{"last_messages": 7}'})  # fmt: skip
    assert memory.options.last_messages == 7 and memory.storage.path == str(tmp_path / "m.db")
    assert settings({}).db == "memory.db" and settings({}).vector == "default"
    assert settings({"LMM_DB": "postgresql://u@h/db"}).postgres


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"LMM_OPTIONS": "{not json"}, "LMM_OPTIONS"),
        ({"LMM_OPTIONS": "[1, 2]"}, "LMM_OPTIONS"),
        ({"LMM_OPTIONS": '{"last_messages": -3}'}, "last_messages"),
        ({"LMM_VECTOR": "chroma"}, "LMM_VECTOR"),
        ({"LMM_VECTOR": "no_such_module_xyz:store"}, "LMM_VECTOR"),
    ],
)
def test_a_bad_setting_names_its_variable(tmp_path: Any, environ: dict, named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        memory_from_environment({"LMM_DB": str(tmp_path / "m.db"), **environ})
