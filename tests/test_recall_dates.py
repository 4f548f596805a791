"""Recall's date rule: a query naming a calendar date puts the pool's messages of that date first."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.recall.ranking import NamedDate, named_date


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("When did Melanie go camping in June?", NamedDate(None, 6, None)),
        ("What did she show on October 13, 2023?", NamedDate(2023, 10, 13)),
        ("What happened on 8 May, 2023?", NamedDate(2023, 5, 8)),
        ("the 3rd of March 2021", NamedDate(2021, 3, 3)),
        ("What setback did she face in October 2023?", NamedDate(2023, 10, None)),
        ("How often did she go to the beach in 2023?", NamedDate(2023, None, None)),
        ("May I ask what you cooked?", None),  # a modal verb, not a month
        ("We march on together", None),
        ("Call me at 2023 Main Street", None),  # a number, not a year
        ("What is my sister's dog called?", None),
    ],
)
def test_the_dates_a_query_names(query: str, named: NamedDate | None) -> None:
    assert named_date(query) == named


def at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, 12, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("named", "moment", "holds"),
    [
        (NamedDate(2023, 10, 13), at(2023, 10, 20), True),  # within DAY_SPAN days
        (NamedDate(2023, 10, 13), at(2023, 11, 20), False),
        (NamedDate(None, 6, None), at(2021, 6, 30), True),  # a month of any year
        (NamedDate(2023, 6, None), at(2022, 6, 30), False),
        (NamedDate(2023, None, None), at(2023, 1, 1), True),
        (NamedDate(2023, 2, 30), at(2023, 3, 1), False),  # no such day: nothing matches
    ],
)
def test_which_messages_a_named_date_holds(named: NamedDate, moment: datetime, holds: bool) -> None:
    assert named.holds(moment) is holds


MEALS = [  # (text, when): the same kind of turn on different dates
    ("I cooked a curry with lentils for dinner.", at(2024, 1, 10)),
    ("I cooked a mushroom risotto for dinner.", at(2024, 3, 12)),
    ("I cooked a pasta with lentils for dinner tonight.", at(2024, 5, 2)),
]


def meal_memory(**recall: Any) -> Memory:
    memory = Memory(
        storage=SQLiteStorage(":memory:"),
        options={"semantic_recall": {"top_k": 1, "message_range": 0, **recall}},
    )
    for n, (text, when) in enumerate(MEALS):
        memory.create_thread(thread_id=f"t{n}", resource_id="alice")
        memory.save_messages(
            [HumanMessage(text)], thread_id=f"t{n}", resource_id="alice", created_at=[when]
        )
    memory.create_thread(thread_id="b1", resource_id="bob")  # another resource, same date
    memory.save_messages(
        [HumanMessage("I cooked a fish soup for dinner.")],
        thread_id="b1",
        resource_id="bob",
        created_at=[at(2024, 3, 12)],
    )
    memory.flush()
    return memory


def top(memory: Memory, query: str) -> str:
    index = memory.recall_index
    assert index is not None
    (hit,) = index.search(query, resource_id="alice")
    (found,) = memory.storage.get_messages_by_id([hit.message_id], resource_id="alice")
    return str(found.message.content)


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
def test_a_query_naming_a_date_recalls_that_dates_turn_first(mode: str) -> None:
    question = "What did I cook with lentils for dinner"
    memory = meal_memory(mode=mode)
    undated = top(memory, f"{question}?")
    assert "risotto" not in undated  # by its words alone, a lentil dish comes first
    assert top(memory, f"{question} in March 2024?") == MEALS[1][0]
    assert top(memory, f"{question} on March 14?") == MEALS[1][0]
    assert top(memory, f"{question} in 2019?") == undated  # nothing then: the order stands
    off = meal_memory(mode=mode, date_rule=False)
    assert top(off, f"{question} in March 2024?") != MEALS[1][0]


async def test_async_recall_applies_the_date_rule_too() -> None:
    memory = meal_memory()
    messages = await memory.arecall(
        new_messages=[HumanMessage("What did I cook with lentils for dinner in March 2024?")],
        thread_id="t9",
        resource_id="alice",
    )
    (remembered,) = messages  # one turn from another thread, as Mastra puts it
    assert MEALS[1][0] in str(remembered.content)
    assert "fish soup" not in str(remembered.content)  # never bob's turn of that date


@pytest.mark.parametrize("bad", ["sometimes", 3, None])
def test_a_date_rule_that_is_not_a_switch_is_refused(bad: object) -> None:
    from langchain_mastra_memory import ConfigurationError

    with pytest.raises(ConfigurationError, match="date_rule"):
        Memory(storage=SQLiteStorage(":memory:"), options={"semantic_recall": {"date_rule": bad}})
