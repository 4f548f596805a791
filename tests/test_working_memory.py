"""Working memory: merge semantics, markdown rules, scopes, the tool, injection, bad input."""

from __future__ import annotations

import asyncio
import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from langchain_mastra_memory import (
    ConfigurationError,
    Memory,
    ResourceMismatchError,
    SQLiteStorage,
    WorkingMemory,
    WorkingMemoryError,
)
from langchain_mastra_memory.working_memory import DEFAULT_TEMPLATE, merge_patch


class Address(BaseModel):
    city: str | None = None
    country: str | None = None


class Profile(BaseModel):
    name: str | None = None
    age: int | None = None
    address: Address | None = None
    likes: list[str] = []


JSON_PROFILE = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "address": {"type": "object", "properties": {"city": {"type": "string"}}},
        "likes": {"type": "array", "items": {"type": "string"}},
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("stored", "patch", "merged"),
    [
        ({"a": 1}, {"b": 2}, {"a": 1, "b": 2}),  # new key
        ({"a": {"x": 1, "y": 2}}, {"a": {"y": 3}}, {"a": {"x": 1, "y": 3}}),  # nested merge
        (
            {"a": {"x": {"deep": 1}}},
            {"a": {"x": {"deeper": 2}}},
            {"a": {"x": {"deep": 1, "deeper": 2}}},
        ),
        ({"l": [1, 2, 3]}, {"l": [4]}, {"l": [4]}),  # arrays replace
        ({"a": 1, "b": 2}, {"a": None}, {"b": 2}),  # null deletes
        ({"a": {"x": 1}}, {"a": {"x": None}}, {"a": {}}),  # nested delete
        ({"a": 1}, {"missing": None}, {"a": 1}),  # deleting what is absent
        ({"a": {"x": 1}}, {"a": 5}, {"a": 5}),  # scalar replaces object
        ({}, {}, {}),
    ],
)
def test_merge_semantics(stored, patch, merged) -> None:
    before = json.dumps(stored)
    assert merge_patch(stored, patch) == merged
    assert json.dumps(stored) == before  # never mutated


def schema_memory(storage, schema=Profile, **extra) -> Memory:
    return Memory(
        storage=storage, options={"working_memory": {"enabled": True, "schema": schema, **extra}}
    )


@pytest.mark.parametrize("schema", [Profile, JSON_PROFILE], ids=["pydantic", "json-schema"])
def test_schema_mode_merges_partial_updates(storage, call, schema) -> None:
    memory = schema_memory(storage, schema)
    call(
        memory,
        "update_working_memory",
        {"name": "Ada", "address": {"city": "Paris"}},
        resource_id="alice",
    )
    call(memory, "update_working_memory", {"age": 36, "likes": ["tea"]}, resource_id="alice")
    call(
        memory,
        "update_working_memory",
        {"address": {"city": "Lisbon"}, "likes": ["coffee"]},
        resource_id="alice",
    )
    data = call(memory, "get_working_memory", resource_id="alice")
    assert data == {"name": "Ada", "age": 36, "address": {"city": "Lisbon"}, "likes": ["coffee"]}
    call(memory, "update_working_memory", {"age": None}, resource_id="alice")
    assert "age" not in call(memory, "get_working_memory", resource_id="alice")


@pytest.mark.parametrize("schema", [Profile, JSON_PROFILE], ids=["pydantic", "json-schema"])
@pytest.mark.parametrize(
    "bad", [{"age": "old"}, {"likes": "tea"}, {"address": {"city": 5}}, ["a list"], "not json"]
)
def test_schema_mode_refuses_invalid_updates_and_stores_nothing(storage, schema, bad) -> None:
    memory = schema_memory(storage, schema)
    memory.update_working_memory({"name": "Ada"}, resource_id="alice")
    with pytest.raises(WorkingMemoryError):
        memory.update_working_memory(bad, resource_id="alice")
    assert memory.get_working_memory(resource_id="alice") == {"name": "Ada"}


def test_unknown_keys_follow_the_schema(storage) -> None:
    strict = schema_memory(storage, JSON_PROFILE)  # additionalProperties: false
    with pytest.raises(WorkingMemoryError, match="nickname"):
        strict.update_working_memory({"nickname": "A"}, resource_id="alice")
    assert strict.get_working_memory(resource_id="alice") is None


def markdown_memory(storage, **extra) -> Memory:
    return Memory(storage=storage, options={"working_memory": {"enabled": True, **extra}})


