"""The conversation survives whatever a graph does to its state (memory keeps the
conversation; the state, the model's context and the checkpoints are views of it).

Each pattern LangGraph and LangChain document for long or interactive conversations, under
``memory.checkpointer()`` (and ``memory.middleware()``), on SQLite and PostgreSQL, sync and
async, with the provider-strict scripted model: compaction (LangChain's real
`SummarizationMiddleware`, langmem's `SummarizationNode`, a hand-written ``REMOVE_ALL``
compaction), LangGraph's delete-messages how-to, time travel (fork and replay from
``get_state_history`` configs), a human editing a tool call before it runs, ``interrupt()`` and
``Command(resume=...)``, carried messages, subgraphs, ``Send`` fan-out, parallel tool calls,
and a storage failure in the middle of a run.

Every test runs twice: with ``messages`` in a list channel (``MessagesState``, LangChain's
``AgentState``) and in LangGraph's ``DeltaChannel`` (deep agents' state), whose checkpoints hold
the list only at a snapshot every few updates (here every 3, so each test crosses several).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import AgentState
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.types import Command, Send, interrupt
from langmem.short_term import RunningSummary, SummarizationNode
from typing_extensions import Required, TypedDict

from langchain_mastra_memory import Memory, MemoryStorage, SQLiteStorage
from langchain_mastra_memory.testing import strict_model
from tests.helpers import DeltaMessagesState

ALICE = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}


# -- the two channels a graph keeps its messages in ------------------------------------------------
DELTA_MESSAGES = DeltaMessagesState.__annotations__["messages"]


class DeltaAgentState(AgentState):  # what deepagents' DeepAgentState does, with a short cadence
    messages: Required[DELTA_MESSAGES]  # type: ignore[misc,valid-type]


class SummarizedState(MessagesState):
    context: dict[str, RunningSummary]


class DeltaSummarizedState(DeltaMessagesState):
    context: dict[str, RunningSummary]


class Fan(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    topics: list[str]


class DeltaFan(DeltaMessagesState):
    topics: list[str]


SCHEMAS = {
    "list": {"messages": MessagesState, "agent": AgentState, "summarized": SummarizedState, "fan": Fan},
    "delta": {"messages": DeltaMessagesState, "agent": DeltaAgentState,
              "summarized": DeltaSummarizedState, "fan": DeltaFan},
}  # fmt: skip
CHANNEL = {"kind": "list"}


def schema(name: str = "messages") -> Any:
    """The state schema of this run's channel kind."""
    return SCHEMAS[CHANNEL["kind"]][name]


@pytest.fixture(autouse=True, params=["list", "delta"])
def channel(request: pytest.FixtureRequest) -> str:
    CHANNEL["kind"] = request.param
    return request.param


def contents(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages]


def stored(memory: Memory, thread_id: str = "t1") -> list[str]:
    return contents(memory.get_messages(thread_id=thread_id))


def run(graph: Any, value: Any, config: dict, mode: str) -> Any:
    """`graph.invoke`, or `ainvoke` in the async run."""
    return (
        graph.invoke(value, config) if mode == "sync" else asyncio.run(graph.ainvoke(value, config))
    )


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


