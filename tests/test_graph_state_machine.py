"""Graph shapes against memory, driven by a state machine (issue 83): memory equals the state.

A LangGraph graph on ``memory.checkpointer()`` (and a LangChain agent with
``memory.middleware()`` on it too) is driven by the patterns LangGraph and LangChain document:
turns (sync and async), ``update_state`` adding a message and editing one by id,
``RemoveMessage``, time travel (a new turn from an earlier checkpoint of
``get_state_history``), ``interrupt()`` and ``Command(resume=...)``, and a sub-agent whose inner
turns run inside a node. Two owners each have a thread. After every step:

- the thread's stored messages are the graph's state: the same ids in the same order, each
  with the content the state holds (with ``mirror_deletes=True``; without it, the state is a
  subsequence of what is stored and only removed messages are extra);
- nothing is lost: every message ever in a state and not removed is in the thread or in one
  of its branches (a fork moves the abandoned continuation to a branch);
- a sub-agent's inner messages are never stored, and the other owner's thread is refused.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from langchain_mastra_memory import Memory, ResourceMismatchError, SQLiteStorage
from langchain_mastra_memory.testing import strict_model

OWNERS = {"alice": "t-alice", "bob": "t-bob"}


def config(owner: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": OWNERS[owner], "resource_id": owner}}


class GraphMachine(RuleBasedStateMachine):
    """One graph (or agent) over one `Memory`, two owners' threads, against the graph's own
    state and a record of what was ever said."""

    shape = "graph"  # or "agent": `create_agent` with memory's middleware and checkpointer
    mirror_deletes = True

    def __init__(self) -> None:
        super().__init__()
        self.memory = Memory(storage=SQLiteStorage(":memory:"))
        self.numbers = itertools.count()
        self.graph = self.build()
        self.said: dict[str, set[str]] = {owner: set() for owner in OWNERS}  # ids ever in state
        self.removed: dict[str, set[str]] = {owner: set() for owner in OWNERS}

    def teardown(self) -> None:
        self.memory.close(30)

    # -- the graph -------------------------------------------------------------------------
    def build(self) -> Any:
        saver = self.memory.checkpointer(mirror_deletes=self.mirror_deletes)
        if self.shape == "agent":
            from langchain.agents import create_agent

            model = strict_model(*[AIMessage(f"agent answer {i}") for i in range(200)])
            return create_agent(model, [], middleware=[self.memory.middleware()],
                                checkpointer=saver)  # fmt: skip
        inner = StateGraph(MessagesState)  # a sub-agent: its own conversation, inside a node
        inner.add_node("think", lambda s: {"messages": [AIMessage("inner: thinking")]})
        inner.add_edge(START, "think")
        sub_agent = inner.compile()

        def reply(state: dict) -> dict:
            return {"messages": [AIMessage(f"answer {next(self.numbers)}")]}

        def research(state: dict) -> dict:
            found = sub_agent.invoke({"messages": [HumanMessage("inner: look it up")]})
            return {"messages": [AIMessage(f"research done in {len(found['messages'])} steps")]}

        def approve(state: dict) -> dict:
            answer = interrupt("approve?")
            return {"messages": [AIMessage(f"approved: {answer}")]}

        def route(state: dict) -> str:
            asked = next((m.content for m in reversed(state["messages"]) if m.type == "human"), "")
            return "approve" if "confirm" in asked else "research" if "research" in asked else END

        builder = StateGraph(MessagesState)
        builder.add_node("reply", reply)
        builder.add_node("research", research)
        builder.add_node("approve", approve)
        builder.add_edge(START, "reply")
        builder.add_conditional_edges("reply", route, ["approve", "research", END])
        builder.add_edge("research", END)
        builder.add_edge("approve", END)
        return builder.compile(checkpointer=saver)

    def state(self, owner: str) -> list[BaseMessage]:
        return list(self.graph.get_state(config(owner)).values.get("messages") or [])

    def interrupted(self, owner: str) -> bool:
        return bool(self.graph.get_state(config(owner)).next)

    def run(self, value: Any, cfg: dict[str, Any], asynchronous: bool) -> None:
        if asynchronous:
            asyncio.run(self.graph.ainvoke(value, cfg))
        else:
            self.graph.invoke(value, cfg)

    def note(self, owner: str) -> None:
        self.said[owner] |= {m.id for m in self.state(owner) if m.id is not None}

    @initialize()
    def start(self) -> None:
        for owner in OWNERS:
            self.graph.invoke({"messages": [HumanMessage(f"hello from {owner}")]}, config(owner))
            self.note(owner)

    def idle(self, owner: str) -> bool:
        return not self.interrupted(owner)

    # -- steps -----------------------------------------------------------------------------
    @rule(owner=st.sampled_from(sorted(OWNERS)), asynchronous=st.booleans(),
          kind=st.sampled_from(["plain", "research", "confirm"]))  # fmt: skip
    def turn(self, owner: str, asynchronous: bool, kind: str) -> None:
        if self.interrupted(owner):
            return  # (`resume` answers it first)
        if self.shape == "agent" and kind != "plain":
            kind = "plain"  # (the agent has no sub-agent or approval node)
        text = f"{kind} question {next(self.numbers)}" if kind != "confirm" else (
            f"please confirm order {next(self.numbers)}")  # fmt: skip
        self.run({"messages": [HumanMessage(text)]}, config(owner), asynchronous)
        self.note(owner)

    @rule(owner=st.sampled_from(sorted(OWNERS)), asynchronous=st.booleans(),
          answer=st.sampled_from(["yes", "no"]))  # fmt: skip
    def resume(self, owner: str, asynchronous: bool, answer: str) -> None:
        if not self.interrupted(owner):
            return
        self.run(Command(resume=answer), config(owner), asynchronous)
        assert self.state(owner)[-1].content == f"approved: {answer}"
        self.note(owner)

    @rule(owner=st.sampled_from(sorted(OWNERS)))
    def add_by_update_state(self, owner: str) -> None:
        if self.interrupted(owner):
            return
        self.graph.update_state(config(owner), {"messages": [HumanMessage(
            f"a note {next(self.numbers)}")]})  # fmt: skip
        self.note(owner)

    @rule(owner=st.sampled_from(sorted(OWNERS)), data=st.data())
    def edit_by_update_state(self, owner: str, data: st.DataObject) -> None:
        messages = self.state(owner)
        if self.interrupted(owner) or not messages:
            return
        target = data.draw(st.sampled_from(messages))
        edited = target.model_copy(update={"content": f"edited {next(self.numbers)}"})
        self.graph.update_state(config(owner), {"messages": [edited]})
        assert any(m.id == target.id and m.content == edited.content for m in self.state(owner))

    @rule(owner=st.sampled_from(sorted(OWNERS)), data=st.data())
    def remove_message(self, owner: str, data: st.DataObject) -> None:
        messages = self.state(owner)
        if self.interrupted(owner) or len(messages) < 2:
            return
        target = data.draw(st.sampled_from(messages))
        self.graph.update_state(config(owner), {"messages": [RemoveMessage(id=target.id)]})
        assert target.id not in {m.id for m in self.state(owner)}
        self.removed[owner].add(target.id)

    @rule(owner=st.sampled_from(sorted(OWNERS)), data=st.data(), asynchronous=st.booleans())
    def time_travel(self, owner: str, data: st.DataObject, asynchronous: bool) -> None:
        """A new turn from an earlier checkpoint that ended a turn (LangGraph's fork)."""
        if self.interrupted(owner):
            return
        history = [s for s in self.graph.get_state_history(config(owner))
                   if not s.next and s.values.get("messages")]  # fmt: skip
        if len(history) < 2:
            return
        fork = data.draw(st.sampled_from(history[1:]))
        text = f"plain question {next(self.numbers)} (a fork)"
        self.run({"messages": [HumanMessage(text)]}, fork.config, asynchronous)
        self.note(owner)

    # -- what must hold --------------------------------------------------------------------
    @invariant()
    def memory_equals_the_state(self) -> None:
        for owner, thread in OWNERS.items():
            state = self.state(owner)
            stored = self.memory.get_messages(thread_id=thread, resource_id=owner)
            content = {m.id: m.content for m in stored}
            # (a message removed with mirror_deletes leaves memory; a fork from a checkpoint
            # before the removal shows it in the state again, and memory holds it again only
            # when it falls in the fork's new suffix: then it is not compared)
            gone = self.removed[owner] if self.mirror_deletes else set()
            shown = [m for m in state if m.id not in gone]
            assert all(content.get(m.id) == m.content for m in shown), "an edit was not kept"
            if self.mirror_deletes:
                assert [m.id for m in stored if m.id not in gone] == [m.id for m in shown]
                assert {m.id for m in stored} <= {m.id for m in state}  # (never more)
            else:
                kept = iter([m.id for m in stored])
                assert all(m.id in kept for m in state)  # (in order: a subsequence)
                extra = {m.id for m in stored} - {m.id for m in state}
                assert extra <= self.removed[owner] | self.branched_away(owner)

    def branched_away(self, owner: str) -> set[str]:
        return {m.id for t in self.threads(owner)[1:] for m in self.stored(owner, t)
                if m.id is not None}  # fmt: skip

    def threads(self, owner: str) -> list[str]:
        """The owner's thread, then its branches (and theirs)."""
        found, queue = [OWNERS[owner]], [OWNERS[owner]]
        while queue:
            for branch in self.memory.list_branches(queue.pop(), resource_id=owner):
                found.append(branch.id)
                queue.append(branch.id)
        return found

    def stored(self, owner: str, thread: str) -> list[BaseMessage]:
        return self.memory.get_messages(thread_id=thread, resource_id=owner)

    @invariant()
    def nothing_is_lost_and_nothing_inner_is_kept(self) -> None:
        for owner in OWNERS:
            everywhere = [m for t in self.threads(owner) for m in self.stored(owner, t)]
            ids = {m.id for m in everywhere}
            lost = self.said[owner] - self.removed[owner] - ids
            if not self.mirror_deletes:
                lost -= self.removed[owner]
            assert lost == set(), f"{owner} lost {lost}"
            assert not any(str(m.content).startswith("inner:") for m in everywhere)
            other = next(o for o in OWNERS if o != owner)
            with pytest.raises(ResourceMismatchError):
                self.memory.get_messages(thread_id=OWNERS[owner], resource_id=other)


BOUNDED = settings(max_examples=int(os.environ.get("LMM_STATEFUL_EXAMPLES", "10")),
                   stateful_step_count=15, deadline=None,
                   suppress_health_check=list(HealthCheck))  # fmt: skip


@pytest.mark.parametrize("mirror_deletes", [True, False])
def test_a_graph_on_the_checkpointer_keeps_memory_equal_to_its_state(mirror_deletes: bool) -> None:
    machine = type("Graph", (GraphMachine,), {"mirror_deletes": mirror_deletes})
    run_state_machine_as_test(machine, settings=BOUNDED)


def test_an_agent_with_the_middleware_keeps_memory_equal_to_its_state() -> None:
    machine = type("Agent", (GraphMachine,), {"shape": "agent"})
    run_state_machine_as_test(machine, settings=BOUNDED)
