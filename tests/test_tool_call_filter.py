"""`ToolCallFilter`: remove all, or only the named tools; text kept; copies, not mutations."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_mastra_memory import ConfigurationError, ToolCallFilter

PARALLEL = AIMessage(
    "Let me draw and search.",
    tool_calls=[
        {"name": "draw", "args": {"prompt": "cat"}, "id": "c1"},
        {"name": "search", "args": {"q": "cats"}, "id": "c2"},
    ],
    additional_kwargs={
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "draw", "arguments": '{"prompt":"cat"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q":"cats"}'},
            },
        ]
    },
)
DRAW_RESULT = ToolMessage("<png bytes>", tool_call_id="c1", name="draw")
SEARCH_RESULT = ToolMessage("cats are great", tool_call_id="c2", name="search")
ONLY_CALL = AIMessage("", tool_calls=[{"name": "draw", "args": {"prompt": "dog"}, "id": "c3"}])
DOG_RESULT = ToolMessage("<png>", tool_call_id="c3")
HISTORY = [
    HumanMessage("draw a cat"),
    PARALLEL,
    DRAW_RESULT,
    SEARCH_RESULT,
    ONLY_CALL,
    DOG_RESULT,
    AIMessage("Done."),
]


def test_default_removes_every_call_and_result_but_keeps_text() -> None:
    out = ToolCallFilter().invoke(HISTORY)
    assert [m.content for m in out] == ["draw a cat", "Let me draw and search.", "Done."]
    assert out[1].tool_calls == [] and "tool_calls" not in out[1].additional_kwargs
    assert not any(isinstance(m, ToolMessage) for m in out)


def test_exclude_removes_only_the_named_tools() -> None:
    out = ToolCallFilter(exclude=["draw"]).invoke(HISTORY)
    assert out == [HISTORY[0], out[1], SEARCH_RESULT, HISTORY[-1]]
    assert [c["name"] for c in out[1].tool_calls] == ["search"]
    assert [c["id"] for c in out[1].additional_kwargs["tool_calls"]] == ["c2"]
    assert out[1].content == "Let me draw and search."


def test_exclude_empty_changes_nothing() -> None:
    assert ToolCallFilter(exclude=[]).invoke(HISTORY) == HISTORY


def test_unknown_tool_names_change_nothing() -> None:
    assert ToolCallFilter(exclude=["nope"]).invoke(HISTORY) == HISTORY


def test_tool_use_content_blocks() -> None:
    anthropic_style = AIMessage(
        [
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}},
            {"type": "tool_use", "id": "t2", "name": "draw", "input": {"p": "y"}},
        ],
        tool_calls=[
            {"name": "search", "args": {"q": "x"}, "id": "t1"},
            {"name": "draw", "args": {"p": "y"}, "id": "t2"},
        ],
    )
    history = [
        anthropic_style,
        ToolMessage("hit", tool_call_id="t1"),
        ToolMessage("img", tool_call_id="t2"),
    ]
    out = ToolCallFilter(exclude=["draw"]).invoke(history)
    assert [b.get("id") for b in out[0].content] == [None, "t1"]
    assert [m.content for m in out[1:]] == ["hit"]
    only_blocks = AIMessage([{"type": "tool_use", "id": "t9", "name": "draw", "input": {}}])
    assert (
        ToolCallFilter(exclude=["draw"]).invoke([only_blocks, ToolMessage("x", tool_call_id="t9")])
        == []
    )


def test_orphan_tool_messages() -> None:
    orphan_named = ToolMessage("?", tool_call_id="gone", name="draw")
    orphan_anon = ToolMessage("?", tool_call_id="gone2")
    history = [HumanMessage("hi"), orphan_named, orphan_anon]
    assert ToolCallFilter(exclude=["draw"]).invoke(history) == [history[0], orphan_anon]
    assert ToolCallFilter().invoke(history) == [history[0]]


@pytest.mark.parametrize("bad", ["draw", [1, 2], [None]])
def test_exclude_must_be_a_list_of_names(bad) -> None:
    with pytest.raises(ConfigurationError):
        ToolCallFilter(exclude=bad)
