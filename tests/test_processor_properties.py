"""Property-based tests over random conversations with tool calls (hypothesis)."""

from __future__ import annotations

import copy
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_mastra_memory import TokenCounter, TokenLimiter, ToolCallFilter, TripWire

COUNTER = TokenCounter()
TOOLS = ["search", "draw", "weather"]
texts = st.text(alphabet=st.sampled_from(list("abc xyz 東京🙂é,.\n")), min_size=0, max_size=60)
ids = itertools.count()


def next_id() -> str:
    return f"m{next(ids)}"


@st.composite
def conversations(draw) -> list[BaseMessage]:
    messages: list[BaseMessage] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["human", "ai", "tools", "system", "orphan"]))
        if kind == "human":
            messages.append(HumanMessage(draw(texts), id=next_id()))
        elif kind == "ai":
            messages.append(AIMessage(draw(texts), id=next_id()))
        elif kind == "system":
            messages.append(SystemMessage(draw(texts), id=next_id()))
        elif kind == "orphan":
            messages.append(ToolMessage(draw(texts), tool_call_id=f"gone{next(ids)}", id=next_id()))
        else:
            calls = [
                {
                    "name": draw(st.sampled_from(TOOLS)),
                    "args": {"q": draw(texts)},
                    "id": f"c{next(ids)}",
                }
                for _ in range(draw(st.integers(1, 3)))
            ]
            messages.append(AIMessage(draw(texts), tool_calls=calls, id=next_id()))
            answered = draw(st.permutations(calls))
            messages += [
                ToolMessage(draw(texts), tool_call_id=c["id"], name=c["name"], id=next_id())
                for c in answered
            ]
    return messages


def units(messages: list[BaseMessage]) -> list[set[str]]:
    """Independent grouping: each non-system, non-orphan message with its tool results."""
    call_owner: dict[str, str] = {}
    groups: dict[str, set[str]] = {}
    for m in messages:
        if isinstance(m, SystemMessage):
            continue
        if isinstance(m, ToolMessage):
            owner = call_owner.get(m.tool_call_id)
            if owner is not None:
                groups[owner].add(m.id)
            continue
        groups[m.id] = {m.id}
        for call in getattr(m, "tool_calls", []):
            call_owner[call["id"]] = m.id
    return list(groups.values())


def assert_no_orphans(messages: list[BaseMessage]) -> None:
    calls: set[str] = set()
    for m in messages:
        if isinstance(m, AIMessage):
            calls.update(c["id"] for c in m.tool_calls)
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in calls


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(conversations(), st.integers(1, 400))
def test_token_limiter_properties(messages: list[BaseMessage], limit: int) -> None:
    before = copy.deepcopy([m.model_dump() for m in messages])
    original_list = list(messages)
    try:
        out = TokenLimiter(limit).invoke(messages)
    except TripWire as trip:
        systems = [m for m in messages if isinstance(m, SystemMessage)]
        assert 24 + sum(COUNTER.count(m) for m in systems) > limit
        assert trip.metadata["limit"] == limit
        return
    # input untouched
    assert messages == original_list and [m.model_dump() for m in messages] == before
    # within the limit, by the same counter
    assert COUNTER.count_all(out) <= limit + 1e-9
    # system messages kept
    assert [m for m in out if isinstance(m, SystemMessage)] == [
        m for m in messages if isinstance(m, SystemMessage)
    ]
    # order kept: a subsequence of the input, by identity
    positions = [next(i for i, x in enumerate(messages) if x is m) for m in out]
    assert positions == sorted(positions)
    assert_no_orphans(out)
    # a suffix by groups: the kept units are the newest ones, whole
    kept_ids = {m.id for m in out if not isinstance(m, SystemMessage)}
    groups = units(messages)
    kept_units = [g for g in groups if g & kept_ids]
    assert all(g <= kept_ids for g in kept_units)
    assert kept_units == groups[len(groups) - len(kept_units) :]
    assert set().union(*kept_units) == kept_ids if kept_units else not kept_ids


@SETTINGS
@given(conversations(), st.one_of(st.none(), st.lists(st.sampled_from(TOOLS), max_size=3)))
def test_tool_call_filter_properties(messages: list[BaseMessage], exclude) -> None:
    before = copy.deepcopy([m.model_dump() for m in messages])
    out = ToolCallFilter(exclude=exclude).invoke(messages)
    assert [m.model_dump() for m in messages] == before  # input untouched
    out_ids = [m.id for m in out]
    in_ids = [m.id for m in messages]
    assert out_ids == [i for i in in_ids if i in set(out_ids)]  # order kept
    removed = set(TOOLS) if exclude is None else set(exclude)
    originals = {m.id: m for m in messages}
    for m in out:
        if isinstance(m, AIMessage):
            assert not {c["name"] for c in m.tool_calls} & removed
            if m is not originals[m.id]:  # a message the filter changed is never left empty
                assert m.tool_calls or m.content
        if isinstance(m, ToolMessage):
            assert m.name not in removed
    if exclude == []:
        assert out == messages
