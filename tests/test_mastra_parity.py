"""Counts and kept messages equal Mastra's own TokenLimiter, on conversations it generated.

`tests/fixtures/mastra_token_limiter.json` is written by `scripts/mastra/parity.mjs`, which runs
@mastra/memory 0.15.13's TokenLimiter (js-tiktoken) on seeded random conversations: per-message
counts for every kind of message, and the messages kept at several limits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_mastra_memory import TokenCounter, TokenLimiter, TokenLimiterProcessor, TripWire

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "mastra_token_limiter.json").read_text())


def to_langchain(message: dict[str, Any], index: int) -> BaseMessage | None:
    """Mastra CoreMessage -> the LangChain message a LangChain app would hold for it."""
    role, content = message["role"], message["content"]
    if isinstance(content, str):
        return {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}[role](
            content
        )
    if role == "assistant":
        text = "".join(p["text"] for p in content if p["type"] == "text")
        calls, invalid = [], []
        for part in content:
            if part["type"] != "tool-call":
                continue
            if isinstance(part["args"], str):  # LangChain keeps unparsed argument strings here
                invalid.append(
                    {
                        "name": part["toolName"],
                        "args": part["args"],
                        "id": part["toolCallId"],
                        "error": None,
                    }
                )
            else:
                calls.append(
                    {"name": part["toolName"], "args": part["args"], "id": part["toolCallId"]}
                )
        return AIMessage(text, tool_calls=calls, invalid_tool_calls=invalid)
    (result,) = content
    if not isinstance(result["result"], str):
        return None  # LangChain tools hand objects to the model as JSON strings: no equivalent
    return ToolMessage(result["result"], tool_call_id=result["toolCallId"])


CASES = [
    (name, i, conversation)
    for name, conversations in FIXTURE["encodings"].items()
    for i, conversation in enumerate(conversations)
]


@pytest.mark.parametrize(
    ("encoding", "index", "conversation"), CASES, ids=[f"{n}-{i}" for n, i, _ in CASES]
)
def test_per_message_counts_equal_mastras(encoding: str, index: int, conversation: dict) -> None:
    counter = TokenCounter(encoding)
    compared = 0
    for i, (raw, expected) in enumerate(
        zip(conversation["messages"], conversation["counts"], strict=True)
    ):
        message = to_langchain(raw, i)
        if message is None:
            continue
        assert counter.count(message) == pytest.approx(expected, abs=1e-9), raw
        compared += 1
    assert compared >= len(conversation["messages"]) * 0.8


@pytest.mark.parametrize(
    ("encoding", "index", "conversation"), CASES, ids=[f"{n}-{i}" for n, i, _ in CASES]
)
def test_kept_messages_equal_mastras(encoding: str, index: int, conversation: dict) -> None:
    plain = [to_langchain(conversation["messages"][i], i) for i in conversation["plain_indexes"]]
    for case in conversation["limits"]:
        positions = {id(m): j for j, m in enumerate(plain)}  # by identity: texts may repeat
        kept = TokenLimiter(case["limit"], encoding=encoding).invoke(plain)  # the defaults, as
        assert [positions[id(m)] for m in kept] == case["kept"], case["limit"]  # Mastra's are
        processor = TokenLimiterProcessor(case["limit"], encoding=encoding)
        if not [i for i in case["kept"] if not isinstance(plain[i], SystemMessage)]:
            with pytest.raises(TripWire):  # Mastra's processor: nothing but system messages fits
                processor.invoke(plain)
            continue
        kept = processor.invoke(plain)
        assert [positions[id(m)] for m in kept] == case["kept"], ("processor", case["limit"])