class Echo:
    """A reply node: 'answer N' with a fresh id, counting its calls."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, state: dict) -> dict:
        self.n += 1
        return {"messages": [AIMessage(f"answer {self.n}", id=f"ai-{uuid.uuid4()}")]}


def chat_graph(memory: Memory, *nodes: tuple[str, Callable], saver: Any = None, **opts: Any) -> Any:
    """START -> each node in order -> END, checkpointed by memory."""
    builder = StateGraph(schema())
    previous = START
    for name, node in nodes:
        builder.add_node(name, node)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=memory.checkpointer(saver or InMemorySaver(), **opts))


# -- compaction ----------------------------------------------------------------------------------
def compact(state: dict) -> dict:
    """langmem-style compaction by hand: past 4 messages, a summary and the newest two."""
    messages = state["messages"]
    if len(messages) <= 4:
        return {}
    summary = HumanMessage(f"Summary of {len(messages) - 2} earlier messages")
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *messages[-2:]]}


def test_a_compaction_node_deletes_nothing_and_stores_no_summary(
    storage: MemoryStorage, mode: str
) -> None:
    memory = Memory(storage=storage)
    graph = chat_graph(memory, ("compact", compact), ("reply", Echo()))
    for i in range(5):
        run(graph, {"messages": [HumanMessage(f"q{i}")]}, ALICE, mode)
    state = contents(graph.get_state(ALICE).values["messages"])
    assert state[0].startswith("Summary of") and len(state) < 10
    assert stored(memory) == [f"{kind}" for i in range(5) for kind in (f"q{i}", f"answer {i + 1}")]


def test_langchains_summarization_middleware_keeps_the_conversation(
    storage: MemoryStorage, mode: str
) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware

    memory = Memory(storage=storage)
    summarizer = FakeListChatModel(responses=["the user asked q0 to q3"] * 10)
    model = strict_model(*[AIMessage(f"answer {i}") for i in range(6)])
    agent = create_agent(
        model, [],
        middleware=[SummarizationMiddleware(summarizer, trigger=("messages", 6), keep=("messages", 2))],
        checkpointer=memory.checkpointer(), state_schema=schema("agent"),
    )  # fmt: skip
    for i in range(6):
        run(agent, {"messages": [HumanMessage(f"q{i}")]}, ALICE, mode)
    state = contents(agent.get_state(ALICE).values["messages"])
    assert any(s.startswith("Here is a summary") for s in state)  # the state was compacted
    assert stored(memory) == [m for i in range(6) for m in (f"q{i}", f"answer {i}")]
    assert all(not m.startswith("Here is a summary") for m in stored(memory))


def test_the_middleware_shape_keeps_the_conversation_under_summarization(
    storage: MemoryStorage, mode: str
) -> None:
    """`memory.middleware()` saving the turn itself, beside LangChain's summarization, under a
    plain LangGraph saver."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware

    memory = Memory(storage=storage)
    summarizer = FakeListChatModel(responses=["summary"] * 10)
    model = strict_model(*[AIMessage(f"answer {i}") for i in range(6)])
    agent = create_agent(
        model, [],
        middleware=[SummarizationMiddleware(summarizer, trigger=("messages", 6), keep=("messages", 1)),
                    memory.middleware()],
        checkpointer=InMemorySaver(), state_schema=schema("agent"),
    )  # fmt: skip
    for i in range(6):
        run(agent, {"messages": [HumanMessage(f"q{i}")]}, ALICE, mode)
    assert stored(memory) == [m for i in range(6) for m in (f"q{i}", f"answer {i}")]


