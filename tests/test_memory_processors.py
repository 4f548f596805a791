"""Processors on `Memory`: applied in order to remembered messages, never to the new input."""

from __future__ import annotations

import logging

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

from langchain_mastra_memory import Memory, TokenCounter, TokenLimiter, ToolCallFilter, processor
from langchain_mastra_memory.turn import context as turn_module


def fill(memory: Memory) -> None:
    memory.create_thread(resource_id="alice", thread_id="t1")
    memory.save_messages(
        [
            HumanMessage("look it up"),
            AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}]),
            ToolMessage("a very long search result " * 30, tool_call_id="c1"),
            AIMessage("found it"),
            HumanMessage("thanks"),
        ],
        thread_id="t1",
        resource_id="alice",
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_processors_run_in_order_on_recalled_messages(storage, mode) -> None:
    memory = Memory(storage=storage, processors=[ToolCallFilter(), TokenLimiter(60)])
    fill(memory)
    recalled = (
        memory.recall(thread_id="t1") if mode == "sync" else await memory.arecall(thread_id="t1")
    )
    assert [m.content for m in recalled] == ["look it up", "found it", "thanks"]


def test_new_input_counts_against_the_limiter_but_is_untouched(storage) -> None:
    seen = []
    spy = RunnableLambda(lambda msgs: seen.append(list(msgs)) or msgs)
    memory = Memory(storage=storage, processors=[spy, ToolCallFilter(), TokenLimiter(80)])
    fill(memory)
    new = [HumanMessage("a brand new question that is rather long " * 3)]
    recalled = memory.recall(thread_id="t1", new_messages=new)
    assert new[0] not in seen[0] and new[0] not in recalled
    counter = TokenCounter()
    assert counter.count_all(recalled) + counter.count(new[0]) <= 80
    assert [m.content for m in memory.recall(thread_id="t1")] == [
        "look it up",
        "found it",
        "thanks",
    ]


def test_a_plain_function_processor_on_memory(storage) -> None:
    @processor
    def drop_tools(messages):
        return [
            m
            for m in messages
            if not isinstance(m, ToolMessage) and not getattr(m, "tool_calls", None)
        ]

    memory = Memory(storage=storage, processors=[drop_tools])
    fill(memory)
    assert [m.content for m in memory.recall(thread_id="t1")] == [
        "look it up",
        "found it",
        "thanks",
    ]


def test_warns_once_when_the_limiter_is_not_last(storage, caplog, monkeypatch) -> None:
    monkeypatch.setattr(turn_module, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="langchain_mastra_memory"):
        Memory(storage=storage, processors=[TokenLimiter(100), ToolCallFilter()])
        Memory(storage=storage, processors=[TokenLimiter(100), ToolCallFilter()])
        Memory(storage=storage, processors=[ToolCallFilter(), TokenLimiter(100)])
    assert caplog.text.count("TokenLimiter is not the last") == 1
