"""Agent turns a real provider accepts, on LangGraph's own conventions (issue: agent turns).

Every model here is `ProviderStrictChatModel`: it refuses an input OpenAI or Anthropic would
refuse, so a turn that reaches a model in a bad shape fails the test where it happens.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import scripted
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from langchain_mastra_memory import (
    Memory,
    ResourceMismatchError,
    SQLiteStorage,
    TokenLimiter,
    ToolCallFilter,
)
from langchain_mastra_memory.errors import UnsavedTurnWarning
from langchain_mastra_memory.provider_rules import provider_violations

WM = "update_working_memory"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}, 24 degrees."


def wm_call(text: str, call_id: str = "w1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": WM, "args": {"memory": text}, "id": call_id}])


def weather_call(call_id: str = "g1") -> AIMessage:
    return AIMessage(
        "Let me check.",
        tool_calls=[{"name": "get_weather", "args": {"city": "Lisbon"}, "id": call_id}],
    )


def cfg(thread: str, resource: str | None = None, key: str = "resource_id") -> dict:
    configurable = {"thread_id": thread}
    if resource:
        configurable[key] = resource
    return {"configurable": configurable}


def full_memory(path: Path, **extra) -> Memory:
    return Memory(
        storage=SQLiteStorage(path),
        options={
            "working_memory": {"enabled": True},
            "semantic_recall": {"top_k": 2, "message_range": 0},
        },
        **extra,
    )


def react_agent(memory: Memory, model, checkpointer=None, prompt=None):
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(
            model,
            [memory.working_memory_tool(), get_weather],
            prompt=prompt,
            pre_model_hook=memory.pre_model_hook(),
            checkpointer=checkpointer or memory.checkpointer(),
        )


def four_turn_script() -> list[AIMessage]:
    """Thread 1: a working-memory update, then a weather call, then an answer; a second turn;
    thread 2 (same person): an answer."""
    return [
        wm_call("# User\n- Location: Lisbon"),
        weather_call(),
        AIMessage("Noted: you live in Lisbon, where it is sunny."),
        AIMessage("You told me you moved to Lisbon."),
        AIMessage("You live in Lisbon."),
    ]


def only_types(messages) -> list[str]:
    return [m.type for m in messages]


@pytest.mark.parametrize("key", ["resource_id", "user_id"])
def test_react_agent_turns_are_provider_valid_and_remember(tmp_path: Path, key: str) -> None:
    memory = full_memory(tmp_path / "m.db")
    model = scripted(*four_turn_script())
    agent = react_agent(memory, model, prompt="You are a helpful assistant.")
    agent.invoke({"messages": [("user", "I just moved to Lisbon!")]}, cfg("t1", "alice", key))
    agent.invoke({"messages": [("user", "Where did I say I moved?")]}, cfg("t1", "alice", key))
    agent.invoke(
        {"messages": [("user", "Remind me, which city did I just move to?")]},
        cfg("t2", "alice", key),
    )

    assert len(model.seen) == 5
    for sent in model.seen:
        assert provider_violations(sent) == []
    # the loop after the working-memory update: the call and its result both reach the model
    second = model.seen[1]
    assert only_types(second)[-3:] == ["human", "ai", "tool"]
    assert second[-2].tool_calls[0]["name"] == WM
    # the system prompt and memory's blocks lead, and nothing system-like comes later
    assert second[0].content == "You are a helpful assistant."
    assert "WORKING_MEMORY" in second[1].content and "Lisbon" in second[1].content
    # the next turn: remembered history without working-memory traffic, weather pair kept
    fourth = model.seen[3]
    assert not any(getattr(m, "name", None) == WM for m in fourth)
    assert not any(
        c["name"] == WM for m in fourth if isinstance(m, AIMessage) for c in m.tool_calls
    )
    assert any(isinstance(m, ToolMessage) and "Sunny" in str(m.content) for m in fourth)
    # another thread of the same person: working memory and recall of thread 1
    fifth = model.seen[4]
    assert "Location: Lisbon" in fifth[1].content
    assert "remembered_from" not in fifth[1].content  # the system message is the same each turn
    recalled = fifth[2].content.split("<remembered_from_other_conversation", 1)[1]
    assert "Lisbon" in recalled  # the recalled-conversation block, after the (empty) history
    assert "Working memory updated" not in fifth[2].content
    assert only_types(fifth) == ["system", "system", "human", "human"]
    stored = memory.get_messages(thread_id="t1")
    assert only_types(stored) == ["human", "ai", "tool", "ai", "tool", "ai", "human", "ai"]
    assert memory.get_thread("t1").resource_id == "alice"


def test_react_agent_with_a_thread_id_only_config(tmp_path: Path) -> None:
    memory = full_memory(tmp_path / "m.db")
    model = scripted(*four_turn_script())
    agent = react_agent(memory, model)
    agent.invoke({"messages": [("user", "I just moved to Lisbon!")]}, cfg("t1"))
    agent.invoke({"messages": [("user", "Where did I say I moved?")]}, cfg("t1"))
    agent.invoke({"messages": [("user", "Remind me, which city did I just move to?")]}, cfg("t2"))
    assert memory.get_thread("t1").resource_id == "t1"  # the thread is its own owner
    assert memory.get_working_memory(resource_id="t1").count("Lisbon") == 1
    fifth = model.seen[4]
    assert not any("Lisbon" in str(m.content) for m in fifth)  # t2 owns nothing of t1's


def test_the_hook_follows_the_checkpointers_default_resource(tmp_path: Path) -> None:
    memory = full_memory(tmp_path / "m.db")
    model = scripted(*four_turn_script())
    agent = react_agent(memory, model, checkpointer=memory.checkpointer(default_resource_id="eve"))
    agent.invoke({"messages": [("user", "I just moved to Lisbon!")]}, cfg("t1"))
    assert memory.get_thread("t1").resource_id == "eve"
    assert "Lisbon" in memory.get_working_memory(resource_id="eve")


@dataclass
class UserContext:
    user_id: str


@pytest.mark.parametrize("ids", ["config", "context", "thread-only"])
async def test_create_agent_with_middleware_is_provider_valid(tmp_path: Path, ids: str) -> None:
    from langchain.agents import create_agent

    memory = full_memory(tmp_path / "m.db")
    model = scripted(*four_turn_script())
    agent = create_agent(
        model,
        [memory.working_memory_tool(), get_weather],
        system_prompt="You are a helpful assistant.",
        middleware=[memory.middleware()],
        context_schema=UserContext,
    )

    async def turn(text: str, thread: str) -> None:
        if ids == "config":
            await agent.ainvoke({"messages": [("user", text)]}, cfg(thread, "alice"))
        elif ids == "context":
            await agent.ainvoke(
                {"messages": [("user", text)]}, cfg(thread), context=UserContext("alice")
            )
        else:
            await agent.ainvoke(
                {"messages": [("user", text)]}, cfg(thread), context=UserContext("")
            )

    await turn("I just moved to Lisbon!", "t1")
    await turn("Where did I say I moved?", "t1")  # no checkpointer: history from storage
    await turn("Remind me, which city did I just move to?", "t2")
    owner = "t1" if ids == "thread-only" else "alice"
    assert (await memory.aget_thread("t1")).resource_id == owner
    for sent in model.seen:
        assert provider_violations(sent) == []
    assert only_types(model.seen[1])[-3:] == ["human", "ai", "tool"]
    first_system = model.seen[1][0]
    assert first_system.content.startswith("You are a helpful assistant.")
    assert "Lisbon" in first_system.content  # working memory merged into the one system message
    fourth = model.seen[3]
    assert "I just moved to Lisbon!" in [m.content for m in fourth]  # remembered without a saver
    fifth = model.seen[4]
    assert ("Lisbon" in fifth[0].content) == (ids != "thread-only")
    stored = await memory.aget_messages(thread_id="t1")
    assert only_types(stored) == ["human", "ai", "tool", "ai", "tool", "ai", "human", "ai"]


def test_middleware_sync_path(tmp_path: Path) -> None:
    from langchain.agents import create_agent

    memory = full_memory(tmp_path / "m.db")
    model = scripted(*four_turn_script())
    agent = create_agent(
        model, [memory.working_memory_tool(), get_weather], middleware=[memory.middleware()]
    )
    agent.invoke({"messages": [("user", "I just moved to Lisbon!")]}, cfg("t1", "alice"))
    assert len(model.seen) == 3
    assert only_types(model.seen[2])[-5:] == ["human", "ai", "tool", "ai", "tool"]


class RunNames(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_chain_start(self, serialized, inputs, **kwargs) -> None:
        self.names.append(kwargs.get("name") or "")


def test_wrap_keeps_prompt_variables_and_names_its_stages(tmp_path: Path) -> None:
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        options={"working_memory": {"enabled": True}, "last_messages": 10},
        processors=[ToolCallFilter(), TokenLimiter(10_000)],
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer in {language}."), MessagesPlaceholder("messages")]
    )
    model = scripted(AIMessage("Bonjour !"), AIMessage("Tu t'appelles Ada."))
    chat = memory.wrap(prompt | model)
    names = RunNames()
    config = {**cfg("t1", "ada"), "callbacks": [names]}
    chat.invoke({"input": "Hi, I'm Ada", "language": "French"}, config)
    chat.invoke({"input": "What's my name?", "language": "French"}, config)
    first, second = model.seen
    assert first[0].content == "Answer in French."
    assert only_types(second) == ["system", "system", "human", "ai", "human"]
    for stage in ("MemoryContext", "ToolCallFilter", "TokenLimiter", "MemorySave"):
        assert stage in names.names, (stage, names.names)
    assert names.names[0].startswith("Memory(")  # the wrapper's own run is the parent
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "Hi, I'm Ada",
        "Bonjour !",
        "What's my name?",
        "Tu t'appelles Ada.",
    ]


async def test_wrap_async_stream_with_prompt_variables(tmp_path: Path) -> None:
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer in {language}."), MessagesPlaceholder("messages")]
    )
    model = scripted(AIMessage("Hola amigo"))
    chat = memory.wrap(prompt | model)
    text = "".join(
        [c.content async for c in chat.astream({"input": "hi", "language": "Spanish"}, cfg("t"))]
    )
    assert text == "Hola amigo"
    assert model.seen[0][0].content == "Answer in Spanish."
    assert [m.content for m in await memory.aget_messages(thread_id="t")] == ["hi", "Hola amigo"]


def test_wrap_of_a_model_sends_one_leading_system_message(tmp_path: Path) -> None:
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"), options={"working_memory": {"enabled": True}}
    )
    model = scripted(AIMessage("Arr."))
    memory.wrap(model).invoke(
        [SystemMessage("You are a pirate."), HumanMessage("hi")], cfg("t1", "al")
    )
    sent = model.seen[0]
    assert only_types(sent) == ["system", "human"]
    assert sent[0].content.startswith("You are a pirate.") and "WORKING_MEMORY" in sent[0].content


# -- no silent no-ops ------------------------------------------------------------------------------
def test_the_hook_warns_once_when_nothing_saves_the_turn(tmp_path: Path) -> None:
    memory = full_memory(tmp_path / "m.db")
    model = scripted(AIMessage("one"), AIMessage("two"))
    agent = react_agent(memory, model, checkpointer=InMemorySaver())
    with pytest.warns(UnsavedTurnWarning, match=r"memory\.checkpointer\(") as caught:
        agent.invoke({"messages": [("user", "hello")]}, cfg("t1", "alice"))
        agent.invoke({"messages": [("user", "again")]}, cfg("t1", "alice"))
    assert len([w for w in caught if w.category is UnsavedTurnWarning]) == 1


def test_the_hook_with_memorys_checkpointer_does_not_warn(tmp_path: Path) -> None:
    memory = full_memory(tmp_path / "m.db")
    agent = react_agent(memory, scripted(AIMessage("one")))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsavedTurnWarning)
        agent.invoke({"messages": [("user", "hello")]}, cfg("t1", "alice"))


# -- the checkpointer reads only the caller's threads ----------------------------------------------
ALICE, MALLORY = cfg("t1", "alice"), cfg("t1", "mallory")


def alice_agent(tmp_path: Path):
    memory = full_memory(tmp_path / "m.db")
    model = scripted(AIMessage("Your secret is safe."), AIMessage("No."))
    agent = react_agent(memory, model)
    agent.invoke({"messages": [("user", "my secret is 4242")]}, ALICE)
    return memory, agent


def test_another_resource_cannot_read_a_thread_sync(tmp_path: Path) -> None:
    memory, agent = alice_agent(tmp_path)
    assert "4242" in agent.get_state(ALICE).values["messages"][0].content
    with pytest.raises(ResourceMismatchError):
        agent.get_state(MALLORY)
    with pytest.raises(ResourceMismatchError):
        list(agent.get_state_history(MALLORY))
    seen = []
    with pytest.raises(ResourceMismatchError):
        for values in agent.stream(
            {"messages": [("user", "what is my secret?")]}, MALLORY, stream_mode="values"
        ):
            seen.append(values)
    assert seen == []  # nothing of alice's was yielded before the refusal
    with pytest.raises(ResourceMismatchError):
        agent.invoke({"messages": [("user", "what is my secret?")]}, MALLORY)
    cp = agent.checkpointer
    with pytest.raises(ResourceMismatchError):
        cp.get_tuple(MALLORY)
    with pytest.raises(ResourceMismatchError):
        list(cp.list(MALLORY))
    # without a thread filter, a resource lists only its own threads
    agent.invoke({"messages": [("user", "hi")]}, cfg("m1", "mallory"))
    assert {c.config["configurable"]["thread_id"] for c in cp.list(cfg_resource("mallory"))} == {
        "m1"
    }
    assert {c.config["configurable"]["thread_id"] for c in cp.list(None)} == {"t1", "m1"}
    assert len(list(cp.list(cfg_resource("alice"), limit=1))) == 1
    assert memory.get_messages(thread_id="t1")[0].content == "my secret is 4242"


def cfg_resource(resource: str) -> dict:
    return {"configurable": {"resource_id": resource}}


async def test_another_resource_cannot_read_a_thread_async(tmp_path: Path) -> None:
    _, agent = alice_agent(tmp_path)
    with pytest.raises(ResourceMismatchError):
        await agent.aget_state(MALLORY)
    seen = []
    with pytest.raises(ResourceMismatchError):
        async for values in agent.astream(
            {"messages": [("user", "secret?")]}, MALLORY, stream_mode="values"
        ):
            seen.append(values)
    assert seen == []
    cp = agent.checkpointer
    with pytest.raises(ResourceMismatchError):
        await cp.aget_tuple(MALLORY)
    with pytest.raises(ResourceMismatchError):
        [c async for c in cp.alist(MALLORY)]
    assert [c async for c in cp.alist(cfg_resource("mallory"))] == []
    assert len([c async for c in cp.alist(cfg_resource("alice"))]) > 0


# -- working-memory traffic never reaches recall ---------------------------------------------------
@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
@pytest.mark.parametrize("scope", ["same-thread", "other-thread"])
def test_working_memory_traffic_never_appears_in_recall(
    tmp_path: Path, mode: str, scope: str
) -> None:
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        options={
            "working_memory": {"enabled": True},
            "semantic_recall": {"top_k": 5, "message_range": 2, "mode": mode},
            "last_messages": 1,
        },
    )
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [
            HumanMessage("Working memory: I moved to Lisbon, please remember it"),
            wm_call("# User\n- Location: Lisbon (working memory updated)"),
            ToolMessage("Working memory updated. It now reads: Lisbon", tool_call_id="w1", name=WM),
            AIMessage("Noted, working memory updated: you live in Lisbon."),
            HumanMessage("thanks"),
            AIMessage("You're welcome."),
        ],
        thread_id="t1",
        resource_id="alice",
    )
    thread = "t1" if scope == "same-thread" else "t2"
    sent = memory.context(
        [HumanMessage("working memory updated Lisbon: where do I live?")],
        thread_id=thread,
        resource_id="alice",
    )
    assert provider_violations(sent) == []
    recalled_text = "\n".join(str(m.content) for m in sent[1:])
    assert "Lisbon" in recalled_text  # recall found the conversation
    assert not any(isinstance(m, ToolMessage) for m in sent)
    assert not any(isinstance(m, AIMessage) and m.tool_calls for m in sent)
    assert "It now reads" not in recalled_text
    assert "assistant: \n" not in recalled_text and not recalled_text.rstrip().endswith(":")


async def test_wrap_stages_are_runs_for_whoever_listens(tmp_path: Path) -> None:
    """Stages are child runs when something receives runs (callbacks, ``astream_events``),
    and a turn with no listener is the same turn, saved the same."""
    from langchain_mastra_memory.integrations.lcel import observed

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    chat = memory.wrap(scripted(AIMessage("one"), AIMessage("two"), AIMessage("three")))
    events = [e async for e in chat.astream_events("hi", cfg("t1", "ada"), version="v2")]
    started = [e["name"] for e in events if e["event"] == "on_chain_start"]
    assert {"MemoryContext", "MemorySave"} <= set(started), started
    names = RunNames()
    await chat.ainvoke("again", {**cfg("t1", "ada"), "callbacks": [names]})
    assert {"MemoryContext", "MemorySave"} <= set(names.names)
    assert chat.invoke("quiet", cfg("t1", "ada")).content == "three"
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "hi", "one", "again", "two", "quiet", "three",
    ]  # fmt: skip
    assert not observed({}) and observed({"callbacks": [names]})


# -- the middleware under memory's checkpointer (issue 96) -----------------------------------------
def _our_nodes(agent) -> set[str]:
    return {n for n in agent.get_graph().nodes if n.startswith("langchain_mastra_memory")}


async def test_the_applying_middleware_adds_no_after_model_step_and_the_checkpointer_saves(
    tmp_path: Path,
) -> None:
    """``memory.middleware(save=False)`` under ``memory.checkpointer()``: no after-model node
    of ours in the agent's graph, each turn saved once (by the checkpointer), the context still
    applied (the first thread recalled from a second), sync and async."""
    from langchain.agents import create_agent

    from langchain_mastra_memory.testing import strict_model

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"),
                    options={"semantic_recall": {"mode": "keyword", "top_k": 2}})  # fmt: skip
    model = strict_model(AIMessage("Noted."), AIMessage("Again."), AIMessage("Lisbon."))
    agent = create_agent(model, middleware=[memory.middleware(save=False)],
                         checkpointer=memory.checkpointer())  # fmt: skip
    assert not any(n.endswith("after_model") for n in _our_nodes(agent))
    saving = create_agent(strict_model(AIMessage("x")), middleware=[memory.middleware()])
    assert any(n.endswith("after_model") for n in _our_nodes(saving))  # (the nodes are read)
    one = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn of: the checkpointer saves
        agent.invoke({"messages": [HumanMessage("I moved to Lisbon.")]}, one)
        await agent.ainvoke({"messages": [HumanMessage("Yes, Lisbon.")]}, one)
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "I moved to Lisbon.", "Noted.", "Yes, Lisbon.", "Again.",
    ]  # fmt: skip
    two = {"configurable": {"thread_id": "t2", "user_id": "alice"}}
    agent.invoke({"messages": [HumanMessage("Where did I move? Lisbon?")]}, two)
    assert "I moved to Lisbon." in str(model.seen[-1])  # recalled from t1 into t2's request
    memory.close()


def test_the_saving_middleware_under_memorys_checkpointer_saves_once_and_says_so(
    tmp_path: Path,
) -> None:
    from langchain.agents import create_agent

    from langchain_mastra_memory.testing import strict_model

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    agent = create_agent(strict_model(AIMessage("One."), AIMessage("Two.")),
                         middleware=[memory.middleware()], checkpointer=memory.checkpointer())  # fmt: skip
    config = {"configurable": {"thread_id": "t1", "user_id": "alice"}}
    with pytest.warns(UserWarning, match=r"use memory\.middleware\(save=False\)"):
        agent.invoke({"messages": [HumanMessage("first")]}, config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per memory
        agent.invoke({"messages": [HumanMessage("second")]}, config)
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "first", "One.", "second", "Two.",
    ]  # fmt: skip
    memory.close()


def test_the_applying_middleware_with_nothing_saving_warns(tmp_path: Path) -> None:
    from langchain.agents import create_agent

    from langchain_mastra_memory.testing import strict_model

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"))
    agent = create_agent(strict_model(AIMessage("One.")), middleware=[memory.middleware(save=False)],
                         checkpointer=InMemorySaver())  # fmt: skip
    with pytest.warns(UserWarning, match="nothing saves the conversation"):
        agent.invoke({"messages": [HumanMessage("first")]},
                     {"configurable": {"thread_id": "t1", "user_id": "alice"}})  # fmt: skip
    assert memory.get_thread("t1") is None  # nothing saved the turn
    memory.close()


@pytest.mark.parametrize("save", ["no", 0, None])
def test_the_middlewares_save_option_takes_a_bool_only(save) -> None:
    from langchain_mastra_memory import ConfigurationError

    memory = Memory(storage=SQLiteStorage(":memory:"))
    with pytest.raises(ConfigurationError, match="True or False"):
        memory.middleware(save=save)