def test_markdown_mode_replaces_the_document(storage, call) -> None:
    memory = markdown_memory(storage)
    call(memory, "update_working_memory", "# User\n- Name: Ada", resource_id="alice")
    call(
        memory, "update_working_memory", "# User\n- Name: Ada\n- City: Lisbon", resource_id="alice"
    )
    assert (
        call(memory, "get_working_memory", resource_id="alice")
        == "# User\n- Name: Ada\n- City: Lisbon"
    )


@pytest.mark.parametrize("empty", [DEFAULT_TEMPLATE, "\n" + DEFAULT_TEMPLATE + "\n  ", "", "   "])
def test_markdown_refuses_to_erase_data_with_the_empty_template(storage, empty) -> None:
    memory = markdown_memory(storage)
    memory.update_working_memory(DEFAULT_TEMPLATE, resource_id="alice")  # nothing stored yet: fine
    memory.update_working_memory("# User Information\n- **First Name**: Ada", resource_id="alice")
    with pytest.raises(WorkingMemoryError, match="empty template"):
        memory.update_working_memory(empty, resource_id="alice")
    assert "Ada" in memory.get_working_memory(resource_id="alice")


def test_markdown_needs_a_string(storage) -> None:
    with pytest.raises(WorkingMemoryError, match="string"):
        markdown_memory(storage).update_working_memory({"name": "Ada"}, resource_id="alice")


def test_size_cap(storage) -> None:
    memory = markdown_memory(storage, max_chars=50)
    memory.update_working_memory("short", resource_id="alice")
    with pytest.raises(WorkingMemoryError, match="over the limit of 50"):
        memory.update_working_memory("x" * 51, resource_id="alice")
    assert memory.get_working_memory(resource_id="alice") == "short"


def test_resource_scope_is_shared_by_threads_but_not_resources(storage) -> None:
    memory = markdown_memory(storage)
    memory.create_thread(resource_id="alice", thread_id="a1")
    memory.create_thread(resource_id="alice", thread_id="a2")
    memory.update_working_memory("alice's notes", resource_id="alice", thread_id="a1")
    assert memory.get_working_memory(resource_id="alice", thread_id="a2") == "alice's notes"
    assert memory.get_working_memory(resource_id="bob") is None


def test_thread_scope_isolates_threads(storage) -> None:
    memory = markdown_memory(storage, scope="thread")
    memory.create_thread(resource_id="alice", thread_id="a1")
    memory.create_thread(resource_id="alice", thread_id="a2")
    memory.create_thread(resource_id="bob", thread_id="b1")
    memory.update_working_memory("only in a1", resource_id="alice", thread_id="a1")
    assert memory.get_working_memory(resource_id="alice", thread_id="a2") is None
    with pytest.raises(ResourceMismatchError):
        memory.get_working_memory(resource_id="bob", thread_id="a1")
    with pytest.raises(ResourceMismatchError):
        memory.update_working_memory("hijack", resource_id="bob", thread_id="a1")
    assert memory.get_working_memory(resource_id="alice", thread_id="a1") == "only in a1"
    with pytest.raises(ConfigurationError, match="thread_id"):
        memory.get_working_memory(resource_id="alice")


def test_disabled_working_memory_is_a_configuration_error(storage) -> None:
    memory = Memory(storage=storage)
    with pytest.raises(ConfigurationError, match="not enabled"):
        memory.update_working_memory("x", resource_id="alice")
    with pytest.raises(ConfigurationError):
        memory.working_memory_tool()


@pytest.mark.parametrize(
    "options",
    [
        {"enabled": True, "template": "t", "schema": Profile},
        {"enabled": True, "schema": {"type": "not-a-type"}},
        {"enabled": True, "schema": 42},
        {"enabled": True, "scope": "global"},
        {"enabled": True, "max_chars": 0},
        {"enabled": True, "bogus": 1},
    ],
)
def test_bad_options(storage, options) -> None:
    with pytest.raises(ConfigurationError):
        Memory(storage=storage, options={"working_memory": options})


# -- the tool ------------------------------------------------------------------------------------
CONFIG = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}


def tool_call(args: dict, call_id: str = "c1") -> dict:
    return {"name": "update_working_memory", "args": args, "id": call_id, "type": "tool_call"}


def test_tool_schema_teaches_the_rules(storage) -> None:
    md = markdown_memory(storage).working_memory_tool()
    assert md.name == "update_working_memory"
    assert md.tool_call_schema["properties"]["memory"]["type"] == "string"
    assert "WHOLE" in md.tool_call_schema["properties"]["memory"]["description"]
    sm = schema_memory(storage).working_memory_tool()
    memory_schema = sm.tool_call_schema["properties"]["memory"]
    assert "null deletes" in memory_schema["description"]
    assert "required" not in memory_schema  # a patch: every field optional
    assert {"type": "null"} in memory_schema["properties"]["age"]["anyOf"]


