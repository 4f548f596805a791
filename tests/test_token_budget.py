"""History by a token budget (``message_tokens``, Mastra's ``messageTokens``): over 60 turns the
context is never over the budget, the history's first message moves only at drops, each drop
frees at least ``at_max_remove_tokens``; the same in every shape (memory's own context, an
agent's middleware reading the graph's state), in two processes on one file, with a read-only
caller beside (it moves nothing); ``last_messages`` caps the count on top; bad options name
themselves."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_mastra_memory import ConfigurationError, Memory, MemoryStorage, SQLiteStorage
from langchain_mastra_memory.provider_rules import provider_violations
from langchain_mastra_memory.testing import strict_model
from langchain_mastra_memory.tokens.counting import TokenCounter
from langchain_mastra_memory.turn.history import BOUNDARY_KEY, MessageTokens

BUDGET = {"max_tokens": 400, "at_max_remove_tokens": 100}
COUNTER = TokenCounter()


def turn(i: int) -> list[BaseMessage]:
    """A user question and an answer; every fifth turn has a tool call and its result."""
    question = HumanMessage(f"Question {i}: tell me about the city number {i} and its parks.")
    if i % 5:
        return [question, AIMessage(f"Answer {i}: it has {i % 7 + 2} parks and a river.")]
    call = {"name": "lookup", "args": {"city": str(i)}, "id": f"call-{i}", "type": "tool_call"}
    return [question, AIMessage("", tool_calls=[call]),
            ToolMessage(f"city {i}: parks " * 6, tool_call_id=f"call-{i}"),
            AIMessage(f"Answer {i}: found it.")]  # fmt: skip


def boundary(memory: Memory, thread_id: str = "t") -> Any:
    thread = memory.get_thread(thread_id)
    return None if thread is None else (thread.metadata.get(BOUNDARY_KEY) or {}).get("message_id")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sixty_turns_stay_within_the_budget_and_the_start_moves_only_at_drops(
    storage: MemoryStorage, mode: str
) -> None:
    memory = Memory(storage=storage, options={"message_tokens": BUDGET})
    ref = {"thread_id": "t", "resource_id": "alice"}
    firsts, boundaries, histories = [], [], []
    for i in range(60):
        messages = turn(i)
        new = messages[:1]
        if mode == "sync":
            sent = memory.context(new, **ref)
        else:
            sent = asyncio.run(memory.acontext(new, **ref))
        assert COUNTER.count_all(sent) <= BUDGET["max_tokens"], i  # never over it
        assert provider_violations(sent) == []  # a tool result never without its call
        history = sent[:-1]
        histories.append(history)
        firsts.append(history[0].id if history else None)
        boundaries.append(boundary(memory))
        memory.save_turn(messages, **ref)
    drops = sum(a != b for a, b in itertools.pairwise(boundaries))
    assert drops >= 3  # 60 turns of ~35 tokens overflow 400 many times over
    for n in range(1, 60):
        if boundaries[n] == boundaries[n - 1] and firsts[n - 1] is not None:
            assert firsts[n] == firsts[n - 1], n  # the start stays put between drops
        elif boundaries[n] != boundaries[n - 1] and histories[n - 1]:  # a drop: at least R gone
            gone = [m for m in histories[n - 1] if m.id not in {k.id for k in histories[n]}]
            assert sum(COUNTER.count(m) for m in gone) >= BUDGET["at_max_remove_tokens"], n


def test_an_agents_middleware_and_another_process_see_the_same_history(tmp_path: Any) -> None:
    from langchain.agents import create_agent

    path = tmp_path / "m.db"
    options = {"message_tokens": BUDGET}
    one, two = Memory(storage=SQLiteStorage(path), options=options), Memory(
        storage=SQLiteStorage(path), options=options)  # fmt: skip
    model = strict_model(*[AIMessage(f"Answer {i}: it has parks and a river.") for i in range(40)])
    agents = [create_agent(model, middleware=[m.middleware()]) for m in (one, two)]
    config = {"configurable": {"thread_id": "t", "user_id": "alice"}}
    starts = []
    for i in range(40):  # the two processes take turns
        agents[i % 2].invoke({"messages": [HumanMessage(f"Question {i} about parks.")]}, config)
        seen = model.seen[-1]
        assert COUNTER.count_all(seen) <= BUDGET["max_tokens"], i
        starts.append((seen[0].id, boundary(one)))
        # memory's own context for the next turn starts where the middleware's did
        again = two.context([HumanMessage("next")], thread_id="t", resource_id="alice")
        assert again[0].id == seen[0].id or boundary(one) != starts[-1][1]
    moves = [n for n in range(1, 40) if starts[n][0] != starts[n - 1][0]]
    assert moves and all(starts[n][1] != starts[n - 1][1] for n in moves)  # only at drops
    assert len(one.get_messages(thread_id="t")) == 80  # nothing lost: memory keeps it all


def test_a_read_only_caller_moves_no_boundary() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"), options={"message_tokens": BUDGET})
    reader = Memory(storage=memory.storage, options={"message_tokens": BUDGET, "read_only": True})
    ref = {"thread_id": "t", "resource_id": "alice"}
    for i in range(14):
        memory.save_turn(turn(i), **ref)
    sent = reader.context([HumanMessage("and now?")], **ref)
    assert COUNTER.count_all(sent) <= BUDGET["max_tokens"]
    assert boundary(memory) is None  # it computed its own drop and wrote nothing
    memory.context([HumanMessage("and now?")], **ref)
    assert boundary(memory) is not None


def test_last_messages_caps_the_count_on_top_of_the_budget() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"),
                    options={"message_tokens": {"max_tokens": 100_000}, "last_messages": 6,
                             "history_window": "sliding"})  # fmt: skip
    budget_only = Memory(
        storage=memory.storage, options={"message_tokens": {"max_tokens": 100_000}}
    )
    ref = {"thread_id": "t", "resource_id": "alice"}
    for i in range(10):
        memory.save_turn(turn(i), **ref)
    assert len(memory.context([HumanMessage("q")], **ref)) == 7
    held = len(memory.get_messages(thread_id="t"))
    assert len(budget_only.context([HumanMessage("q")], **ref)) == held + 1  # the budget alone


@pytest.mark.parametrize(
    "value",
    [{"max_tokens": 0}, {"max_tokens": -5}, {"max_tokens": "400"}, {"max_tokens": True},
     {"max_tokens": 100, "at_max_remove_tokens": 101}, {"max_tokens": 100, "at_max_remove_tokens": 0},
     {"max_tokens": 100, "extra": 1}, {"max_tokens": 100, "encoding": "no-such-encoding"}, [400]],
)  # fmt: skip
def test_a_bad_budget_is_a_configuration_error_naming_it(value: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"message_tokens|encoding"):
        Memory(storage=SQLiteStorage(":memory:"), options={"message_tokens": value})


def test_the_default_removal_is_a_quarter_of_the_budget() -> None:
    assert MessageTokens.parse({"max_tokens": 1000}).at_max_remove_tokens == 250


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_read_only_context_leaves_the_boundary_where_it_is(
    storage: MemoryStorage, mode: str
) -> None:
    """``memory.context(..., read_only=True)`` (a sub-agent's context) fits the budget as any
    turn does, and changes nothing of the thread: the boundary a plain call would move stays."""
    memory = Memory(storage=storage, options={"message_tokens": BUDGET})
    ref = {"thread_id": "t", "resource_id": "alice"}
    for i in range(30):
        memory.save_turn(turn(i), **ref)
    new = [HumanMessage("And the parks of city 3?")]

    def context(**extra: Any) -> list[BaseMessage]:
        if mode == "sync":
            return memory.context(new, **ref, **extra)
        return asyncio.run(memory.acontext(new, **ref, **extra))

    sent = context(read_only=True)
    assert COUNTER.count_all(sent) <= BUDGET["max_tokens"]
    assert boundary(memory) is None  # over the budget, yet nothing written
    assert context() == sent  # the same context a writing call builds ...
    assert boundary(memory) is not None  # ... which moves the boundary
