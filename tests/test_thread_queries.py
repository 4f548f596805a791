"""Mastra 1.x's ``summarizeThread``, ``listMessagesById`` and ``settled``, sync and async, on
every backend: a summary comes from the given model and is not stored; another resource's
thread is refused; messages by id keep thread order and leave out what is not the caller's;
``settled()`` returns once titles and vectors are written."""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import (
    ConfigurationError,
    Memory,
    MemoryStorage,
    ResourceMismatchError,
    ThreadNotFoundError,
)
from langchain_mastra_memory.provider_rules import provider_violations
from langchain_mastra_memory.testing import strict_model


def chat(memory: Memory, thread_id: str = "t", resource_id: str = "alice") -> list[str]:
    saved = memory.save_turn(
        [HumanMessage("I moved to Lisbon in March."), AIMessage("Lisbon is lovely."),
         HumanMessage("My sister Ana visits in May."), AIMessage("Noted.")],
        thread_id=thread_id, resource_id=resource_id,
    )  # fmt: skip
    return [m.id for m in saved]


def test_a_summary_comes_from_the_given_model_and_is_not_stored(
    storage: MemoryStorage, call
) -> None:
    memory = Memory(storage=storage)
    chat(memory)
    before = memory.get_thread("t")
    model = strict_model(
        AIMessage("- [high] The user moved to Lisbon in March; Ana visits in May.")
    )
    result = call(memory, "summarize_thread", "t", model=model, resource_id="alice",
                  instructions="Write for the travel desk.")  # fmt: skip
    assert result.summary.startswith("- [high] The user moved to Lisbon")
    assert result.thread_id == "t" and result.message_count == 4
    shown = "\n".join(str(m.content) for m in model.seen[-1])
    assert "I moved to Lisbon in March." in shown and "Ana visits in May" in shown
    assert "Write for the travel desk." in shown  # the instructions reach the model
    assert len(memory.get_messages(thread_id="t")) == 4  # nothing written back
    assert memory.get_thread("t").metadata == before.metadata


def test_a_summary_is_bounded_by_last_messages_and_tokens(storage: MemoryStorage) -> None:
    memory = Memory(storage=storage)
    chat(memory)
    model = strict_model(AIMessage("- one"), AIMessage("- two"))
    assert memory.summarize_thread("t", model=model, last_messages=2).message_count == 2
    assert "I moved to Lisbon" not in str(model.seen[-1])
    assert memory.summarize_thread("t", model=model, max_input_tokens=1).message_count == 1


def test_a_summary_of_anothers_thread_or_a_bad_call_is_refused(
    storage: MemoryStorage, call
) -> None:
    memory = Memory(storage=storage)
    chat(memory)
    model = strict_model(AIMessage("- nothing"))
    with pytest.raises(ResourceMismatchError):
        call(memory, "summarize_thread", "t", model=model, resource_id="bob")
    with pytest.raises(ThreadNotFoundError):
        call(memory, "summarize_thread", "nope", model=model)
    for bad in ({"model": "gpt-4o-mini"}, {"model": model, "last_messages": 0},
                {"model": model, "max_input_tokens": -1}):  # fmt: skip
        with pytest.raises(ConfigurationError):
            call(memory, "summarize_thread", "t", **bad)
    assert model.seen == []  # nothing reached the model


def test_messages_by_id_in_thread_order_and_only_the_callers(storage: MemoryStorage, call) -> None:
    memory = Memory(storage=storage)
    ids = chat(memory)
    bobs = chat(memory, "b", "bob")
    asked = [ids[2], "unknown", ids[0], bobs[0]]
    got = [m.id for m in call(memory, "list_messages_by_id", asked)]
    assert sorted(got) == sorted([ids[0], ids[2], bobs[0]])  # unknown ids left out
    assert [i for i in got if i in ids] == [ids[0], ids[2]]  # each thread in its order
    mine = call(memory, "list_messages_by_id", asked, resource_id="alice")
    assert [m.id for m in mine] == [ids[0], ids[2]]


class SlowTitles(FakeListChatModel):
    """A title model that takes its time."""

    def _call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        assert provider_violations(messages) == []  # what a provider would accept
        time.sleep(0.4)
        return super()._call(messages, *args, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_settled_returns_after_the_background_work(tmp_path: Any, mode: str) -> None:
    import asyncio

    from langchain_mastra_memory import SQLiteStorage

    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options={
        "semantic_recall": True,
        "generate_title": {"model": SlowTitles(responses=["Moving to Lisbon"])}})  # fmt: skip
    chat(memory)
    assert memory.get_thread("t").title is None  # still being written, behind the turn
    if mode == "sync":
        memory.settled()
    else:
        asyncio.run(memory.asettled())
    assert memory.get_thread("t").title == "Moving to Lisbon"
    assert memory.vector_backlog().pending == 0
