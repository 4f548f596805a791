"""Observational memory as in Mastra 1.x: separate Observer and Reflector models, the
developer's instruction in the prompts, the Observer keeping working memory up to date, and a
status stream (a callback, and LangChain custom events inside a run)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from langchain_mastra_memory import ConfigurationError, Memory, MemoryStorage
from langchain_mastra_memory.observational.prompts import OBSERVER_INSTRUCTIONS
from langchain_mastra_memory.provider_rules import provider_violations
from langchain_mastra_memory.storage.records import scope_key
from langchain_mastra_memory.testing import strict_model

KEY = scope_key("thread", resource_id="alice", thread_id="t1")
CONFIG = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
OBSERVED = (
    "<observations>\nDate: 2026-11-22\n- [high] User moved to Porto from Lisbon\n"
    "- [medium] Chatting about {n}\n</observations>\n<current-task>\nChatting\n</current-task>"
)


class Recorder(FakeListChatModel):
    """A scripted model that records each prompt it is given, refusing any a provider would."""

    responses: list = ["unused"]  # noqa: RUF012
    calls: list = []  # noqa: RUF012
    reply: str = OBSERVED

    def _call(self, messages, *args, **kwargs):
        problems = provider_violations(messages)
        if problems:
            raise ValueError(f"a provider would refuse this prompt: {problems}")
        self.calls.append(messages)
        return self.reply.replace("{n}", str(len(self.calls)))

    def _stream(self, messages, *args, **kwargs):  # streamed too (inside astream_events)
        yield ChatGenerationChunk(message=AIMessageChunk(content=self._call(messages)))

    async def _astream(self, messages, *args, **kwargs):
        yield ChatGenerationChunk(message=AIMessageChunk(content=self._call(messages)))


def turns(memory: Memory, n: int, config: dict = CONFIG) -> None:
    chat = memory.wrap(strict_model(*[AIMessage(f"Noted, reply {i}.") for i in range(n)]))
    for i in range(n):
        chat.invoke(f"Message {i}: I moved from Lisbon to Porto last week, a big change.", config)


def om(storage: MemoryStorage, **option: object) -> Memory:
    settings = {"message_tokens": 60, "observation_tokens": 20, "buffer_tokens": None, **option}
    extra = option.pop("_memory", {}) if "_memory" in option else {}
    return Memory(storage=storage, options={"observational_memory": settings, **extra})


def test_observer_and_reflector_run_on_their_own_models_with_the_instruction(
    storage: MemoryStorage,
) -> None:
    observer = Recorder(calls=[])
    reflector = Recorder(calls=[], reply="Date: 2026-11-22\n- [high] Porto")
    memory = om(
        storage, observer_model=observer, reflector_model=reflector,
        instruction="Never record payment card numbers.",
        reflector_instruction="Keep where the user lives.",
    )  # fmt: skip
    turns(memory, 4)
    assert memory.flush(30)
    assert observer.calls and reflector.calls  # each on its own model
    system = observer.calls[0][0].content
    assert system.startswith(OBSERVER_INSTRUCTIONS) and "Never record payment card" in system
    reflecting = reflector.calls[0][0].content
    assert "Keep where the user lives." in reflecting and "payment card" not in reflecting
    assert [g.text for g in memory.storage.observation_log(KEY)] == [
        "Date: 2026-11-22\n- [high] Porto"
    ]


def test_a_model_for_each_role_is_required(storage: MemoryStorage) -> None:
    with pytest.raises(ConfigurationError, match="reflector_model"):
        om(storage, observer_model=Recorder(calls=[]))
    with pytest.raises(ConfigurationError, match="working memory"):
        om(storage, model=Recorder(calls=[]), manage_working_memory=True)


def test_the_observer_keeps_working_memory_up_to_date(storage: MemoryStorage) -> None:
    observer = Recorder(
        calls=[],
        reply=OBSERVED
        + ("\n<working-memory>\n# User Information\n- **Location**: Porto\n</working-memory>"),
    )
    memory = Memory(storage=storage, options={
        "working_memory": {"enabled": True},
        "observational_memory": {"model": observer, "message_tokens": 60, "buffer_tokens": None,
                                 "manage_working_memory": True},
    })  # fmt: skip
    memory.update_working_memory("# User Information\n- **Location**: Lisbon", resource_id="alice")
    turns(memory, 3)
    assert memory.flush(30)
    prompt = observer.calls[0]
    assert "<working-memory>" in prompt[0].content  # told it may rewrite it
    assert "- **Location**: Lisbon" in prompt[1].content  # shown the document as it stands
    assert memory.get_working_memory(resource_id="alice") == (
        "# User Information\n- **Location**: Porto"
    )
    assert memory.storage.observation_log(KEY)  # and the observations are in the log


def test_an_invalid_working_memory_from_the_observer_is_dropped(
    storage: MemoryStorage, caplog
) -> None:
    observer = Recorder(
        calls=[], reply=OBSERVED + "\n<working-memory>\n{not json\n</working-memory>"
    )
    events = []
    memory = Memory(storage=storage, options={
        "working_memory": {"enabled": True,
                           "schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
        "observational_memory": {"model": observer, "message_tokens": 60, "buffer_tokens": None,
                                 "manage_working_memory": True, "on_status": events.append},
    })  # fmt: skip
    memory.update_working_memory({"city": "Lisbon"}, resource_id="alice")
    with caplog.at_level(logging.WARNING):
        turns(memory, 3)
        assert memory.flush(30)
    assert memory.get_working_memory(resource_id="alice") == {"city": "Lisbon"}  # untouched
    assert memory.storage.observation_log(KEY)  # the observations still landed
    assert any(e.kind == "failed" and e.detail["step"] == "working_memory" for e in events)
    assert "working memory refused" in caplog.text
    assert '"city": "Lisbon"' in observer.calls[0][1].content  # the schema object, as JSON


def test_the_status_stream_tells_each_step(storage: MemoryStorage) -> None:
    events = []
    memory = om(
        storage, model=Recorder(calls=[]), buffer_tokens=30, on_status=events.append,
    )  # fmt: skip
    turns(memory, 6)
    assert memory.flush(30)
    kinds = [e.kind for e in events]
    assert {"observing", "buffered", "activated"} <= set(kinds)
    assert kinds.index("observing") < kinds.index("buffered") < kinds.index("activated")
    assert all(e.scope_key == KEY and e.resource_id == "alice" for e in events)
    observing = next(e for e in events if e.kind == "observing")
    assert observing.detail["messages"] > 0 and observing.thread_id == "t1"


def test_without_buffering_a_group_goes_straight_into_the_log(storage: MemoryStorage) -> None:
    """Issue 83.4: with ``buffer_tokens=None`` the events read observing -> activated, never
    ``buffered`` (the group was never waiting)."""
    events = []
    memory = om(storage, model=Recorder(calls=[]), on_status=events.append)
    turns(memory, 6)
    assert memory.flush(30)
    kinds = [e.kind for e in events if e.kind in ("observing", "buffered", "activated")]
    assert kinds and "buffered" not in kinds
    assert kinds[:2] == ["observing", "activated"]
    assert kinds.count("observing") == kinds.count("activated")


def test_a_failing_listener_never_stops_memory(storage: MemoryStorage, caplog) -> None:
    def broken(event) -> None:
        raise ValueError("listener bug")

    memory = om(storage, model=Recorder(calls=[]), on_status=broken)
    with caplog.at_level(logging.WARNING):
        turns(memory, 4)
        assert memory.flush(30)
    assert memory.storage.observation_log(KEY) and "on_status failed" in caplog.text


def test_inside_a_run_the_events_reach_astream_events(storage: MemoryStorage) -> None:
    """A turn far over the threshold observes in the turn itself: its events are the run's."""
    memory = om(storage, model=Recorder(calls=[]), block_after=1.0)
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(6)]))
    chat.invoke("Message 0: I moved from Lisbon to Porto last week, a big change.", CONFIG)
    assert memory.flush(30) and not memory.storage.observation_log(KEY)  # under the threshold

    async def stream() -> list[dict]:
        found = []
        text = "Message 9: I moved from Lisbon to Porto last week, a big change indeed."
        async for event in chat.astream_events(text, CONFIG, version="v2"):
            if event["event"] == "on_custom_event" and event["name"] == "memory_status":
                found.append(event["data"])
        return found

    statuses = asyncio.run(stream())
    assert memory.flush(30)
    assert [s["kind"] for s in statuses][:2] == ["observing", "activated"]  # (no buffering)
    assert statuses[0]["scope_key"] == KEY and statuses[0]["resource_id"] == "alice"