def test_langmems_summarization_node_keeps_the_conversation(storage: MemoryStorage) -> None:
    memory = Memory(storage=storage)
    summarizer = FakeListChatModel(responses=["running summary"] * 20)
    summarize = SummarizationNode(
        model=summarizer, max_tokens=60, max_tokens_before_summary=60, max_summary_tokens=20,
        output_messages_key="messages",
    )  # fmt: skip
    builder = StateGraph(schema("summarized"))
    builder.add_node("summarize", summarize)
    builder.add_node("reply", Echo())
    builder.add_edge(START, "summarize")
    builder.add_edge("summarize", "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=memory.checkpointer(InMemorySaver()))
    for i in range(6):
        graph.invoke({"messages": [HumanMessage(f"question {i} " + "words " * 8)]}, ALICE)
    kept = stored(memory)
    assert [m for m in kept if m.startswith("question")] == [
        f"question {i} " + "words " * 8 for i in range(6)
    ]
    assert [m for m in kept if m.startswith("answer")] == [f"answer {i}" for i in range(1, 7)]
    assert len(kept) == 12  # no summary among them


def test_the_delete_messages_how_to(storage: MemoryStorage, mode: str) -> None:
    """LangGraph's how-to: a node returning ``RemoveMessage`` for all but the newest two."""

    def trim(state: dict) -> dict:
        return {"messages": [RemoveMessage(id=m.id) for m in state["messages"][:-2]]}

    for mirror_deletes in (False, True):
        memory = Memory(storage=storage)
        thread = {"configurable": {"thread_id": f"t-{mirror_deletes}", "resource_id": "alice"}}
        graph = chat_graph(memory, ("reply", Echo()), ("trim", trim), mirror_deletes=mirror_deletes)
        for i in range(3):
            run(graph, {"messages": [HumanMessage(f"q{i}")]}, thread, mode)
        assert contents(graph.get_state(thread).values["messages"]) == ["q2", "answer 3"]
        expected = ["q2", "answer 3"] if mirror_deletes else ["q0", "answer 1", "q1", "answer 2",
                                                              "q2", "answer 3"]  # fmt: skip
        assert stored(memory, thread["configurable"]["thread_id"]) == expected


# -- time travel ----------------------------------------------------------------------------------
def snapshot_ending_with(graph: Any, config: dict, last: str) -> Any:
    """The newest checkpoint of the history whose state ends with `last` and has nothing next."""
    for snapshot in graph.get_state_history(config):
        messages = snapshot.values.get("messages") or []
        if messages and messages[-1].content == last and not snapshot.next:
            return snapshot
    raise AssertionError(f"no checkpoint ends with {last!r}")


def test_time_travel_forks_the_thread_and_keeps_the_abandoned_branch(
    storage: MemoryStorage, mode: str
) -> None:
    memory = Memory(storage=storage)
    graph = chat_graph(memory, ("reply", Echo()))
    for q in ("q1", "q2", "q3"):
        run(graph, {"messages": [HumanMessage(q)]}, ALICE, mode)
    fork = snapshot_ending_with(graph, ALICE, "answer 1")
    assert fork.config["configurable"]["resource_id"] == "alice"  # replayable as it is
    run(graph, {"messages": [HumanMessage("q2-alt")]}, fork.config, mode)
    assert contents(graph.get_state(ALICE).values["messages"]) == ["q1", "answer 1", "q2-alt",
                                                                   "answer 4"]  # fmt: skip
    assert stored(memory) == ["q1", "answer 1", "q2-alt", "answer 4"]  # the graph's branch
    (branch,) = memory.list_branches("t1")
    assert stored(memory, branch.id) == ["q2", "answer 2", "q3", "answer 3"]  # nothing lost
    assert branch.resource_id == "alice" and branch.metadata["branch_of"] == "t1"
    assert branch.metadata["branch_point"]["after_message_id"] == fork.values["messages"][-1].id
    # the next turn's history is the current branch only
    context = memory.context([HumanMessage("next")], thread_id="t1", resource_id="alice")
    assert "q3" not in contents(context) and "q2-alt" in contents(context)
    # a replay (no new input) of an earlier checkpoint forks again: the replaced reply moves
    before_reply = next(
        s for s in graph.get_state_history(ALICE)
        if s.next == ("reply",) and s.values["messages"][-1].content == "q2-alt"
    )  # fmt: skip
    run(graph, None, before_reply.config, mode)
    assert stored(memory) == ["q1", "answer 1", "q2-alt", "answer 5"]
    assert sorted(stored(memory, b.id)[0] for b in memory.list_branches("t1")) == ["answer 4", "q2"]


def test_going_back_to_the_abandoned_lineage_brings_it_home_and_leaves_no_empty_branch(
    storage: MemoryStorage, mode: str
) -> None:
    """Fork at answer 1, then resume the first lineage (its checkpoint ending with answer 3):
    q2..answer 3 come home from their branch, which is then empty and goes; the alternative
    lineage moves to a branch of its own."""
    memory = Memory(storage=storage)
    graph = chat_graph(memory, ("reply", Echo()))
    for q in ("q1", "q2", "q3"):
        run(graph, {"messages": [HumanMessage(q)]}, ALICE, mode)
    original = snapshot_ending_with(graph, ALICE, "answer 3")
    fork = snapshot_ending_with(graph, ALICE, "answer 1")
    run(graph, {"messages": [HumanMessage("q2-alt")]}, fork.config, mode)
    (first,) = memory.list_branches("t1")
    run(graph, {"messages": [HumanMessage("q4")]}, original.config, mode)
    assert stored(memory) == ["q1", "answer 1", "q2", "answer 2", "q3", "answer 3", "q4",
                              "answer 5"]  # fmt: skip
    branches = memory.list_branches("t1")
    assert [stored(memory, b.id) for b in branches] == [["q2-alt", "answer 4"]]
    assert first.id not in {b.id for b in branches}
    assert memory.get_thread(first.id) is None  # emptied by the return: removed
    threads = memory.list_threads(resource_id="alice")
    assert all(stored(memory, t.id) for t in threads)  # no empty thread left behind


def test_deleting_a_thread_deletes_its_branches(storage: MemoryStorage, mode: str) -> None:
    """A fork's abandoned continuation is part of the conversation: it goes with it, and so do
    branches of branches; another thread's branches stay."""
    memory = Memory(storage=storage)
    graph = chat_graph(memory, ("reply", Echo()))
    for q in ("q1", "q2", "q3"):
        run(graph, {"messages": [HumanMessage(q)]}, ALICE, mode)
    run(graph, {"messages": [HumanMessage("q2-alt")]},
        snapshot_ending_with(graph, ALICE, "answer 1").config, mode)  # fmt: skip
    (branch,) = memory.list_branches("t1")
    nested = memory.branch_thread(branch.id, after_message_id=memory.get_messages(
        thread_id=branch.id)[1].id, resource_id="alice")  # fmt: skip
    other = memory.create_thread(thread_id="t9", resource_id="alice")
    memory.save_messages([HumanMessage("keep me")], thread_id=other.id, resource_id="alice")
    assert memory.delete_thread("t1", resource_id="alice")
    for gone in ("t1", branch.id, nested.id):
        assert memory.get_thread(gone) is None
    assert [t.id for t in memory.list_threads(resource_id="alice")] == ["t9"]


def test_update_state_on_an_old_checkpoint_forks_too(storage: MemoryStorage) -> None:
    memory = Memory(storage=storage)
    graph = chat_graph(memory, ("reply", Echo()))
    for q in ("q1", "q2"):
        graph.invoke({"messages": [HumanMessage(q)]}, ALICE)
    old = snapshot_ending_with(graph, ALICE, "answer 1")
    graph.update_state(old.config, {"messages": [HumanMessage("a note")]}, as_node="reply")
    assert contents(graph.get_state(ALICE).values["messages"]) == ["q1", "answer 1", "a note"]
    assert stored(memory) == ["q1", "answer 1", "a note"]
    assert [stored(memory, b.id) for b in memory.list_branches("t1")] == [["q2", "answer 2"]]


# -- humans in the loop ---------------------------------------------------------------------------
@tool
def send_email(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


def tool_graph(memory: Memory, model: Any) -> Any:
    from langgraph.prebuilt import ToolNode

    def agent(state: dict) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: dict) -> str:
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else END

    builder = StateGraph(schema())
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([send_email]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=memory.checkpointer(InMemorySaver()),
                           interrupt_before=["tools"])  # fmt: skip


def test_editing_a_tool_call_before_it_runs_updates_the_stored_message(
    storage: MemoryStorage,
) -> None:
    memory = Memory(storage=storage)
    call = AIMessage("", id="call-1", tool_calls=[{"name": "send_email", "args": {"to": "bob@x"},
                                                   "id": "c1"}])  # fmt: skip
    model = strict_model(call, AIMessage("Done."))
    graph = tool_graph(memory, model.bind_tools([send_email]))
    graph.invoke({"messages": [HumanMessage("email bob")]}, ALICE)
    assert graph.get_state(ALICE).next == ("tools",)
    edited = call.model_copy(update={"tool_calls": [{"name": "send_email", "args": {"to": "carol@x"},
                                                     "id": "c1", "type": "tool_call"}]})  # fmt: skip
    graph.update_state(ALICE, {"messages": [edited]})
    (kept,) = [m for m in memory.get_messages(thread_id="t1") if m.id == "call-1"]
    assert kept.tool_calls[0]["args"] == {"to": "carol@x"}  # updated in place, not added
    graph.invoke(None, ALICE)
    messages = memory.get_messages(thread_id="t1")
    assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage", "ToolMessage",
                                                    "AIMessage"]  # fmt: skip
    assert messages[2].content == "sent to carol@x"


