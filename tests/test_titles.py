"""generate_title: a chat model titles a thread after its first user message, off the turn,
never over a user's title, never failing a turn."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langchain_mastra_memory import ConfigurationError, Memory, SQLiteStorage
from langchain_mastra_memory.testing import strict_model
from langchain_mastra_memory.titles import INSTRUCTIONS, clean_title


class Recording(FakeListChatModel):
    """A scripted model that keeps what it was asked (the prompt is the contract)."""

    asked: list = []  # noqa: RUF012 - set per instance

    def _call(self, messages, *args, **kwargs):
        self.asked.append(messages)
        return super()._call(messages, *args, **kwargs)


def titled_memory(model, **option) -> Memory:
    return Memory(
        storage=SQLiteStorage(":memory:"), options={"generate_title": {"model": model, **option}}
    )


def test_the_first_user_message_titles_the_thread(call) -> None:
    model = Recording(responses=['"Trip planning: Oslo in May"'], asked=[])
    memory = titled_memory(model)
    call(memory, "create_thread", thread_id="t1", resource_id="alice")
    call(
        memory,
        "save_messages",
        [HumanMessage("I want to go to Oslo in May")],
        thread_id="t1",
        resource_id="alice",
    )
    assert call(memory, "flush") is True
    assert memory.get_thread("t1").title == "Trip planning Oslo in May"
    (prompt,) = model.asked
    assert isinstance(prompt[0], SystemMessage) and prompt[0].content == INSTRUCTIONS
    assert prompt[1].content == "I want to go to Oslo in May"
    call(
        memory,
        "save_messages",
        [HumanMessage("and back in June")],
        thread_id="t1",
        resource_id="alice",
    )
    call(memory, "flush")
    assert len(model.asked) == 1  # only the first user message asks


def test_a_title_the_user_set_is_never_overwritten() -> None:
    model = Recording(responses=["Model title"], asked=[])
    memory = titled_memory(model)
    memory.create_thread(thread_id="t1", resource_id="alice", title="Mine")
    memory.save_messages([HumanMessage("hello")], thread_id="t1", resource_id="alice")
    memory.flush()
    assert memory.get_thread("t1").title == "Mine" and model.asked == []


def test_a_title_set_while_the_model_thinks_wins() -> None:
    release = threading.Event()

    class Slow(FakeListChatModel):
        def _call(self, messages, *args, **kwargs):
            release.wait(5)
            return super()._call(messages, *args, **kwargs)

    memory = titled_memory(Slow(responses=["Model title"]))
    memory.create_thread(thread_id="t1", resource_id="alice")
    memory.save_messages([HumanMessage("hello")], thread_id="t1", resource_id="alice")
    memory.update_thread("t1", title="Set by the user")
    release.set()
    memory.flush()
    assert memory.get_thread("t1").title == "Set by the user"


def test_the_turn_does_not_wait_for_the_title() -> None:
    release = threading.Event()

    class Blocked(FakeListChatModel):
        def _call(self, messages, *args, **kwargs):
            release.wait(10)
            return super()._call(messages, *args, **kwargs)

    memory = titled_memory(Blocked(responses=["Later"]))
    chat = memory.wrap(strict_model(AIMessage("hi!")))
    config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
    assert chat.invoke("hello", config).content == "hi!"  # the title model is still blocked
    assert memory.get_thread("t1").title is None
    release.set()
    memory.flush()
    assert memory.get_thread("t1").title == "Later"


def test_a_failing_model_is_logged_and_retried_on_the_next_message(caplog) -> None:
    class Failing(FakeListChatModel):
        fail: bool = True

        def _call(self, messages, *args, **kwargs):
            if self.fail:
                raise RuntimeError("provider down")
            return super()._call(messages, *args, **kwargs)

    model = Failing(responses=["Second try"])
    memory = titled_memory(model)
    memory.create_thread(thread_id="t1", resource_id="alice")
    with caplog.at_level(logging.WARNING, logger="langchain_mastra_memory.titles"):
        memory.save_messages([HumanMessage("hello")], thread_id="t1", resource_id="alice")
        memory.flush()
    assert "could not title thread 't1': provider down" in caplog.text
    assert memory.get_thread("t1").title is None
    model.fail = False
    memory.save_messages([HumanMessage("again")], thread_id="t1", resource_id="alice")
    memory.flush()
    assert memory.get_thread("t1").title == "Second try"


def test_the_wrapped_model_titles_when_the_option_names_none() -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"), options={"generate_title": True})
    model = strict_model(AIMessage("Sure."), AIMessage("Greeting"))
    chat = memory.wrap(model)
    chat.invoke("hello", {"configurable": {"thread_id": "t1", "resource_id": "alice"}})
    memory.flush()
    assert memory.get_thread("t1").title == "Greeting"


def test_async_turns_title_too() -> None:
    memory = titled_memory(Recording(responses=["Async title"], asked=[]))
    chat = memory.wrap(strict_model(AIMessage("hi")))

    async def main() -> str | None:
        await chat.ainvoke("hello", {"configurable": {"thread_id": "t1", "resource_id": "a"}})
        assert await memory.aflush() is True
        return (await memory.aget_thread("t1")).title

    assert asyncio.run(main()) == "Async title"


def test_no_model_anywhere_warns_once_and_saves(caplog) -> None:
    memory = Memory(storage=SQLiteStorage(":memory:"), options={"generate_title": True})
    memory.create_thread(thread_id="t1", resource_id="alice")
    with caplog.at_level(logging.WARNING, logger="langchain_mastra_memory.titles"):
        memory.save_messages([HumanMessage("hello")], thread_id="t1", resource_id="alice")
        memory.save_messages([HumanMessage("again")], thread_id="t1", resource_id="alice")
    assert caplog.text.count("no model is known") == 1
    assert len(memory.get_messages(thread_id="t1")) == 2


@pytest.mark.parametrize(
    "option", [{"model": "gpt-4o"}, {"model": None, "prompt": "x"}], ids=["a string", "unknown"]
)
def test_bad_options_are_clear(option) -> None:
    with pytest.raises(ConfigurationError, match="generate_title"):
        Memory(storage=SQLiteStorage(":memory:"), options={"generate_title": option})


@pytest.mark.parametrize(
    ("reply", "title"),
    [
        ("Plain title", "Plain title"),
        ("<think>long\nreasoning</think>\nTitle: Weekend plans", "Title Weekend plans"),
        ("'Quoted'\nsecond line", "Quoted"),
        ("word " * 30, ("word " * 16).strip()),
        ("   \n ", None),
        ([{"type": "text", "text": "From blocks"}], "From blocks"),
    ],
)
def test_clean_title(reply, title) -> None:
    assert clean_title(reply) == title
    assert title is None or len(title) <= 80
