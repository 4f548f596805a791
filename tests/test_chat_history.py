"""`MemoryChatMessageHistory` on its own and inside `RunnableWithMessageHistory`."""

from __future__ import annotations

import pytest
from helpers import scripted
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from langchain_mastra_memory import Memory, MemoryChatMessageHistory, ResourceMismatchError

# RunnableWithMessageHistory is deprecated upstream in favour of LangGraph persistence, yet widely
# used: the history must keep working with it.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_history_basics(memory: Memory, call) -> None:
    history = memory.chat_history(thread_id="t1", resource_id="alice")
    assert isinstance(history, MemoryChatMessageHistory)

    def read() -> list:
        return call(history, "get_messages") if call.mode == "async" else history.messages

    assert read() == []
    call(history, "add_messages", [HumanMessage("hi"), AIMessage("hello")])
    assert memory.get_thread("t1").resource_id == "alice"  # created on first add
    history.add_user_message("more")
    assert [m.content for m in read()] == ["hi", "hello", "more"]
    call(history, "clear")
    assert history.messages == [] and memory.get_thread("t1") is not None


def test_history_refuses_another_resources_thread(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages([HumanMessage("private")], thread_id="t1", resource_id="alice")
    intruder = memory.chat_history(thread_id="t1", resource_id="mallory")
    with pytest.raises(ResourceMismatchError):
        _ = intruder.messages
    with pytest.raises(ResourceMismatchError):
        intruder.add_messages([HumanMessage("x")])
    with pytest.raises(ResourceMismatchError):
        intruder.clear()
    assert [m.content for m in memory.get_messages(thread_id="t1")] == ["private"]


def _chain(memory: Memory, replies: list[str]) -> tuple[RunnableWithMessageHistory, list]:
    model = scripted(*[AIMessage(r) for r in replies])
    prompts: list = []
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | RunnableLambda(lambda p: prompts.append(p.to_messages()) or p) | model,
        lambda session_id: memory.chat_history(thread_id=session_id, resource_id="alice"),
        input_messages_key="question",
        history_messages_key="history",
    )
    return chain, prompts


def test_runnable_with_message_history_end_to_end(memory: Memory) -> None:
    chain, prompts = _chain(memory, ["Hi Alice.", "You are Alice."])
    config = {"configurable": {"session_id": "s1"}}
    assert chain.invoke({"question": "I am Alice."}, config).content == "Hi Alice."
    assert chain.invoke({"question": "Who am I?"}, config).content == "You are Alice."
    assert [m.content for m in prompts[1]] == [
        "You are terse.",
        "I am Alice.",
        "Hi Alice.",
        "Who am I?",
    ]
    assert [m.content for m in memory.get_messages(thread_id="s1")] == [
        "I am Alice.",
        "Hi Alice.",
        "Who am I?",
        "You are Alice.",
    ]


async def test_runnable_with_message_history_async(memory: Memory) -> None:
    chain, _ = _chain(memory, ["one", "two"])
    config = {"configurable": {"session_id": "s2"}}
    await chain.ainvoke({"question": "first"}, config)
    await chain.ainvoke({"question": "second"}, config)
    stored = await memory.aget_messages(thread_id="s2")
    assert [m.content for m in stored] == ["first", "one", "second", "two"]


def test_a_window_that_cuts_a_tool_pair_still_reaches_the_model_whole(memory) -> None:
    from langchain_core.messages import ToolMessage

    from langchain_mastra_memory.provider_rules import provider_violations

    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}])
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [HumanMessage("q"), call, ToolMessage("42", tool_call_id="c1"), AIMessage("It is 42.")],
        thread_id="t1",
        resource_id="alice",
    )
    history = memory.chat_history(thread_id="t1", resource_id="alice")
    history.last_messages = 2  # the window starts at the tool result
    assert [m.content for m in history.messages] == ["It is 42."]
    assert provider_violations([*history.messages, HumanMessage("and?")]) == []
    history.clear()  # clears everything stored, not only what the window shows
    assert memory.get_messages(thread_id="t1") == []