def test_interrupt_and_resume_store_the_turn_once(storage: MemoryStorage, mode: str) -> None:
    def approve(state: dict) -> dict:
        answer = interrupt("send it?")
        return {"messages": [AIMessage(f"approved: {answer}", id=f"ai-{uuid.uuid4()}")]}

    memory = Memory(storage=storage)
    graph = chat_graph(memory, ("reply", Echo()), ("approve", approve))
    run(graph, {"messages": [HumanMessage("draft it")]}, ALICE, mode)
    assert stored(memory) == ["draft it", "answer 1"]
    run(graph, Command(resume="yes"), ALICE, mode)
    assert stored(memory) == ["draft it", "answer 1", "approved: yes"]


# -- carried messages, subgraphs, fan-out ---------------------------------------------------------
def test_carried_messages_and_reused_ids_are_stored_once_per_thread(
    storage: MemoryStorage, mode: str
) -> None:
    memory = Memory(storage=storage)

    def fixed_reply(state: dict) -> dict:  # a model that reuses its message id
        return {"messages": [AIMessage("same reply", id="fixed-id")]}

    graph = chat_graph(memory, ("reply", fixed_reply))
    run(graph, {"messages": [HumanMessage("hello", id="h-1")]}, ALICE, mode)
    carried = graph.get_state(ALICE).values["messages"]
    other = {"configurable": {"thread_id": "t2", "resource_id": "alice"}}
    run(graph, {"messages": [*carried, HumanMessage("and now?")]}, other, mode)
    # (the reply reuses its id: LangGraph's reducer replaces the carried one in the state)
    assert (
        stored(memory, "t2")
        == contents(graph.get_state(other).values["messages"])
        == ["hello", "same reply", "and now?"]
    )
    fresh = {"configurable": {"thread_id": "t3", "resource_id": "alice"}}
    run(graph, {"messages": [HumanMessage("hi")]}, fresh, mode)  # a reply id stored elsewhere
    assert stored(memory, "t3") == ["hi", "same reply"]
    assert stored(memory, "t1") == ["hello", "same reply"]  # untouched
    held = [m.id for t in ("t1", "t2", "t3") for m in memory.get_messages(thread_id=t)]
    assert len(set(held)) == len(held)  # once each: copies under ids derived from their thread
    run(graph, {"messages": [HumanMessage("again")]}, fresh, mode)
    assert stored(memory, "t3") == contents(graph.get_state(fresh).values["messages"])


