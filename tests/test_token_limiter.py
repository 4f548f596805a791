"""`TokenLimiter`: Mastra's walk, system messages, tool-call units, bad input."""

from __future__ import annotations

import logging
import math

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_mastra_memory import (
    ConfigurationError,
    EncodingNotAvailableError,
    MessageList,
    TokenCounter,
    TokenLimiter,
    TripWire,
)
from langchain_mastra_memory.messages import system_positions

COUNTER = TokenCounter()


def cost(*messages) -> float:
    return sum(COUNTER.count(m) for m in messages)


def turn(i: int) -> list:
    return [HumanMessage(f"question {i}"), AIMessage(f"answer {i}")]


def test_keeps_the_newest_messages_that_fit() -> None:
    history = [m for i in range(10) for m in turn(i)]
    budget = 24 + cost(*history[-4:])
    assert TokenLimiter(math.ceil(budget)).invoke(history) == history[-4:]
    assert TokenLimiter(math.ceil(budget) - 1).invoke(history) == history[-3:]
    assert TokenLimiter(10**6).invoke(history) == history


def test_stops_at_the_first_message_that_does_not_fit() -> None:
    big = HumanMessage("word " * 500)
    history = [HumanMessage("tiny old"), big, AIMessage("tiny new")]
    kept = TokenLimiter(int(24 + cost(history[0], history[2])) + 1).invoke(history)
    assert kept == [history[2]]  # "tiny old" would fit, but the walk stopped at the big one


def test_system_messages_are_kept_and_count() -> None:
    system = SystemMessage("You are a helpful assistant. " * 5)
    history = [system, *turn(1), *turn(2)]
    limit = int(24 + cost(system, *history[-2:])) + 1
    assert TokenLimiter(limit).invoke(history) == [system, *history[-2:]]
    # no room for anything else: only the system message comes out
    assert TokenLimiter(int(24 + cost(system)) + 1).invoke(history) == [system]


def test_system_messages_alone_over_the_limit_trip() -> None:
    system = SystemMessage("rules " * 100)
    with pytest.raises(TripWire) as info:
        TokenLimiter(50).invoke([system, HumanMessage("hi")])
    assert info.value.metadata["limit"] == 50
    assert info.value.metadata["system_tokens"] == pytest.approx(cost(system))
    assert "system messages" in str(info.value)


def test_empty_in_empty_out() -> None:
    assert TokenLimiter(100).invoke([]) == []


def test_a_single_message_bigger_than_the_limit_gives_nothing() -> None:
    assert TokenLimiter(100).invoke([HumanMessage("word " * 500)]) == []


def test_a_tool_call_and_its_results_go_together() -> None:
    call = AIMessage(
        "checking the two sources now, one moment please " * 3,
        tool_calls=[
            {"name": "a", "args": {"x": 1}, "id": "c1"},
            {"name": "b", "args": {"y": 2}, "id": "c2"},
        ],
    )
    r1 = ToolMessage("result one " * 3, tool_call_id="c1")
    r2 = ToolMessage("result two " * 3, tool_call_id="c2")
    final = AIMessage("done")
    history = [HumanMessage("go"), call, r1, r2, final]
    unit = cost(call, r1, r2)
    # room for the final answer and the results, but not the call: the whole unit goes
    limit = int(24 + cost(final, r1, r2)) + 1
    assert limit < 24 + cost(final) + unit
    assert TokenLimiter(limit).invoke(history) == [final]
    # room for the unit: it stays whole
    limit = int(24 + cost(final) + unit) + 1
    assert TokenLimiter(limit).invoke(history) == [call, r1, r2, final]


def test_orphan_tool_results_are_dropped_not_crashed_on() -> None:
    history = [HumanMessage("hi"), ToolMessage("stray", tool_call_id="nobody"), AIMessage("hello")]
    assert TokenLimiter(1000).invoke(history) == [history[0], history[2]]


def test_block_content_is_counted() -> None:
    blocks = HumanMessage(
        [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 400}},
        ]
    )
    tool_use = AIMessage(
        [
            {"type": "text", "text": "searching"},
            {"type": "tool_use", "id": "t1", "name": "s", "input": {"q": "a"}},
        ],
        tool_calls=[{"name": "s", "args": {"q": "a"}, "id": "t1"}],
    )
    result = ToolMessage([{"type": "text", "text": "hit"}], tool_call_id="t1")
    history = [blocks, tool_use, result]
    assert TokenLimiter(10_000).invoke(history) == history
    kept = TokenLimiter(int(24 + cost(tool_use, result)) + 1).invoke(history)
    assert kept == [tool_use, result]


