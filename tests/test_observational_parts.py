"""Observational memory's parts so far: the prompts (checked for format with scripted models),
the tolerant parser (never loses a line, never raises), Observer and Reflector as Runnables."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langchain_mastra_memory import ConfigurationError
from langchain_mastra_memory.messages import neutralised
from langchain_mastra_memory.observational import (
    Entry,
    Observer,
    Reflector,
    context_block,
    format_entries,
    parse_log,
)


class Recording(FakeListChatModel):
    asked: list = []  # noqa: RUF012 - given per instance

    def _call(self, messages, *args, **kwargs):
        self.asked.append(messages)
        return super()._call(messages, *args, **kwargs)


REPLY = """<observations>
Date: 2026-11-20
- [high] (09:12) User stated "I'm allergic to peanuts".
- [medium] (09:13) Assistant suggested a peanut-free recipe.
Date: 2026-11-21
- [high] (18:40) User's sister Marta marries on 2027-06-14.
</observations>
<current-task>
Planning the wedding menu.
</current-task>"""


def test_the_observer_is_asked_with_dates_priorities_and_the_log() -> None:
    model = Recording(responses=[REPLY], asked=[])
    at = datetime(2026, 11, 20, 9, 12, tzinfo=timezone.utc)
    parsed = Observer(model).invoke(
        {
            "messages": [HumanMessage("I'm allergic to peanuts"), AIMessage("Noted!")],
            "times": [at, at],
            "log": "Date: 2026-11-19\n- [low] User said hello.",
        }
    )
    (prompt,) = model.asked
    assert isinstance(prompt[0], SystemMessage)
    for rule in ("[high]", "Date: YYYY-MM-DD", "own words", "<current-task>"):
        assert rule in prompt[0].content
    assert "- [low] User said hello." in prompt[1].content  # the log so far
    assert "[2026-11-20 09:12 user] I'm allergic to peanuts" in prompt[1].content
    assert "[2026-11-20 09:12 assistant] Noted!" in prompt[1].content
    assert [e.priority for e in parsed.entries] == ["high", "medium", "high"]
    assert parsed.entries[0] == Entry(
        "2026-11-20", "high", '(09:12) User stated "I\'m allergic to peanuts".'
    )
    assert parsed.entries[2].date == "2026-11-21"
    assert parsed.current_task == "Planning the wedding menu."


def test_the_reflector_sync_and_async() -> None:
    condensed = "Date: 2026-11-20\n- [high] User is allergic to peanuts."
    model = Recording(responses=[condensed, condensed], asked=[])
    reflector = Reflector(model)
    assert reflector.invoke({"log": REPLY}).entries == [
        Entry("2026-11-20", "high", "User is allergic to peanuts.")
    ]
    assert asyncio.run(reflector.ainvoke({"log": REPLY})).entries[0].priority == "high"
    assert "Keep every high-priority observation" in model.asked[0][0].content
    assert neutralised(REPLY) in model.asked[0][1].content  # its tags cannot close the fence


def test_async_observer() -> None:
    model = FakeListChatModel(responses=["- [high] Likes tea"])
    parsed = asyncio.run(Observer(model).ainvoke({"messages": [HumanMessage("tea!")], "log": ""}))
    assert parsed.entries == [Entry(None, "high", "Likes tea")]


@pytest.mark.parametrize(
    ("reply", "entries", "task"),
    [
        (  # no closing tag, emoji priorities, a markdown heading for the date
            "<observations>\n## 2026-11-20\n* 🔴 Allergic to peanuts\n* 🟢 Said hi",
            [("2026-11-20", "high", "Allergic to peanuts"), ("2026-11-20", "low", "Said hi")],
            None,
        ),
        (  # reasoning first, bold date, numbered list, priority words
            "<think>let me see</think>**Date:** 2026-11-21\n1. high: Moved to Lisbon\n"
            "2. (medium) Asked about trams",
            [
                ("2026-11-21", "high", "Moved to Lisbon"),
                ("2026-11-21", "medium", "Asked about trams"),
            ],
            None,
        ),
        (  # prose lines are kept, an indented line continues the entry above
            "The user likes tea.\n- [high] Works at the aquarium\n    with octopuses\n"
            "<current-task>Feeding schedule",
            [
                (None, "medium", "The user likes tea."),
                (None, "high", "Works at the aquarium with octopuses"),
            ],
            "Feeding schedule",
        ),
        ("", [], None),
        (
            [{"type": "text", "text": "- [low] From content blocks"}],
            [(None, "low", "From content blocks")],
            None,
        ),
    ],
)
def test_malformed_replies_lose_nothing(reply, entries, task) -> None:
    parsed = parse_log(reply)
    assert [(e.date, e.priority, e.text) for e in parsed.entries] == entries
    assert parsed.current_task == task


@given(st.text(max_size=400))
def test_the_parser_never_raises_and_keeps_every_word(text: str) -> None:
    parsed = parse_log(text)
    kept = " ".join(e.text for e in parsed.entries) + " " + (parsed.current_task or "")
    for line in text.splitlines():
        words = [w for w in line.split() if w.isalnum() and len(w) > 3]
        if "<" in line or ">" in line or "date" in line.lower():
            continue  # tags and date headings are structure, not content
        for word in words:
            assert word in kept


entry = st.builds(
    Entry,
    date=st.one_of(st.none(), st.dates().map(lambda d: d.isoformat())),
    priority=st.sampled_from(["high", "medium", "low"]),
    text=st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=30).map(
        lambda t: "note " + t
    ),
)


@given(st.lists(entry, max_size=8))
def test_format_then_parse_round_trips(entries) -> None:
    assert parse_log(format_entries(entries)).entries == entries


def test_the_context_block_tells_the_model_how_to_use_the_log() -> None:
    block = context_block("Date: 2026-11-20\n- [high] Allergic to peanuts", "Menu planning")
    assert isinstance(block, SystemMessage)
    assert "trust the newer one" in block.content
    assert "<observations>\nDate: 2026-11-20" in block.content
    assert "<current-task>\nMenu planning" in block.content


def test_a_model_that_is_not_a_chat_model_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="Observer needs a LangChain chat model"):
        Observer("gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="Reflector"):
        Reflector(None)  # type: ignore[arg-type]