def test_send_fan_out_and_subgraphs_store_each_message_once(storage: MemoryStorage) -> None:
    sub = StateGraph(schema())
    sub.add_node("inner", lambda s: {"messages": [AIMessage(f"inner saw {len(s['messages'])}")]})
    sub.add_edge(START, "inner")
    subgraph = sub.compile()

    def worker(state: dict) -> dict:
        return {"messages": [AIMessage(f"about {state['topic']}", id=f"w-{state['topic']}")]}

    builder = StateGraph(schema("fan"))
    builder.add_node("plan", lambda s: {"topics": ["a", "b", "c"]})
    builder.add_node("worker", worker)
    builder.add_node("sub", subgraph)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges(
        "plan", lambda s: [Send("worker", {"topic": t}) for t in s["topics"]]
    )
    builder.add_edge("worker", "sub")
    builder.add_edge("sub", END)
    memory = Memory(storage=storage)
    graph = builder.compile(checkpointer=memory.checkpointer(InMemorySaver()))
    graph.invoke({"messages": [HumanMessage("research")], "topics": []}, ALICE)
    kept = stored(memory)
    assert kept[0] == "research" and sorted(kept[1:4]) == ["about a", "about b", "about c"]
    assert kept[4:] == ["inner saw 4"] and len(kept) == 5


