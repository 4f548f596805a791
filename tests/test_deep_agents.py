"""LangChain's deep agents (``deepagents.create_deep_agent``) on memory, in each shape.

Deep agents keep ``messages`` in LangGraph's ``DeltaChannel`` (a snapshot every 50 updates,
deltas in between), run their own summarization middleware and keep files in a backend.
Memory is tested the way a user wires it: ``checkpointer=memory.checkpointer()``,
``middleware=[memory.middleware()]`` beside deepagents' own stack, and ``memory.store()``
behind deepagents' ``StoreBackend`` for a ``/memories/`` folder per user.
"""

from __future__ import annotations

import asyncio
from typing import Any

import deepagents
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_mastra_memory import Memory, ResourceMismatchError, SQLiteStorage
from langchain_mastra_memory.testing import ProviderStrictChatModel, strict_model

SECRET = "Zanzibar-7731"
FACT = f"My gym locker code is {SECRET}."


def cfg(thread: str, user: str) -> dict:
    return {"configurable": {"thread_id": thread, "user_id": user}}


def replies(n: int, start: int = 0) -> list[AIMessage]:
    return [AIMessage(f"Noted, reply {i}.") for i in range(start, start + n)]


def agent_on(model: Any, **kwargs: Any) -> Any:
    return deepagents.create_deep_agent(model, tools=[], system_prompt="Be brief.", **kwargs)


def text(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_deep_agent_through_the_checkpointer_stores_each_message_once(
    tmp_path: Any, mode: str
) -> None:
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "memory.db"), options={"semantic_recall": True}
    )
    agent = agent_on(strict_model(*replies(60)), checkpointer=memory.checkpointer())
    questions = [FACT if i == 7 else f"Question {i} about the garden." for i in range(60)]
    for question in questions:
        turn = {"messages": [HumanMessage(question)]}
        if mode == "sync":
            agent.invoke(turn, cfg("week-1", "alice"))
        else:
            asyncio.run(agent.ainvoke(turn, cfg("week-1", "alice")))
    kept = memory.get_messages(thread_id="week-1")
    assert len(kept) == 120  # 60 turns, crossing the channel's snapshot (every 50 updates)
    assert len({m.id for m in kept}) == 120
    state = agent.get_state(cfg("week-1", "alice")).values["messages"]
    assert [m.id for m in kept] == [m.id for m in state]  # in order, as the graph holds them
    assert [str(m.content) for m in kept[::2]] == questions
    memory.flush(60)

    # the user's next thread recalls the first one; another user's sees nothing of it
    seen = strict_model(*replies(2, 100))
    reader = agent_on(seen, checkpointer=memory.checkpointer(), middleware=[memory.middleware()])
    reader.invoke(
        {"messages": [HumanMessage("What is my gym locker code?")]}, cfg("week-2", "alice")
    )
    assert SECRET in text(seen.seen[-1])
    reader.invoke({"messages": [HumanMessage("What is my gym locker code?")]}, cfg("b-1", "bob"))
    assert SECRET not in text(seen.seen[-1])
    assert [t.id for t in memory.list_threads(resource_id="bob")] == ["b-1"]
    assert len(memory.get_messages(thread_id="week-2")) == 2  # once, with both shapes at work
    with pytest.raises(ResourceMismatchError):
        reader.get_state(cfg("week-1", "bob"))


def test_a_deep_agent_resumed_by_another_process_mid_snapshot(tmp_path: Any) -> None:
    """A second `Memory` on the same file (another process's view, no cache) continues a
    thread whose latest checkpoint holds only deltas: nothing is lost or stored twice."""
    path = tmp_path / "memory.db"
    first = Memory(storage=SQLiteStorage(path))
    agent = agent_on(strict_model(*replies(31)), checkpointer=first.checkpointer())
    for i in range(30):  # 60 updates: past the snapshot at 50, 10 deltas after it
        agent.invoke({"messages": [HumanMessage(f"q{i}")]}, cfg("t", "alice"))
    second = Memory(storage=SQLiteStorage(path))
    other = agent_on(strict_model(*replies(5, 30)), checkpointer=second.checkpointer())
    for i in range(30, 35):
        other.invoke({"messages": [HumanMessage(f"q{i}")]}, cfg("t", "alice"))
    agent.invoke({"messages": [HumanMessage("q35")]}, cfg("t", "alice"))  # the first again
    kept = second.get_messages(thread_id="t")
    assert [str(m.content) for m in kept[::2]] == [f"q{i}" for i in range(36)]
    assert len(kept) == 72 and len({m.id for m in kept}) == 72


def summarizing_model(n: int) -> ProviderStrictChatModel:
    """A scripted model with a small context window, so deepagents' summarization (85% of
    it) runs within a few turns; it summarizes too (deepagents asks the agent's model)."""
    model = strict_model(*[AIMessage(f"Reply {i}: " + "fine " * 30) for i in range(n)])
    model.profile = {"max_input_tokens": 4_000}
    return model