async def test_tool_reads_ids_from_config_sync_and_async(storage) -> None:
    memory = schema_memory(storage)
    tool = memory.working_memory_tool()
    out = tool.invoke(tool_call({"memory": {"name": "Ada"}}), CONFIG)
    assert isinstance(out, ToolMessage) and out.status == "success" and "Ada" in out.content
    out = await tool.ainvoke(tool_call({"memory": {"age": 36}}, "c2"), CONFIG)
    assert out.status == "success"
    assert memory.get_working_memory(resource_id="alice") == {"name": "Ada", "age": 36}
    assert memory.get_thread("t1").resource_id == "alice"  # the thread is created on first use


def test_tool_ids_given_at_creation(storage) -> None:
    memory = markdown_memory(storage)
    tool = memory.working_memory_tool(thread_id="t9", resource_id="carol")
    assert tool.invoke({"memory": "# Carol"}).startswith("Working memory updated")
    assert memory.get_working_memory(resource_id="carol") == "# Carol"


@pytest.mark.parametrize("bad", [{"age": "old"}, {"age": -1, "name": 3}])
def test_tool_returns_errors_to_the_model_and_stores_nothing(storage, bad) -> None:
    memory = schema_memory(storage, JSON_PROFILE)
    tool = memory.working_memory_tool()
    tool.invoke(tool_call({"memory": {"name": "Ada"}}), CONFIG)
    out = tool.invoke(tool_call({"memory": bad}, "c2"), CONFIG)
    assert out.status == "error" and "invalid working memory" in out.content
    assert memory.get_working_memory(resource_id="alice") == {"name": "Ada"}


def test_tool_without_ids_is_a_developer_error(storage) -> None:
    with pytest.raises(ConfigurationError, match="thread_id"):
        markdown_memory(storage).working_memory_tool().invoke(tool_call({"memory": "x"}), {})


def test_tool_refuses_another_resources_thread(storage) -> None:
    memory = markdown_memory(storage, scope="thread")
    memory.create_thread(resource_id="bob", thread_id="t1")
    out = memory.working_memory_tool().invoke(tool_call({"memory": "mine now"}), CONFIG)
    assert out.status == "error" and "another resource" in out.content
    assert memory.get_working_memory(resource_id="bob", thread_id="t1") is None


def test_read_only_offers_no_tool_and_no_update_instructions(storage) -> None:
    memory = markdown_memory(storage, read_only=True)
    with pytest.raises(ConfigurationError, match="read-only"):
        memory.working_memory_tool()
    memory.update_working_memory("# Ada", resource_id="alice")  # developers can still write it
    injected = WorkingMemory(storage, read_only=True).invoke(
        [], {"configurable": {"resource_id": "alice"}}
    )
    assert "# Ada" in injected[0].content and "update_working_memory" not in injected[0].content


# -- injection -----------------------------------------------------------------------------------
async def test_processor_injects_instructions_template_and_data(storage) -> None:
    memory = markdown_memory(storage)
    memory.update_working_memory("# User\n- Name: Ada", resource_id="alice")
    wm = WorkingMemory(storage)
    history = [HumanMessage("hi")]
    for out in (wm.invoke(history, CONFIG), await wm.ainvoke(history, CONFIG)):
        system = out[0]
        assert system.type == "system" and out[1:] == history
        assert (
            "<working_memory_data>\n# User\n- Name: Ada\n</working_memory_data>" in system.content
        )
        assert "update_working_memory" in system.content and "First Name" in system.content
        assert system.response_metadata["langchain_mastra_memory"] == "working_memory"
    other = wm.invoke(history, {"configurable": {"resource_id": "bob"}})
    assert "Ada" not in other[0].content
    with pytest.raises(ConfigurationError):
        wm.invoke(history, {})


def test_schema_injection_shows_the_schema(storage) -> None:
    schema_memory(storage).update_working_memory({"name": "Ada"}, resource_id="alice")
    out = WorkingMemory(storage, schema=Profile).invoke([], CONFIG)
    assert '"name": "Ada"' in out[0].content.replace('{"name":"Ada"}', '"name": "Ada"')
    assert "<working_memory_schema>" in out[0].content


def test_tool_traffic_is_hidden_from_recall(storage) -> None:
    memory = markdown_memory(storage)
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [
            HumanMessage("I'm Ada"),
            AIMessage(
                "Noted.",
                tool_calls=[
                    {"name": "update_working_memory", "args": {"memory": "# Ada"}, "id": "w1"}
                ],
            ),
            ToolMessage("Working memory updated.", tool_call_id="w1", name="update_working_memory"),
            AIMessage("Nice to meet you, Ada."),
        ],
        thread_id="t1",
        resource_id="alice",
    )
    recalled = memory.recall(thread_id="t1")
    assert [m.content for m in recalled] == ["I'm Ada", "Noted.", "Nice to meet you, Ada."]
    assert recalled[1].tool_calls == []
    assert len(memory.get_messages(thread_id="t1")) == 4  # stored losslessly


