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
    assert "7 messages match" in first and "More results: call again with cursor=" in first
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
    assert spec["parameters"].get("required", []) == []  # query: optional listing threads
    assert set(spec["parameters"]["properties"]) == {
        "query", "thread_id", "since", "until", "mode", "page", "cursor", "archive_id",
        "group_id", "char_offset",
    }  # fmt: skip
    assert "config" not in spec["parameters"]["properties"]
    with pytest.raises(ConfigurationError):
        memory.recall_tool(per_page=0)


def cursor_in(text: str) -> str:
    import re

    found = re.search(r"cursor='([^']+)'", text)
    assert found, text
    return found.group(1)


def test_threads_mode_lists_the_callers_conversations_a_cursor_at_a_time(memory: Memory) -> None:
    tool = memory.recall_tool(resource_id="alice", per_page=5)
    first = tool.invoke({"mode": "threads"})
    assert first.startswith("8 conversations (page 0)")
    second = tool.invoke({"mode": "threads", "cursor": cursor_in(first)})
    listed = first + second
    assert '"Sailing trip" (thread trip) · started ' in listed
    assert all(f"(thread chat{n})" in listed for n in range(7))
    assert "bobs" not in listed and "Bob's boat" not in listed and "More results" not in second
    titled = tool.invoke({"mode": "threads", "query": "sailing"})
    assert titled.startswith("1 conversations") and "(thread trip)" in titled
    bob = memory.recall_tool(resource_id="bob").invoke({"mode": "threads"})
    assert "(thread bobs)" in bob and "trip" not in bob and "chat0" not in bob


def test_a_cursor_from_another_search_is_refused_with_words(memory: Memory) -> None:
    tool = memory.recall_tool(resource_id="alice", per_page=5)
    cursor = cursor_in(tool.invoke({"mode": "threads"}))
    refused = tool.invoke({"query": "weekend sailing plan", "mode": "keyword", "cursor": cursor})
    assert "belongs to another search" in refused
    assert "not one this tool gave" in tool.invoke({"query": "boat", "cursor": "garbage!"})
    paged = tool.invoke({"query": "weekend sailing plan", "mode": "keyword"})
    more = tool.invoke({"query": "weekend sailing plan", "mode": "keyword",
                        "cursor": cursor_in(paged)})  # fmt: skip
    assert more.count("Weekend plan") == 2


def test_observations_mode_searches_the_callers_logs_only(tmp_path) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from langchain_mastra_memory import SQLiteStorage

    class Noting(FakeListChatModel):  # an Observer that notes each line it is shown
        responses: list = ["unused"]  # noqa: RUF012

        def _call(self, messages, *args, **kwargs):
            from langchain_mastra_memory.provider_rules import provider_violations

            assert provider_violations(messages) == []  # what a provider would accept
            shown = messages[-1].content.split("<new-messages>")[-1]
            lines = [line for line in shown.splitlines() if line.startswith("[")]
            return "Date: 2026-11-22\n" + "\n".join(f"- [high] Noted {line}" for line in lines)

    options = {"observational_memory": {"model": Noting(), "scope": "thread",
                                        "message_tokens": 20, "buffer_tokens": None}}  # fmt: skip
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options=options)
    for thread, owner, text in (("a1", "alice", "Our sailboat is named Albatross."),
                                ("b1", "bob", f"My sailboat code is {SECRET}.")):  # fmt: skip
        memory.save_turn([HumanMessage(text), AIMessage("Noted, a fine boat " * 6)],
                         thread_id=thread, resource_id=owner)  # fmt: skip
        memory.context([HumanMessage("and?")], thread_id=thread, resource_id=owner)
    memory.settled()
    found = memory.recall_tool(resource_id="alice").invoke(
        {"query": "what is the sailboat called", "mode": "observations"})  # fmt: skip
    assert "Albatross" in found and SECRET not in found, found
    one = memory.recall_tool(resource_id="alice").invoke(
        {"query": "sailboat", "mode": "observations", "thread_id": "b1"})  # fmt: skip
    assert "no conversation 'b1'" in one.lower() and SECRET not in one
