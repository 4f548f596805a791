"""Extractors (Mastra's ``Extractor`` and ``WorkingMemoryExtractor``): values the Observer
keeps up to date in its own pass, in every shape, sync and async.

The scripted Observer checks its input as a provider does and answers by what it is asked: a
log entry (and a text extractor's section) for an observation, one JSON object for the
structured follow-up turn, a shorter log for a reflection. What it extracts comes from what it
read, so a value that did not flow through the prompt cannot appear.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel
from test_group_chat_authors import agent_for

from langchain_mastra_memory import (
    Extracted,
    Extractor,
    Memory,
    ResourceMismatchError,
    SQLiteStorage,
    ThreadNotFoundError,
    WorkingMemoryExtractor,
)
from langchain_mastra_memory.errors import ConfigurationError
from langchain_mastra_memory.observational.prompts import REFLECTOR_INSTRUCTIONS
from langchain_mastra_memory.testing import (
    ProviderStrictChatModel,
    strict_model,
)

CONFIG = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
CITIES = ("Lisbon", "Porto", "Kyoto")


class Trip(BaseModel):
    destination: str | None = None
    travellers: int | None = None


class Observer(ProviderStrictChatModel):
    """Observer, follow-up and Reflector in one scripted model (see the module docstring)."""

    structured_reply: str | None = None  # a fixed follow-up reply (a broken one, say)
    wm_reply: str | None = None  # a working-memory section / property to answer with

    def _generate(self, messages, *args: Any, **kwargs: Any) -> ChatResult:
        self.accept(messages)  # checked as a provider checks it, and recorded
        asked = str(messages[-1].content)
        read = str(messages[1].content)
        said = [c for c in CITIES if c in read.split("<new-messages>")[-1]]
        city = said[-1] if said else None
        if asked.startswith("Extract structured data"):
            answer: dict[str, Any] = {}
            if "- trip:" in asked and city:
                answer["trip"] = {"destination": city, "travellers": 2}
            if "- working-memory:" in asked and self.wm_reply is not None:
                answer["working-memory"] = json.loads(self.wm_reply)
            content = self.structured_reply or f"```json\n{json.dumps(answer)}\n```"
        elif messages[0].content.startswith(REFLECTOR_INSTRUCTIONS[:80]):
            content = "Date: 2026-11-22\n- [high] Condensed log" + (
                f"\n<summary>\n{read.count('Observation')} observations\n</summary>"
                if "<summary>" in asked else ""
            )  # fmt: skip
        else:
            n = sum(1 for m in self.seen if not str(m[-1].content).startswith("Extract"))
            content = (
                f"<observations>\nDate: 2026-11-22\n- [high] Observation {n}: the user spoke of "
                f"{city}\n</observations>"
            )
            if "<mood>" in asked:
                content += f"\n<mood>\ncheerful about {city}\n</mood>"
            if "<working-memory>" in asked and self.wm_reply is not None:
                content += f"\n<working-memory>\n{self.wm_reply}\n</working-memory>"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content))])


def observer() -> Observer:
    return Observer(responses=[AIMessage("unused")], seen=[])


def extractors(**kwargs: Any) -> list[Extractor]:
    return [
        Extractor("Mood", "The user's mood, in a few words", **kwargs),
        Extractor("Trip", "The trip the user is planning", schema=Trip),
    ]


def om(model: Observer, path: Any, **option: Any) -> Memory:
    settings = {"model": model, "message_tokens": 60, "buffer_tokens": None, **option}
    working = option.pop("working_memory", None)
    options: dict[str, Any] = {"observational_memory": settings}
    if working is not None:
        settings.pop("working_memory")
        options["working_memory"] = working
    return Memory(storage=SQLiteStorage(path / "m.db"), options=options)


def talk(agent: Any, memory: Memory, mode: str, texts: list[str]) -> None:
    for text in texts:
        turn = {"messages": [HumanMessage(text)]}
        if mode == "sync":
            agent.invoke(turn, CONFIG)
        else:
            asyncio.run(agent.ainvoke(turn, CONFIG))
        assert memory.flush(30)


SAYS = [
    "I live in Lisbon and I want to travel somewhere far this spring with my sister.",
    "We are choosing between a few places, nothing is booked yet for the two of us.",
    "We settled it: the two of us fly to Kyoto in April, and we are thrilled about it.",
    "Please remind me about the visa paperwork for Kyoto before the end of this month.",
]


def passes(model: Observer) -> list[tuple[list, list | None]]:
    """Each Observer call with the follow-up turn that came after it (None if none)."""
    calls = [m for m in model.seen if not m[0].content.startswith(REFLECTOR_INSTRUCTIONS[:80])]
    found = []
    for i, call in enumerate(calls):
        if str(call[-1].content).startswith("Extract structured data"):
            continue
        after = calls[i + 1] if i + 1 < len(calls) else None
        found.append((call, after if after and len(after) == len(call) + 2 else None))
    return found


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "shape", ["lcel wrap", "langgraph hook", "agent middleware", "checkpointer"]
)
def test_extractors_ride_the_observer_s_pass(shape: str, mode: str, tmp_path) -> None:
    model, events = observer(), []
    memory = om(model, tmp_path, extractors=extractors(), on_status=events.append)
    agent = agent_for(shape, memory, strict_model(*[AIMessage(f"Noted {i}.") for i in range(4)]))
    talk(agent, memory, mode, SAYS)
    found = passes(model)
    assert len(found) >= 2
    for prompt, follow_up in found:
        assert "<mood>" in prompt[1].content  # the text extractor's section is asked for
        assert follow_up is not None  # the structured one in the same exchange:
        assert follow_up[: len(prompt)] == prompt  # its whole prefix is the Observer's call
        assert follow_up[-2].type == "ai" and "<observations>" in follow_up[-2].content
    last_prompt = found[-1][0][1].content
    assert "The values kept so far" in last_prompt  # the previous value is fed back
    assert found[-1][1] is not None and "Values kept so far" in found[-1][1][-1].content
    values = memory.extracted_values(thread_id="t1", resource_id="alice")
    assert values == {"mood": "cheerful about Kyoto", "trip": {"destination": "Kyoto",
                                                               "travellers": 2}}  # fmt: skip
    log = "\n".join(g.text for g in memory.storage.observation_log("thread:t1", buffered=True))
    assert "Observation" in log and "<mood>" not in log and "cheerful" not in log
    kinds = [e.kind for e in events]
    assert "extracted" in kinds and "failed" not in kinds
    mood = [e.detail for e in events if e.kind == "extracted" and e.detail["slug"] == "mood"]
    assert mood[-1]["value"] == "cheerful about Kyoto" and mood[0]["previous"] is None
    again = Memory(storage=SQLiteStorage(tmp_path / "m.db"))  # a restart: the values stand
    assert asyncio.run(again.aextracted_values(thread_id="t1", resource_id="alice")) == values


def test_on_extracted_may_replace_a_value_and_a_failing_one_keeps_nothing(tmp_path) -> None:
    model, events, seen = observer(), [], []

    def shout(extracted: Extracted) -> str:
        seen.append(extracted)
        return extracted.value.upper()

    def broken(extracted: Extracted) -> None:
        raise RuntimeError("handler bug")

    memory = om(model, tmp_path, on_status=events.append, extractors=[
        Extractor("Mood", "The user's mood", on_extracted=shout),
        Extractor("Trip", "The trip", schema=Trip, on_extracted=broken),
    ])  # fmt: skip
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(4)]))
    for text in SAYS[:3]:
        chat.invoke(text, CONFIG)
        memory.flush(30)
    values = memory.extracted_values(thread_id="t1", resource_id="alice")
    assert values["mood"].startswith("CHEERFUL ABOUT") and "trip" not in values
    assert seen[0].context.source == "observer" and seen[0].context.thread_id == "t1"
    failed = [e.detail for e in events if e.kind == "failed"]
    assert failed and all(f["slug"] == "trip" and "handler bug" in f["error"] for f in failed)
    assert memory.storage.observation_log("thread:t1", buffered=True)  # the log stands


def test_a_reply_that_is_not_json_keeps_the_old_value_and_the_observations(tmp_path) -> None:
    model, events = observer(), []
    memory = om(model, tmp_path, extractors=extractors(), on_status=events.append)
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(12)]))
    for text in SAYS[:3]:
        chat.invoke(text, CONFIG)
        memory.flush(30)
    before = memory.extracted_values(thread_id="t1", resource_id="alice")
    groups = len(memory.storage.observation_log("thread:t1", buffered=True))
    model.structured_reply = '{"trip": {"destination": 7}}'  # then not JSON at all
    chat.invoke(SAYS[3], CONFIG)
    memory.flush(30)
    model.structured_reply = "Sorry, I cannot help with that."
    for text in SAYS:  # (said again: enough for one more Observer run)
        chat.invoke(text, CONFIG)
        memory.flush(30)
    after = memory.extracted_values(thread_id="t1", resource_id="alice")
    assert after["trip"] == before["trip"] and after["mood"] != before["mood"]  # text: new
    assert len(memory.storage.observation_log("thread:t1", buffered=True)) > groups
    errors = [e.detail["error"] for e in events if e.kind == "failed"]
    assert any("destination" in e for e in errors) and any("no JSON object" in e for e in errors)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_working_memory_extractor_updates_it_without_a_tool_call(mode, tmp_path) -> None:
    model = observer()
    model.wm_reply = "# User\n- Home: Lisbon\n- Next trip: Kyoto, April, with her sister"
    memory = om(model, tmp_path, extractors=[WorkingMemoryExtractor()],
                working_memory={"enabled": True})  # fmt: skip
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(4)]))
    for text in SAYS[:3]:
        asyncio.run(chat.ainvoke(text, CONFIG)) if mode == "async" else chat.invoke(text, CONFIG)
        memory.flush(30)
    assert memory.get_working_memory(thread_id="t1", resource_id="alice") == model.wm_reply
    (prompt, follow_up), *_ = passes(model)
    assert "Working memory template:" in prompt[1].content and follow_up is None  # Markdown
    assert memory.extracted_values(thread_id="t1", resource_id="alice") == {}  # not kept apart


def test_in_schema_mode_empty_members_are_pruned_and_a_factless_object_changes_nothing(
    tmp_path,
) -> None:
    class Profile(BaseModel):
        home: str | None = None
        pets: list[str] | None = None

    model = observer()
    model.wm_reply = json.dumps({"home": "Lisbon", "pets": [], "extra": None})
    memory = om(model, tmp_path, extractors=[WorkingMemoryExtractor()],
                working_memory={"enabled": True, "schema": Profile})  # fmt: skip
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(6)]))
    for text in SAYS[:2]:
        chat.invoke(text, CONFIG)
        memory.flush(30)
    assert memory.get_working_memory(thread_id="t1", resource_id="alice") == {"home": "Lisbon"}
    model.wm_reply = json.dumps({"home": None, "pets": []})
    for text in SAYS[2:]:
        chat.invoke(text, CONFIG)
        memory.flush(30)
    assert memory.get_working_memory(thread_id="t1", resource_id="alice") == {"home": "Lisbon"}
    follow_ups = [f for _, f in passes(model) if f is not None]
    assert len(follow_ups) >= 2 and '"home"' in follow_ups[0][-1].content  # its schema shown


def test_reflector_extractors_ride_the_reflector_s_pass(tmp_path) -> None:
    model, events = observer(), []
    memory = om(model, tmp_path, observation_tokens=40, on_status=events.append,
                reflector_extractors=[Extractor("Summary", "How many observations")])  # fmt: skip
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(6)]))
    for text in SAYS:
        chat.invoke(text, CONFIG)
        memory.flush(30)
    reflections = [m for m in model.seen if m[0].content.startswith(REFLECTOR_INSTRUCTIONS[:80])]
    assert reflections and all("<summary>" in r[1].content for r in reflections)
    values = memory.extracted_values(thread_id="t1", resource_id="alice")
    assert re.fullmatch(r"\d+ observations", values["summary"])
    assert any(e.kind == "extracted" and e.detail["source"] == "reflector" for e in events)


def test_values_go_with_their_thread_and_stay_with_their_owner(tmp_path) -> None:
    memory = om(observer(), tmp_path, extractors=extractors())
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(4)]))
    for text in SAYS[:3]:
        chat.invoke(text, CONFIG)
        memory.flush(30)
    assert memory.extracted_values(thread_id="t1", resource_id="alice")
    with pytest.raises(ResourceMismatchError):
        memory.extracted_values(thread_id="t1", resource_id="mallory")
    with pytest.raises(ResourceMismatchError):
        asyncio.run(memory.aextracted_values(thread_id="t1", resource_id="mallory"))
    with pytest.raises(ThreadNotFoundError):
        memory.extracted_values(thread_id="nope", resource_id="alice")
    with pytest.raises(ConfigurationError):
        memory.extracted_values(resource_id="alice")  # thread scope needs the thread
    memory.transfer_thread("t1", to_resource_id="bob", resource_id="alice")
    assert memory.extracted_values(thread_id="t1", resource_id="bob")
    memory.delete_thread("t1")
    memory.create_thread(thread_id="t1", resource_id="mallory")  # the id reused
    assert memory.extracted_values(thread_id="t1", resource_id="mallory") == {}


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: Extractor("", "x"), "slug"),
        (lambda: Extractor("42", "x"), "slug"),
        (lambda: Extractor("Observations", "x"), "reserved"),
        (lambda: Extractor("Mood", ""), "instructions"),
        (lambda: Extractor("Mood", "x", schema={"type": "nonsense"}), "Mood"),
        (lambda: Extractor("Mood", "x", schema=int), "Pydantic model or a JSON schema"),
    ],
)
def test_a_bad_extractor_is_refused_at_once(make, words) -> None:
    with pytest.raises(ConfigurationError, match=words):
        make()


def test_a_bad_extractor_list_is_refused_by_memory(tmp_path) -> None:
    def memory_with(**option: Any) -> Memory:
        return om(observer(), tmp_path, **option)

    with pytest.raises(ConfigurationError, match="share the slug"):
        memory_with(extractors=[Extractor("Mood", "a"), Extractor("mood!", "b")])
    with pytest.raises(ConfigurationError, match="Extractor objects"):
        memory_with(extractors=["mood"])
    with pytest.raises(ConfigurationError, match="needs working memory"):
        memory_with(extractors=[WorkingMemoryExtractor()])
    with pytest.raises(ConfigurationError, match="not both"):
        memory_with(extractors=[WorkingMemoryExtractor()], manage_working_memory=True,
                    working_memory={"enabled": True})  # fmt: skip
    with pytest.raises(ConfigurationError, match="rides the Observer"):
        memory_with(reflector_extractors=[WorkingMemoryExtractor()],
                    working_memory={"enabled": True})  # fmt: skip


def test_values_storage_refuses_are_a_failed_event_and_the_pass_goes_on(tmp_path) -> None:
    model, events = observer(), []
    memory = om(model, tmp_path, extractors=extractors(), on_status=events.append)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk full")

    memory.storage.save_extracted_values = refused  # type: ignore[method-assign]
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(4)]))
    for text in SAYS[:3]:
        chat.invoke(text, CONFIG)
        memory.flush(30)
    failed = [e.detail for e in events if e.kind == "failed"]
    assert {f["slug"] for f in failed} == {"mood", "trip"}
    assert all("disk full" in f["error"] for f in failed)
    assert not [e for e in events if e.kind == "extracted"]  # nothing reported as kept
    assert any(e.kind == "activated" for e in events)  # the pass went on after it


@pytest.mark.parametrize("mode", ["markdown", "schema"])
def test_the_working_memory_extractor_never_tells_the_model_to_call_a_tool(
    mode: str, tmp_path
) -> None:
    """Issue 83.4: in the wrap shape (no tools), with `WorkingMemoryExtractor` keeping working
    memory, the model is shown it but not told to call ``update_working_memory``."""
    working: dict[str, Any] = {"enabled": True}
    if mode == "schema":
        working["schema"] = {"type": "object", "properties": {"city": {"type": "string"}}}
    model = observer()
    memory = om(model, tmp_path, extractors=[WorkingMemoryExtractor()], working_memory=working)
    main = strict_model(*[AIMessage(f"ok {i}") for i in range(3)])
    chat = memory.wrap(main)
    for text in SAYS[:3]:
        chat.invoke(text, CONFIG)
        assert memory.flush(30)
    system = main.seen[-1][0]
    assert system.type == "system" and "working_memory_data" in system.content
    assert "update_working_memory" not in " ".join(str(m.content) for m in main.seen[-1])
    plain = Memory(
        storage=SQLiteStorage(tmp_path / "plain.db"), options={"working_memory": working}
    )
    bare = strict_model(AIMessage("ok"))
    plain.wrap(bare).invoke("hi", CONFIG)  # without the extractor the tool is named, as before
    assert "update_working_memory" in bare.seen[-1][0].content