# -- concurrency ---------------------------------------------------------------------------------
def test_fifty_concurrent_partial_updates_from_threads(tmp_path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    memory = schema_memory(SQLiteStorage(tmp_path / "m.db"), {"type": "object"})
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(
            pool.map(
                lambda i: memory.update_working_memory({f"k{i}": i}, resource_id="alice"), range(50)
            )
        )
    assert memory.get_working_memory(resource_id="alice") == {f"k{i}": i for i in range(50)}


async def test_fifty_concurrent_partial_updates_from_tasks(tmp_path) -> None:
    memory = schema_memory(SQLiteStorage(tmp_path / "m.db"), {"type": "object"})
    await asyncio.gather(
        *(memory.aupdate_working_memory({f"k{i}": i}, resource_id="alice") for i in range(50))
    )
    assert await memory.aget_working_memory(resource_id="alice") == {f"k{i}": i for i in range(50)}


def _update_in_process(path: str, worker: int) -> None:  # runs in a child process
    memory = Memory(
        storage=SQLiteStorage(path),
        options={"working_memory": {"enabled": True, "schema": {"type": "object"}}},
    )
    for i in range(50):
        memory.update_working_memory({f"w{worker}": {f"k{i}": i}}, resource_id="alice")


@pytest.mark.slow
def test_concurrent_partial_updates_from_four_processes(tmp_path) -> None:
    import multiprocessing as mp

    path = str(tmp_path / "m.db")
    SQLiteStorage(path)
    ctx = mp.get_context("spawn")
    workers = [ctx.Process(target=_update_in_process, args=(path, w)) for w in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(180)
        assert w.exitcode == 0
    memory = schema_memory(SQLiteStorage(path), {"type": "object"})
    assert memory.get_working_memory(resource_id="alice") == {
        f"w{w}": {f"k{i}": i for i in range(50)} for w in range(4)
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "needs the `memory` argument"),
        ({"memory": "# User", "name": "Ada"}, "unexpected argument"),
        ({"memory": {"name": "Ada"}}, "one Markdown string"),
        ({"memory": 42}, "one Markdown string"),
    ],
)
def test_bad_tool_arguments_go_back_to_the_model(storage, call, args, message) -> None:
    memory = markdown_memory(storage)
    out = call(memory.working_memory_tool(), "invoke", tool_call(args), CONFIG)
    assert out.status == "error" and message in out.content
    assert memory.get_working_memory(resource_id="alice") is None


@pytest.mark.parametrize("args", [{"memory": "a string"}, {"memory": [1]}, {"extra": 1}])
def test_bad_schema_tool_arguments_go_back_to_the_model(storage, args) -> None:
    memory = Memory(
        storage=storage,
        options={"working_memory": {"enabled": True, "schema": {"type": "object"}}},
    )
    out = memory.working_memory_tool().invoke(tool_call(args), CONFIG)
    assert out.status == "error"
    assert memory.get_working_memory(resource_id="alice") is None


def test_agent_managed_false_is_read_only_the_application_writes(storage) -> None:
    """Mastra's ``agentManaged: false``: no tool, working memory still shown, and the
    application updates it."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_mastra_memory import ConfigurationError, Memory
    from langchain_mastra_memory.testing import strict_model

    options = {"working_memory": {"enabled": True, "agent_managed": False}}
    memory = Memory(storage=storage, options=options)
    assert memory.working_memory.read_only
    with pytest.raises(ConfigurationError, match="read-only"):
        memory.working_memory_tool()
    memory.update_working_memory("# User\n- City: Lisbon", resource_id="alice")  # the app writes
    model = strict_model(AIMessage("You live in Lisbon."))
    agent = create_agent(model, middleware=[memory.middleware()])
    agent.invoke({"messages": [HumanMessage("Where do I live?")]},
                 {"configurable": {"thread_id": "t", "user_id": "alice"}})  # fmt: skip
    shown = str(model.seen[-1][0].content)
    assert "Lisbon" in shown and "read-only" in shown and model.tool_names is None
    with pytest.raises(ConfigurationError, match="agent_managed=False means read_only=True"):
        Memory(storage=storage, options={"working_memory": {
            "enabled": True, "agent_managed": False, "read_only": False}})  # fmt: skip
