"""LCEL shapes: memory.as_runnable() and memory.wrap(), sync/async, invoke and stream."""

from __future__ import annotations

import pytest
from helpers import scripted
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from langchain_mastra_memory import ConfigurationError, InvalidMessageError, Memory, MessageHistory

CONFIG = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}


def wm_memory(storage, **options) -> Memory:
    return Memory(storage=storage, options={"working_memory": {"enabled": True}, **options})


async def test_as_runnable_assembles_in_the_documented_order(storage) -> None:
    memory = wm_memory(storage, last_messages=2)
    memory.update_working_memory("# Alice\n- City: Lisbon", resource_id="alice")
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [HumanMessage("a"), AIMessage("b"), HumanMessage("c"), AIMessage("d")],
        thread_id="t1",
        resource_id="alice",
    )
    runnable = memory.as_runnable()
    for out in (
        runnable.invoke({"input": "e"}, CONFIG),
        await runnable.ainvoke({"input": "e"}, CONFIG),
    ):
        assert isinstance(out[0], SystemMessage) and "City: Lisbon" in out[0].content
        assert [m.content for m in out[1:]] == ["c", "d", "e"]
    assert [m.content for m in runnable.invoke([HumanMessage("x")], CONFIG)][-1] == "x"
    assert len(memory.get_messages(thread_id="t1")) == 4  # as_runnable saves nothing


def test_as_runnable_on_a_new_thread(storage) -> None:
    out = (
        Memory(storage=storage)
        .as_runnable()
        .invoke({"input": "hi"}, {"configurable": {"thread_id": "new", "resource_id": "bob"}})
    )
    assert [m.content for m in out] == ["hi"]


@pytest.mark.parametrize("config", [{}, {"configurable": {"resource_id": "a"}}])
def test_config_without_a_thread_is_a_clear_error(storage, config) -> None:
    with pytest.raises(ConfigurationError, match=r"thread_id"):
        Memory(storage=storage).as_runnable().invoke({"input": "hi"}, config)


@pytest.mark.parametrize("bad", [{"question": "hi"}, 42, [1, 2]])
def test_bad_input_is_refused(storage, bad) -> None:
    with pytest.raises(InvalidMessageError):
        Memory(storage=storage).as_runnable().invoke(bad, CONFIG)


def test_wrap_saves_each_turn_and_remembers(storage) -> None:
    memory = Memory(storage=storage)
    model = scripted(AIMessage("Hi Alice!"), AIMessage("You are Alice."))
    chat = memory.wrap(model)
    chat.invoke("I'm Alice", CONFIG)
    assert chat.invoke({"input": "Who am I?"}, CONFIG).content == "You are Alice."
    assert [m.content for m in model.seen[1]] == ["I'm Alice", "Hi Alice!", "Who am I?"]
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "I'm Alice",
        "Hi Alice!",
        "Who am I?",
        "You are Alice.",
    ]


def test_wrap_around_a_chain_with_a_string_output(storage) -> None:
    memory = Memory(storage=storage)
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be brief."), MessagesPlaceholder("messages")]
    )
    chain = memory.wrap(
        (lambda msgs: {"messages": msgs}) | prompt | scripted(AIMessage("ok")) | StrOutputParser()
    )
    assert chain.invoke("hello", CONFIG) == "ok"
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["hello", "ok"]


def test_wrap_streams_and_saves_when_the_stream_ends(storage) -> None:
    memory = Memory(storage=storage)
    chat = memory.wrap(scripted(AIMessage("streamed answer here")))
    chunks = []
    for chunk in chat.stream("go", CONFIG):
        chunks.append(chunk.content)
        assert len(memory.get_messages(thread_id="t1")) == 0  # saved only at the end
    assert len(chunks) > 1 and "".join(chunks) == "streamed answer here"
    assert [m.content for m in memory.get_messages(thread_id="t1")] == [
        "go",
        "streamed answer here",
    ]


async def test_wrap_async_invoke_and_astream(storage) -> None:
    memory = Memory(storage=storage)
    chat = memory.wrap(scripted(AIMessage("one"), AIMessage("two three")))
    assert (await chat.ainvoke("first", CONFIG)).content == "one"
    text = "".join([c.content async for c in chat.astream("second", CONFIG)])
    assert text == "two three"
    stored = await memory.aget_messages(thread_id="t1")
    assert [m.content for m in stored] == ["first", "one", "second", "two three"]


def test_injected_messages_are_never_saved(storage) -> None:
    memory = wm_memory(storage)
    memory.update_working_memory("# notes", resource_id="alice")
    memory.wrap(scripted(AIMessage("ok"))).invoke("hi", CONFIG)
    assert [m.type for m in memory.get_messages(thread_id="t1")] == ["human", "ai"]


def test_message_history_processor_both_sides(storage) -> None:
    history = MessageHistory(storage, last_messages=2)
    history.save(
        [HumanMessage("a", id="1"), AIMessage("b", id="2"), HumanMessage("c", id="3")], CONFIG
    )
    out = history.invoke([HumanMessage("c", id="3"), HumanMessage("d")], CONFIG)
    assert [m.content for m in out] == ["b", "c", "d"]  # "c" is not duplicated
    assert (
        history.invoke(
            [HumanMessage("x")], {"configurable": {"thread_id": "other", "resource_id": "alice"}}
        )[0].content
        == "x"
    )


async def test_message_history_async(storage) -> None:
    history = MessageHistory(storage, last_messages=5)
    await history.asave([HumanMessage("a"), AIMessage("b")], CONFIG)
    assert [m.content for m in await history.ainvoke([HumanMessage("c")], CONFIG)] == [
        "a",
        "b",
        "c",
    ]
