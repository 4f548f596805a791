"""`MemoryProcessor` as a Runnable: invoke/ainvoke/batch/stream, `|`, LCEL, custom processors."""

from __future__ import annotations

import pytest
from helpers import scripted
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda

from langchain_mastra_memory import (
    InvalidMessageError,
    MemoryProcessor,
    TokenLimiter,
    ToolCallFilter,
    processor,
)

HISTORY = [
    SystemMessage("You are terse."),
    HumanMessage("hi"),
    AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": "x"}, "id": "c1"}]),
    ToolMessage("found", tool_call_id="c1"),
    AIMessage("hello"),
]


class ConversationOnlyFilter(MemoryProcessor):
    """Mastra's documented custom processor: keep only user and assistant messages."""

    name = "ConversationOnlyFilter"

    def process(self, messages, **opts):
        return [m for m in messages if m.type in ("human", "ai")]


@processor(name="ConversationOnlyFilter")
def conversation_only(messages):
    return [m for m in messages if m.type in ("human", "ai")]


@processor
async def shout(messages):
    return [m.model_copy(update={"content": str(m.content).upper()}) for m in messages]


@pytest.mark.parametrize(
    "custom", [ConversationOnlyFilter(), conversation_only], ids=["subclass", "function"]
)
async def test_custom_processor_both_ways(custom) -> None:
    expected = [HISTORY[1], HISTORY[2], HISTORY[4]]
    assert custom.invoke(HISTORY) == expected
    assert await custom.ainvoke(HISTORY) == expected
    assert custom.batch([HISTORY, HISTORY[:2]]) == [expected, [HISTORY[1]]]
    assert list(custom.stream(HISTORY)) == [expected]
    assert custom.get_name() == "ConversationOnlyFilter"


async def test_async_function_processor() -> None:
    assert [m.content for m in await shout.ainvoke([HumanMessage("hi")])] == ["HI"]
    with pytest.raises(NotImplementedError, match="async only"):
        shout.invoke([HumanMessage("hi")])


def test_processors_compose_with_pipe_in_order() -> None:
    chain = ToolCallFilter() | ConversationOnlyFilter() | TokenLimiter(1000)
    assert [m.content for m in chain.invoke(HISTORY)] == ["hi", "hello"]
    # order matters: the limiter sees what the filters left
    small = ToolCallFilter() | TokenLimiter(30)  # 24 + 5.8 for "hello"; "hi" would need 35.6
    assert [m.content for m in small.invoke(HISTORY[1:])] == ["hello"]


def test_processors_inside_an_lcel_chain_with_prompt_and_model() -> None:
    model = scripted(AIMessage("sure"))
    seen = []
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Be nice."), MessagesPlaceholder("history")]
    )
    chain = (
        ToolCallFilter()
        | TokenLimiter(200)
        | RunnableLambda(lambda msgs: {"history": msgs})
        | prompt
        | RunnableLambda(lambda p: seen.append(p.to_messages()) or p)
        | model
    )
    assert chain.invoke(HISTORY).content == "sure"
    assert [m.content for m in seen[0]] == ["Be nice.", "You are terse.", "hi", "hello"]


@pytest.mark.parametrize(
    "bad", [["text"], [HumanMessage("ok"), {"role": "user"}], "a string", HumanMessage("lone")]
)
@pytest.mark.parametrize("proc", [TokenLimiter(100), ToolCallFilter(), conversation_only])
async def test_non_messages_are_refused(proc, bad) -> None:
    with pytest.raises(InvalidMessageError):
        proc.invoke(bad)
    with pytest.raises(InvalidMessageError):
        await proc.ainvoke(bad)


def test_config_reaches_process_as_an_option() -> None:
    captured = {}

    class Peek(MemoryProcessor):
        name = "Peek"

        def process(self, messages, **opts):
            captured.update(opts["config"]["configurable"])
            return list(messages)

    Peek().invoke([], {"configurable": {"thread_id": "t1", "resource_id": "alice"}})
    assert captured == {"thread_id": "t1", "resource_id": "alice"}