def test_parallel_tool_calls_are_stored_once(storage: MemoryStorage, mode: str) -> None:
    from langchain.agents import create_agent

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    calls = AIMessage("", tool_calls=[
        {"name": "weather", "args": {"city": c}, "id": f"c-{c}"} for c in ("Lisbon", "Porto")
    ])  # fmt: skip
    memory = Memory(storage=storage)
    agent = create_agent(strict_model(calls, AIMessage("Both sunny.")), [weather],
                         checkpointer=memory.checkpointer(), state_schema=schema("agent"))  # fmt: skip
    run(agent, {"messages": [HumanMessage("weather?")]}, ALICE, mode)
    messages = memory.get_messages(thread_id="t1")
    assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage", "ToolMessage",
                                                    "ToolMessage", "AIMessage"]  # fmt: skip
    assert sorted(m.content for m in messages if isinstance(m, ToolMessage)) == [
        "sunny in Lisbon",
        "sunny in Porto",
    ]


# -- a failing store never aborts a run -----------------------------------------------------------
def test_a_storage_failure_while_mirroring_warns_and_the_next_checkpoint_catches_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    memory = Memory(storage=SQLiteStorage(path, busy_timeout=0.2))
    graph = chat_graph(memory, ("reply", Echo()))
    graph.invoke({"messages": [HumanMessage("q1")]}, ALICE)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    with caplog.at_level(logging.WARNING):
        out = graph.invoke({"messages": [HumanMessage("q2")]}, ALICE)  # the run completes
    assert contents(out["messages"]) == ["q1", "answer 1", "q2", "answer 2"]
    assert "memory could not mirror a checkpoint" in caplog.text
    blocker.execute("ROLLBACK")
    blocker.close()
    graph.invoke({"messages": [HumanMessage("q3")]}, ALICE)
    assert stored(memory) == ["q1", "answer 1", "q2", "answer 2", "q3", "answer 3"]


def test_system_messages_in_the_state_are_kept_in_order(storage: MemoryStorage) -> None:
    memory = Memory(storage=storage)
    graph = chat_graph(memory, ("reply", Echo()))
    graph.invoke({"messages": [SystemMessage("be brief"), HumanMessage("q1")]}, ALICE)
    assert stored(memory) == ["be brief", "q1", "answer 1"]


# -- any sequence of them -------------------------------------------------------------------------
OPS = st.lists(
    st.tuples(
        st.sampled_from(["turn", "turn", "compact", "remove", "edit", "fork", "replay"]),
        st.integers(min_value=0, max_value=9),
    ),
    min_size=1,
    max_size=10,
)


def branch_conversation(graph: Any, config: dict) -> list[tuple[str, str]]:
    """The current branch's conversation, from the graph itself: every message that stood in
    a state along the head's lineage, in order of first appearance, with its latest content;
    summaries are not turns."""
    lineage = []
    snapshot = graph.get_state(config)
    while snapshot is not None and snapshot.config:  # the head's parent chain, not the thread's
        lineage.insert(0, snapshot)  # whole history (other branches' checkpoints are there too)
        parent = snapshot.parent_config
        snapshot = graph.get_state(parent) if parent else None
    order: list[str] = []
    content: dict[str, str] = {}
    for snapshot in lineage:
        for message in snapshot.values.get("messages") or []:
            if message.id.startswith("summary-"):
                continue
            if message.id not in content:
                order.append(message.id)
            content[message.id] = str(message.content)
    return [(i, content[i]) for i in order]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=OPS)