def test_new_messages_count_against_the_budget_first() -> None:
    history = [m for i in range(3) for m in turn(i)]
    new = [HumanMessage("a fairly long new question " * 4)]
    limit = int(24 + cost(*history)) + 1
    assert TokenLimiter(limit).invoke(history) == history
    with_new = TokenLimiter(limit).invoke(history, new_messages=new)
    assert len(with_new) < len(history) and with_new == history[-len(with_new) :]


@pytest.mark.parametrize("bad", [0, -5, 1.5, "100", None, True])
def test_limit_must_be_a_positive_int(bad) -> None:
    with pytest.raises(ConfigurationError, match="positive integer"):
        TokenLimiter(bad)


def test_encodings() -> None:
    history = [HumanMessage("naïve café 東京 " * 30), AIMessage("ok")]
    o200k, cl100k = TokenLimiter(60), TokenLimiter(limit=60, encoding="cl100k_base")
    assert o200k.counter.encoding.name == "o200k_base"
    assert cl100k.counter.encoding.name == "cl100k_base"
    enc = tiktoken.Encoding(  # any tiktoken.Encoding may be given
        name="cl100k_clone",
        pat_str=cl100k.counter.encoding._pat_str,
        mergeable_ranks=cl100k.counter.encoding._mergeable_ranks,
        special_tokens={},
    )
    assert TokenLimiter(60, encoding=enc).invoke(history) == cl100k.invoke(history)
    with pytest.raises(EncodingNotAvailableError):
        TokenLimiter(100, encoding="gpt-7-base")


def test_logs_how_many_were_filtered(caplog) -> None:
    with caplog.at_level(logging.INFO, logger="langchain_mastra_memory"):
        TokenLimiter(40).invoke([HumanMessage("x " * 100), AIMessage("y")])
    assert "filtered 1/2 messages, token limit of 40 exceeded" in caplog.text


# -- MessageList: stored histories know their system messages -----------------------------------

KINDS = {
    "human": lambda i: HumanMessage(f"question {i} " * (i % 5 + 1)),
    "ai": lambda i: AIMessage(f"answer {i} " * (i % 3 + 1)),
    "system": lambda i: SystemMessage(f"rule {i}"),
}


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(sorted(KINDS)), max_size=30),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["append", "insert", "setitem", "delitem", "pop", "reverse"]),
            st.integers(0, 40),
            st.sampled_from(sorted(KINDS)),
        ),
        max_size=4,
    ),
    limit=st.integers(30, 200),
)
def test_a_message_list_limits_exactly_like_a_plain_list(kinds, edits, limit) -> None:
    messages = [KINDS[k](i) for i, k in enumerate(kinds)]
    listed = MessageList(messages)
    plain = list(messages)
    for op, at, kind in edits:  # every change forgets the positions: no stale hint survives
        new = KINDS[kind](at)
        for target in (listed, plain):
            if op == "append":
                target.append(new)
            elif op == "insert":
                target.insert(at, new)
            elif target and op == "setitem":
                target[at % len(target)] = new
            elif target and op == "delitem":
                del target[at % len(target)]
            elif target and op == "pop":
                target.pop(at % len(target))
            elif op == "reverse":
                target.reverse()
    assert listed == plain
    assert system_positions(listed) == [i for i, m in enumerate(plain) if m.type == "system"]
    limiter = TokenLimiter(limit)
    try:
        expected = limiter.invoke(plain)
    except TripWire:
        with pytest.raises(TripWire):
            limiter.invoke(listed)
        return
    assert limiter.invoke(listed) == expected


def test_get_messages_returns_a_message_list_that_keeps_stored_system_messages(tmp_path) -> None:
    from langchain_mastra_memory import Memory, SQLiteStorage

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options={"semantic_recall": False})
    memory.create_thread(thread_id="t", resource_id="r")
    rule = SystemMessage("always answer in French")
    memory.save_messages(
        [rule] + [m for i in range(50) for m in turn(i)], thread_id="t", resource_id="r"
    )
    history = memory.get_messages(thread_id="t")
    assert isinstance(history, MessageList) and system_positions(history) == [0]
    kept = TokenLimiter(60).invoke(history)
    assert kept[0].content == rule.content and kept[-1].content == "answer 49"
    assert len(kept) < len(history)