def test_the_middleware_beside_deepagents_own_keeps_its_summary_and_adds_memory(
    tmp_path: Any,
) -> None:
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "memory.db"),
        # the 4,000-token profile leaves memory ~10% of it beside deepagents' tools and
        # conversation (summarized at 85%, bounded at 95%): room for two recalled messages
        options={
            "semantic_recall": {"top_k": 2, "message_range": 0},
            "working_memory": {"enabled": True},
        },
    )
    memory.update_working_memory("# User\n- Name: Alice\n- City: Lisbon", resource_id="alice")
    memory.create_thread(thread_id="old", resource_id="alice")
    memory.save_messages([HumanMessage(FACT), AIMessage("Noted.")], thread_id="old",
                         resource_id="alice")  # fmt: skip
    memory.flush(60)
    model = summarizing_model(40)
    agent = agent_on(model, middleware=[memory.middleware()], checkpointer=memory.checkpointer())
    for i in range(12):
        agent.invoke({"messages": [HumanMessage(f"Tell me about topic {i}. " + "more " * 60)]},
                     cfg("t", "alice"))  # fmt: skip
    state = agent.get_state(cfg("t", "alice")).values
    assert state.get("_summarization_event"), "deepagents' summarization never ran"
    last = model.seen[-1]
    assert "Lisbon" in text(last)  # working memory reached the model
    summary = state["_summarization_event"]["summary_message"]
    # deepagents' summary stands first in the history, as deepagents put it: memory's history
    # did not bring back what it replaced (older turns come only as recalled messages)
    assert last[1].content == summary.content
    agent.invoke({"messages": [HumanMessage("What is my gym locker code?")]}, cfg("t", "alice"))
    assert SECRET in text(model.seen[-1])  # recall from another thread reached the model
    kept = [str(m.content) for m in memory.get_messages(thread_id="t")]
    assert [k for k in kept if k.startswith("Tell me")] == [
        f"Tell me about topic {i}. " + "more " * 60 for i in range(12)
    ]  # every turn once, summary or not
    assert not any("summary" in k.lower() for k in kept)


def test_memory_store_behind_deepagents_store_backend_keeps_files_per_user(tmp_path: Any) -> None:
    from deepagents.backends import CompositeBackend, StateBackend, StoreBackend
    from langchain_core.messages import ToolMessage

    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"))
    store = memory.store()
    backend = CompositeBackend(
        default=StateBackend(),
        routes={"/memories/": StoreBackend(
            namespace=lambda rt: (rt.context["user_id"], "filesystem"))},
    )  # fmt: skip

    def writes(path: str, content: str, call_id: str) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": "write_file", "id": call_id,
                                          "args": {"file_path": path, "content": content}}])  # fmt: skip

    def reads(path: str, call_id: str) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": "read_file", "id": call_id,
                                          "args": {"file_path": path}}])  # fmt: skip

    model = strict_model(
        writes("/memories/profile.md", f"locker: {SECRET}", "w1"), AIMessage("Saved."),
        reads("/memories/profile.md", "r1"), AIMessage("Here it is."),
        reads("/memories/profile.md", "r2"), AIMessage("Nothing there."),
    )  # fmt: skip
    agent = agent_on(model, backend=backend, store=store, checkpointer=memory.checkpointer())
    agent.invoke({"messages": [HumanMessage("remember my locker")]}, cfg("a1", "alice"),
                 context={"user_id": "alice"})  # fmt: skip
    out = agent.invoke({"messages": [HumanMessage("what is my locker?")]}, cfg("a2", "alice"),
                       context={"user_id": "alice"})  # another thread, same user  # fmt: skip
    read = [m for m in out["messages"] if isinstance(m, ToolMessage)][-1]
    assert SECRET in str(read.content)
    out = agent.invoke({"messages": [HumanMessage("what is my locker?")]}, cfg("b1", "bob"),
                       context={"user_id": "bob"})  # fmt: skip
    read = [m for m in out["messages"] if isinstance(m, ToolMessage)][-1]
    assert SECRET not in str(read.content)
    items = store.search(("alice", "filesystem"))
    assert [i.key for i in items] == ["/profile.md"] and SECRET in repr(items[0].value)
    assert store.search(("bob", "filesystem")) == []


@pytest.mark.parametrize("shape", ["checkpointer", "middleware", "both"])
def test_inputs_langgraph_gives_no_id_are_stored_once(tmp_path: Any, shape: str) -> None:
    """``("user", text)`` tuples reach deepagents' reducer unnamed, and come back without an
    id at every read of the channel: each shape still stores each message once, and with both
    shapes at work they agree on its id."""
    memory = Memory(storage=SQLiteStorage(tmp_path / "memory.db"))
    kwargs: dict[str, Any] = {}
    if shape in ("checkpointer", "both"):
        kwargs["checkpointer"] = memory.checkpointer()
    if shape in ("middleware", "both"):
        kwargs["middleware"] = [memory.middleware()]
    if "checkpointer" not in kwargs:
        from langgraph.checkpoint.memory import InMemorySaver

        kwargs["checkpointer"] = InMemorySaver()
    agent = agent_on(strict_model(*replies(30)), **kwargs)
    for i in range(30):  # past the snapshot at 50 updates
        agent.invoke({"messages": [("user", f"q{i}")]}, cfg("t", "alice"))
    kept = [str(m.content) for m in memory.get_messages(thread_id="t")]
    assert kept == [m for i in range(30) for m in (f"q{i}", f"Noted, reply {i}.")]