@example(  # an edit, compacted out of the state, then a fork away and a fork back to it: the
    # fork back brings the edited content its lineage holds (found by this test, 2026-11-29)
    ops=[("turn", 0), ("turn", 0), ("edit", 0), ("turn", 0), ("turn", 0), ("compact", 0),
         ("fork", 8), ("fork", 0)],
)  # fmt: skip
def test_any_sequence_of_turns_compactions_removals_edits_forks_and_replays(ops) -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"))
    produced: list[str] = []

    def reply(state: dict) -> dict:
        message = AIMessage(f"answer {len(produced)}", id=f"ai-{len(produced)}")
        produced.append(message.id)
        return {"messages": [message]}

    graph = chat_graph(memory, ("reply", reply))
    sent: list[str] = []
    for n, (op, pick) in enumerate(ops):
        state = graph.get_state(ALICE).values.get("messages") or []
        lineage = list(graph.get_state_history(ALICE))
        if op == "turn" or not state:
            sent.append(f"h-{n}")
            graph.invoke({"messages": [HumanMessage(f"q{n}", id=f"h-{n}")]}, ALICE)
        elif op == "compact" and len(state) > 2:
            summary = HumanMessage(f"summary {n}", id=f"summary-{n}")
            graph.update_state(ALICE, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary,
                                                    *state[-2:]]}, as_node="reply")  # fmt: skip
        elif op == "remove" and len(state) > 1:
            doomed = state[: 1 + pick % (len(state) - 1)]
            graph.update_state(ALICE, {"messages": [RemoveMessage(id=m.id) for m in doomed]},
                               as_node="reply")  # fmt: skip
        elif op == "edit" and any(isinstance(m, AIMessage) for m in state):
            last = [m for m in state if isinstance(m, AIMessage)][-1]
            edited = last.model_copy(update={"content": f"{last.content} (edited {n})"})
            graph.update_state(ALICE, {"messages": [edited]}, as_node="reply")
        elif op == "fork" and (done := [s for s in lineage[1:] if not s.next and s.values]):
            sent.append(f"h-{n}")
            target = done[pick % len(done)].config
            graph.invoke({"messages": [HumanMessage(f"q{n} (fork)", id=f"h-{n}")]}, target)
        elif op == "replay" and (pending := [s for s in lineage if s.next == ("reply",)]):
            graph.invoke(None, pending[pick % len(pending)].config)
        # the thread's history is the current branch's conversation, in order
        kept = [(m.id, str(m.content)) for m in memory.get_messages(thread_id="t1")]
        assert kept == branch_conversation(graph, ALICE), ops[: n + 1]
        # every message ever sent or produced is stored exactly once in the resource
        everywhere = [
            m.id for t in memory.list_threads(resource_id="alice")
            for m in memory.get_messages(thread_id=t.id)
        ]  # fmt: skip
        assert sorted(everywhere) == sorted(sent + produced), ops[: n + 1]


def test_with_mirror_deletes_a_fork_leaves_memory_equal_to_the_fork_s_state(
    storage: MemoryStorage, mode: str
) -> None:
    """Found by the graph state machine (issue 83): a message removed with mirror_deletes,
    brought back into the state by a fork from before the removal, then abandoned by a fork
    from after it, stayed in memory though no state held it."""
    memory = Memory(storage=storage)
    graph = chat_graph(memory, ("reply", Echo()), mirror_deletes=True)
    run(graph, {"messages": [HumanMessage("q1")]}, ALICE, mode)
    graph.update_state(ALICE, {"messages": [HumanMessage("a note")]})
    answer = graph.get_state(ALICE).values["messages"][1]
    graph.update_state(ALICE, {"messages": [RemoveMessage(id=answer.id)]})
    assert stored(memory) == ["q1", "a note"]
    before = snapshot_ending_with(graph, ALICE, "answer 1")
    run(graph, {"messages": [HumanMessage("q2")]}, before.config, mode)  # answer 1 is back
    assert stored(memory) == contents(graph.get_state(ALICE).values["messages"])
    after = snapshot_ending_with(graph, ALICE, "a note")
    run(graph, {"messages": [HumanMessage("q3")]}, after.config, mode)
    state = contents(graph.get_state(ALICE).values["messages"])
    assert state == ["q1", "a note", "q3", "answer 3"]
    assert stored(memory) == state
