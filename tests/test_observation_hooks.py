"""Transform hooks (Mastra's ``beforeObservation``, ``afterObservation``, ``beforeReflection``,
``afterReflection``): what the Observer reads and what is kept, changed by the application, in
every shape, sync and async; a failing hook fails its pass and loses nothing.

The scripted Observer checks its input as a provider does and echoes what it read, so a card
number that reached it would be in the log.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from test_extractors import CONFIG, talk
from test_group_chat_authors import agent_for

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.errors import ConfigurationError
from langchain_mastra_memory.observational.prompts import REFLECTOR_INSTRUCTIONS
from langchain_mastra_memory.testing import (
    ProviderStrictChatModel,
    strict_model,
)

CARD = "4111 1111 1111 1111"
SAYS = [
    f"Please book the Lisbon hotel, pay with my card {CARD} tonight.",
    "Also I need a window seat on the flight to Lisbon, an aisle is no good.",
    f"My card is still {CARD}, and the trip is for two people in April.",
    "One more thing: we are vegetarian, tell the hotel about breakfast.",
]


class Echo(ProviderStrictChatModel):
    """Observer (echoes the lines it read) and Reflector (one condensed line)."""

    def _generate(self, messages, *args: Any, **kwargs: Any) -> ChatResult:
        self.accept(messages)  # checked as a provider checks it, and recorded
        read = str(messages[-1].content)
        if messages[0].content.startswith(REFLECTOR_INSTRUCTIONS[:80]):
            said = read.split("<observations>")[-1]
            content = f"Date: 2026-11-22\n- [high] Condensed: {said.count('Said')} notes"
        else:
            shown = read.split("<new-messages>")[-1].split("</new-messages>")[0]
            lines = [line for line in shown.splitlines() if line.startswith("[")]
            content = "Date: 2026-11-22\n" + "\n".join(f"- [high] Said: {x}" for x in lines)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content))])


def echo() -> Echo:
    return Echo(responses=[AIMessage("unused")], seen=[])


def memory_with(model: Echo, path: Any, **option: Any) -> Memory:
    settings = {"model": model, "message_tokens": 60, "buffer_tokens": None, **option}
    return Memory(storage=SQLiteStorage(path / "m.db"),
                  options={"observational_memory": settings})  # fmt: skip


def observer_inputs(model: Echo) -> str:
    return "\n".join(str(m[-1].content) for m in model.seen
                     if not m[0].content.startswith(REFLECTOR_INSTRUCTIONS[:80]))  # fmt: skip


def log_text(memory: Memory) -> str:
    return "\n".join(g.text for g in memory.storage.observation_history("thread:t1"))


def redacted(message: BaseMessage) -> BaseMessage:
    return message.model_copy(update={"content": message.text.replace(CARD, "[card]")})


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "shape", ["lcel wrap", "langgraph hook", "agent middleware", "checkpointer"]
)
def test_the_observer_reads_what_the_hooks_let_through_and_keeps_what_they_return(
    shape: str, mode: str, tmp_path
) -> None:
    seen: list[dict] = []

    def before(*, messages, thread_id, resource_id):
        seen.append({"thread_id": thread_id, "resource_id": resource_id, "n": len(messages)})
        return [redacted(m) for m in messages]

    async def after(*, observations, **_):  # a coroutine function works too
        await asyncio.sleep(0)
        return observations.replace("Said:", "Heard:")

    model = echo()
    memory = memory_with(model, tmp_path,
                         hooks={"before_observation": before, "after_observation": after})  # fmt: skip
    agent = agent_for(shape, memory, strict_model(*[AIMessage(f"Booked {i}.") for i in range(4)]))
    talk(agent, memory, mode, SAYS)
    assert seen and seen[0]["thread_id"] == "t1" and seen[0]["resource_id"] == "alice"
    read = observer_inputs(model)
    assert "[card]" in read and CARD not in read  # the card never reached the Observer
    kept = log_text(memory)
    assert "Heard: [" in kept and "Said:" not in kept and CARD not in kept
    assert CARD in repr(memory.get_messages(thread_id="t1"))  # the messages themselves stand
    assert memory.storage.unobserved_tokens("thread:t1", resource_id="alice", thread_id="t1") < 60


def test_an_empty_list_skips_the_observer_and_the_messages_count_as_observed(tmp_path) -> None:
    model, events = echo(), []
    memory = memory_with(model, tmp_path, on_status=events.append,
                         hooks={"before_observation": lambda **_: []})  # fmt: skip
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(4)]))
    for text in SAYS:
        chat.invoke(text, CONFIG)
        assert memory.flush(30)
    assert model.seen == []  # no Observer call at all
    kinds = [e.kind for e in events]  # (no buffering: each group goes straight into the log)
    assert "activated" in kinds and "failed" not in kinds and "buffered" not in kinds
    assert "Said" not in log_text(memory)
    assert memory.storage.unobserved_tokens("thread:t1", resource_id="alice", thread_id="t1") < 60
    context = memory.context([HumanMessage("hi")], thread_id="t1", resource_id="alice")
    assert CARD not in repr(context[:-1])  # what was withheld is not shown again either


@pytest.mark.parametrize(
    "hook, words",
    [
        (lambda **_: 1 / 0, "division by zero"),
        (lambda **_: "not a list", "must return a list of LangChain messages"),
    ],
)
def test_a_failing_hook_fails_the_pass_and_loses_nothing(hook: Any, words: str, tmp_path) -> None:
    model, events = echo(), []
    hooks: dict[str, Any] = {"before_observation": hook}
    memory = memory_with(model, tmp_path, on_status=events.append, hooks=hooks)
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(8)]))
    for text in SAYS[:3]:
        chat.invoke(text, CONFIG)
        assert memory.flush(30)
    failed = [e.detail for e in events if e.kind == "failed"]
    assert failed and all(f["step"] == "observe" and words in f["error"] for f in failed)
    assert memory.storage.observation_history("thread:t1") == [] and model.seen == []
    # mended (the same hooks object, as an application would fix its function): nothing lost
    memory.writes.observations.config.hooks.before_observation = None
    chat.invoke(SAYS[3], CONFIG)
    assert memory.flush(30)
    assert all(text.split(",")[0] in log_text(memory) for text in SAYS)


def test_the_reflection_hooks_change_what_the_reflector_reads_and_what_is_kept(tmp_path) -> None:
    def before(*, observations, resource_id):
        assert resource_id == "alice"
        return observations + "\n- [high] Said: (a note the application adds)"

    model = echo()
    memory = memory_with(model, tmp_path, observation_tokens=60, hooks={
        "before_reflection": before,
        "after_reflection": lambda *, observations, **_: observations + " (checked)",
    })  # fmt: skip
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(8)]))
    for text in SAYS * 2:
        chat.invoke(text, CONFIG)
        assert memory.flush(30)
    reflector = [m for m in model.seen if m[0].content.startswith(REFLECTOR_INSTRUCTIONS[:80])]
    assert reflector and "a note the application adds" in reflector[0][-1].content
    reflections = [g for g in memory.storage.observation_history("thread:t1")
                   if g.kind == "reflection"]  # fmt: skip
    assert reflections and all(g.text.endswith("(checked)") for g in reflections)


@pytest.mark.parametrize(
    "option, words",
    [
        ({"hooks": {"before_observe": print}}, "before_observe"),
        ({"hooks": {"before_reflection": print}, "archive": True}, "exclusive"),
        ({"hooks": {"after_observation": "not callable"}}, "after_observation"),
    ],
)
def test_bad_hooks_are_refused(option: dict, words: str) -> None:
    with pytest.raises(ConfigurationError, match=words):
        Memory(storage=SQLiteStorage(":memory:"),
               options={"observational_memory": {"model": echo(), **option}})  # fmt: skip
