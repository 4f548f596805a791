"""A read-only turn is never written, in any shape, then or later.

``memory_options={"read_only": True}`` (one call) or ``Memory(options={"read_only": True})``
(a read-only caller beside a writable one on the same storage): the turn's messages stay in
the graph's state, and the next writable turn stores its own messages only. The store refuses
working-memory writes in a read-only run; a read-only chat history adds nothing.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_store
from langgraph.graph import START, MessagesState, StateGraph

from langchain_mastra_memory import (
    Memory,
    MemoryStorage,
    ReadOnlyError,
    ReadOnlyHistoryWarning,
)
from langchain_mastra_memory.testing import strict_model
from tests.helpers import echo_graph


def cfg(thread: str = "t", read_only: bool = False) -> dict:
    configurable: dict[str, Any] = {"thread_id": thread, "user_id": "alice"}
    if read_only:
        configurable["memory_options"] = {"read_only": True}
    return {"configurable": configurable}


def runner(app: Any, mode: str) -> Any:
    if mode == "sync":
        return app.invoke
    return lambda *args: asyncio.run(app.ainvoke(*args))


def stored(memory: Memory, thread: str = "t") -> list[str]:
    return [str(m.content) for m in memory.get_messages(thread_id=thread)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_read_only_turn_in_a_graph_is_never_stored_later(storage: MemoryStorage, mode: str):
    memory = Memory(storage=storage)
    graph = echo_graph(memory.checkpointer())
    run = runner(graph, mode)
    run({"messages": [HumanMessage("one")]}, cfg())
    run({"messages": [HumanMessage("peek")]}, cfg(read_only=True))
    assert stored(memory) == ["one", "echo: one"]
    run({"messages": [HumanMessage("two")]}, cfg())
    run({"messages": [HumanMessage("three")]}, cfg())
    assert stored(memory) == ["one", "echo: one", "two", "echo: two", "three", "echo: three"]
    state = [m.content for m in graph.get_state(cfg()).values["messages"]]
    assert "peek" in state  # the graph keeps its state: memory does not store it


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_read_only_turn_first_in_a_new_thread_is_never_stored(
    storage: MemoryStorage, mode: str
) -> None:
    memory = Memory(storage=storage)
    graph = echo_graph(memory.checkpointer())
    run = runner(graph, mode)
    run({"messages": [HumanMessage("peek")]}, cfg("fresh", read_only=True))
    run({"messages": [HumanMessage("now")]}, cfg("fresh"))
    assert stored(memory, "fresh") == ["now", "echo: now"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_read_only_memory_beside_a_writable_one_on_one_saver(
    storage: MemoryStorage, mode: str
) -> None:
    """Two callers on one storage and one saver: a read-only `Memory` (a routing agent, an
    evaluator) takes turns in alice's thread between the writable one's."""
    saver = InMemorySaver()
    writable = Memory(storage=storage)
    reader = Memory(storage=storage, options={"read_only": True})
    app, peek = echo_graph(writable.checkpointer(saver)), echo_graph(reader.checkpointer(saver))
    runner(app, mode)({"messages": [HumanMessage("one")]}, cfg())
    runner(peek, mode)({"messages": [HumanMessage("peek")]}, cfg())
    runner(app, mode)({"messages": [HumanMessage("two")]}, cfg())
    assert stored(writable) == ["one", "echo: one", "two", "echo: two"]


def agent_with_middleware(memory: Memory, replies: int) -> Any:
    from langchain.agents import create_agent

    model = strict_model(*[AIMessage(f"reply {i}") for i in range(replies)])
    return create_agent(model, middleware=[memory.middleware()], checkpointer=InMemorySaver())


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_read_only_turn_of_an_agent_with_middleware_is_never_stored(
    storage: MemoryStorage, mode: str
) -> None:
    memory = Memory(storage=storage)
    run = runner(agent_with_middleware(memory, 3), mode)
    run({"messages": [HumanMessage("one")]}, cfg())
    run({"messages": [HumanMessage("peek")]}, cfg(read_only=True))
    assert stored(memory) == ["one", "reply 0"]
    run({"messages": [HumanMessage("two")]}, cfg())
    assert stored(memory) == ["one", "reply 0", "two", "reply 2"]


def test_a_read_only_caller_cannot_mark_anothers_thread(storage: MemoryStorage) -> None:
    """Withholding is a write about a thread: bob's read-only turn on alice's thread is
    refused like any other access to it."""
    from langchain_mastra_memory import ResourceMismatchError

    memory = Memory(storage=storage)
    memory.save_turn([HumanMessage("mine", id="a1")], thread_id="t", resource_id="alice")
    reader = Memory(storage=storage, options={"read_only": True})
    with pytest.raises(ResourceMismatchError):
        reader.save_new([HumanMessage("x", id="b1")], thread_id="t", resource_id="bob")
    assert storage.withheld_ids(["b1"], thread_id="t") == set()


def store_graph(memory: Memory) -> Any:
    def remember(state: MessagesState) -> dict:
        get_store().put(("working_memory", "alice"), "current", {"content": "# Name: Mallory"})
        return {"messages": [AIMessage("noted")]}

    builder = StateGraph(MessagesState)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    return builder.compile(checkpointer=memory.checkpointer(), store=memory.store(index=False))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_store_refuses_working_memory_writes_in_a_read_only_run(
    storage: MemoryStorage, mode: str
) -> None:
    memory = Memory(storage=storage, options={"working_memory": {"enabled": True}})
    memory.update_working_memory("# Name: Alice", resource_id="alice")
    graph = store_graph(memory)
    with pytest.raises(ReadOnlyError, match="read-only"):
        runner(graph, mode)({"messages": [HumanMessage("hi")]}, cfg(read_only=True))
    assert memory.get_working_memory(resource_id="alice") == "# Name: Alice"
    runner(graph, mode)({"messages": [HumanMessage("hi")]}, cfg())  # writable: it changes
    assert memory.get_working_memory(resource_id="alice") == "# Name: Mallory"


def history_chain(memory: Memory) -> Any:
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = prompt | strict_model(AIMessage("answer"), AIMessage("again"))
    return RunnableWithMessageHistory(
        chain,
        lambda session_id: memory.chat_history(thread_id=session_id, resource_id="alice"),
        input_messages_key="question",
        history_messages_key="history",
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_read_only_memorys_chat_history_adds_nothing_and_says_so_once(
    storage: MemoryStorage, mode: str
) -> None:
    memory = Memory(storage=storage, options={"read_only": True})
    chain = history_chain(memory)
    config = {"configurable": {"session_id": "h"}}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        runner(chain, mode)({"question": "hi"}, config)
        runner(chain, mode)({"question": "hi again"}, config)
    assert memory.get_thread("h") is None  # nothing saved, not even the thread
    told = [w for w in seen if issubclass(w.category, ReadOnlyHistoryWarning)]
    assert len(told) == 1 and "adds nothing" in str(told[0].message)


def test_one_read_only_call_through_a_chat_history_adds_nothing(storage: MemoryStorage) -> None:
    memory = Memory(storage=storage)
    chain = history_chain(memory)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReadOnlyHistoryWarning)
        chain.invoke(
            {"question": "hi"},
            {"configurable": {"session_id": "h", "memory_options": {"read_only": True}}},
        )
    assert memory.get_thread("h") is None
    chain.invoke({"question": "keep"}, {"configurable": {"session_id": "h"}})
    assert stored(memory, "h") == ["keep", "again"]
