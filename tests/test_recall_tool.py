"""`memory.recall_tool()`: the model searches its own past, in real agent loops (a scripted
model that checks its input as providers do)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from langchain_mastra_memory import ConfigurationError, Memory, MemoryStorage
from langchain_mastra_memory.testing import strict_model

SECRET = "kq7731"


def cfg(thread: str, resource: str) -> dict:
    return {"configurable": {"thread_id": thread, "user_id": resource}}


def search(args: dict, call_id: str = "s1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "search_memory", "args": args, "id": call_id}])


@pytest.fixture
def memory(storage: MemoryStorage) -> Memory:
    """Hybrid recall (the real MiniLM embedder): alice's past, and bob's secret boat."""
    memory = Memory(storage=storage, options={"semantic_recall": True})
    memory.create_thread(thread_id="trip", resource_id="alice", title="Sailing trip")
    memory.save_messages(
        [HumanMessage("Our sailboat is named Albatross.", id="boat"),
         AIMessage("Albatross is a lovely name for a boat.", id="reply")],
        thread_id="trip", resource_id="alice",
        created_at=[datetime(2026, 2, 3, 10, tzinfo=timezone.utc)] * 2,
    )  # fmt: skip
    for n in range(7):
        memory.create_thread(thread_id=f"chat{n}", resource_id="alice", title=f"Chat {n}")
        memory.save_messages(
            [HumanMessage(f"Weekend plan {n}: sailing near the harbour.", id=f"plan{n}")],
            thread_id=f"chat{n}", resource_id="alice",
        )  # fmt: skip
    memory.create_thread(thread_id="bobs", resource_id="bob", title="Bob's boat")
    memory.save_messages(
        [HumanMessage(f"My sailboat is named Albatross too, code {SECRET}.", id="bob1")],
        thread_id="bobs", resource_id="bob",
    )  # fmt: skip
    memory.flush(60)
    return memory


def agent_for(memory: Memory, model):
    from langchain.agents import create_agent

    return create_agent(model, [memory.recall_tool()])


def tool_reply(result: dict) -> ToolMessage:
    replies = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(replies) == 1
    return replies[0]


def test_the_agent_finds_its_past_with_thread_and_date(memory: Memory) -> None:
    model = strict_model(search({"query": "what is our sailboat called"}), AIMessage("Albatross."))
    out = agent_for(memory, model).invoke(
        {"messages": [HumanMessage("What's our boat called again?")]}, cfg("new", "alice")
    )
    reply = tool_reply(out)
    assert reply.status == "success"
    assert "Our sailboat is named Albatross." in reply.content
    assert '"Sailing trip" (thread trip)' in reply.content and "2026-02-03 10:00" in reply.content
    assert SECRET not in reply.content and "bobs" not in reply.content
    assert "Albatross" in model.seen[-1][-1].content  # the model read the result


async def test_the_agent_pages_and_filters_async(memory: Memory) -> None:
    dated = {"query": "sailboat", "thread_id": "trip", "since": "2026-02-01",
             "until": "2026-02-04T00:00:00Z"}  # fmt: skip
    calls = [
        search({"query": "weekend sailing plan", "mode": "keyword"}, "a"),
        search({"query": "weekend sailing plan", "mode": "keyword", "page": 1}, "b"),
        search(dated, "c"),
    ]
    model = strict_model(*calls, AIMessage("Done."))
    out = await agent_for(memory, model).ainvoke(
        {"messages": [HumanMessage("Look around")]}, cfg("new", "alice")
    )
    first, second, third = [m.content for m in out["messages"] if isinstance(m, ToolMessage)]
    assert "7 messages match" in first and "More results: call again with page=1." in first
    assert first.count("Weekend plan") == 5 and second.count("Weekend plan") == 2
    assert "More results" not in second
    assert "Our sailboat is named Albatross." in third and "Weekend" not in third


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"query": ""}, "query"),
        ({"query": "boat", "page": -1}, "page"),
        ({"query": "boat", "mode": "psychic"}, "mode"),
        ({"query": "boat", "since": "last tuesday"}, "since"),
        ({"query": "boat", "colour": "red"}, "colour"),
        ({}, "query"),
    ],
)
def test_bad_arguments_come_back_to_the_model(memory: Memory, args: dict, expected: str) -> None:
    model = strict_model(search(args), AIMessage("Sorry."))
    out = agent_for(memory, model).invoke({"messages": [HumanMessage("?")]}, cfg("new", "alice"))
    reply = tool_reply(out)
    assert reply.status == "error"
    assert "Invalid arguments" in reply.content and expected in reply.content


def test_another_resources_thread_reads_as_unknown(memory: Memory) -> None:
    model = strict_model(search({"query": "sailboat", "thread_id": "bobs"}), AIMessage("None."))
    out = agent_for(memory, model).invoke({"messages": [HumanMessage("?")]}, cfg("new", "alice"))
    reply = tool_reply(out)
    assert reply.status == "error"
    assert "no conversation 'bobs' in this user's memory" in reply.content
    assert SECRET not in reply.content
    unknown = strict_model(search({"query": "x", "thread_id": "nope"}), AIMessage("None."))
    out = agent_for(memory, unknown).invoke({"messages": [HumanMessage("?")]}, cfg("n", "alice"))
    assert "no conversation 'nope'" in tool_reply(out).content  # the same words: nothing leaks


def test_bob_finds_only_his_own_boat(memory: Memory) -> None:
    tool = memory.recall_tool()
    found = tool.invoke({"query": "sailboat named Albatross"}, cfg("t", "bob"))
    assert SECRET in found and "Sailing trip" not in found and "Weekend" not in found


def test_without_an_owner_the_developer_is_told(memory: Memory) -> None:
    with pytest.raises(ConfigurationError, match="whose memory"):
        memory.recall_tool().invoke({"query": "boat"})
    fixed = memory.recall_tool(resource_id="alice").invoke({"query": "sailboat Albatross"})
    assert "Our sailboat is named Albatross." in fixed


def test_the_schema_is_one_providers_accept(memory: Memory) -> None:
    spec = convert_to_openai_tool(memory.recall_tool())["function"]
    assert spec["name"] == "search_memory"
    assert spec["parameters"]["required"] == ["query"]
    assert set(spec["parameters"]["properties"]) == {
        "query", "thread_id", "since", "until", "mode", "page",
    }  # fmt: skip
    assert "config" not in spec["parameters"]["properties"]
    with pytest.raises(ConfigurationError):
        memory.recall_tool(per_page=0)
