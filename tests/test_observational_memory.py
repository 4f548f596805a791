"""Observational memory in a Memory: thresholds, the turn's context (log block + unobserved
messages, provider-valid), blocking when far over, failures that lose nothing, one Observer per
scope under concurrent saves, reflection with provenance, resource scope, sync and async."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, SystemMessage
from langchain_core.runnables import RunnableLambda

from langchain_mastra_memory import ConfigurationError, Memory, SQLiteStorage
from langchain_mastra_memory.messages import is_injected
from langchain_mastra_memory.observational.prompts import REFLECTOR_INSTRUCTIONS
from langchain_mastra_memory.storage.records import scope_key
from langchain_mastra_memory.testing import strict_model
from langchain_mastra_memory.twins import run_sync


class Scripted(FakeListChatModel):
    """Observer and Reflector in one scripted model: it answers by which prompt it got, and
    records what it was asked. `gate` (when set) holds each call until released."""

    responses: list = ["unused"]  # noqa: RUF012
    calls: list = []  # noqa: RUF012
    fail: bool = False
    gate: threading.Event | None = None
    gate_seconds: float | None = 10  # None: held until released

    def _call(self, messages, *args, **kwargs):
        self.calls.append(messages)
        if self.gate is not None:
            self.gate.wait(self.gate_seconds)
        if self.fail:
            raise RuntimeError("observer model down")
        if messages[0].content == REFLECTOR_INSTRUCTIONS:
            return "Date: 2026-11-22\n- [high] Condensed: Alice, Lisbon, peanuts"
        n = sum(1 for m in self.calls if m[0].content != REFLECTOR_INSTRUCTIONS)
        return (
            f"<observations>\nDate: 2026-11-22\n- [high] Observation {n}: the user talked about "
            "Lisbon and peanuts\n</observations>\n<current-task>\nChatting\n</current-task>"
        )


def om_memory(model: Scripted, **option) -> Memory:
    settings = {"model": model, "message_tokens": 100, "buffer_tokens": None, **option}
    # a turn here is ~31 tokens; buffering off unless a test turns it on
    return Memory(storage=SQLiteStorage(":memory:"), options={"observational_memory": settings})


CONFIG = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}


def chat_turns(memory: Memory, n: int, *, start: int = 0) -> list:
    replies = [AIMessage(f"Reply {i} about Lisbon.") for i in range(start, start + n)]
    model = strict_model(*replies)
    chat = memory.wrap(model)
    for i in range(start, start + n):
        chat.invoke(f"Message {i}: I live in Lisbon and I am allergic to peanuts.", CONFIG)
    return model.seen


def test_past_the_threshold_the_log_replaces_the_observed_messages() -> None:
    observer = Scripted(calls=[])
    memory = om_memory(observer)
    chat_turns(memory, 2)  # under 100 tokens: nothing observed
    assert memory.flush() and observer.calls == []
    chat_turns(memory, 2, start=2)  # past it: the Observer runs behind the turn
    assert memory.flush()
    assert len(observer.calls) == 1
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    (group,) = memory.storage.observation_log(key)
    assert len(group.message_ids) == 8  # every message so far, by id
    seen = chat_turns(memory, 1, start=4)
    sent = seen[-1]
    assert isinstance(sent[0], SystemMessage) and "Observation 1" in sent[0].content
    assert "how to use" not in sent[0].content and "trust the newer one" in sent[0].content
    assert "<current-task>\nChatting" in sent[0].content
    assert not any("Message 0:" in str(m.content) for m in sent[1:])  # observed: not raw
    assert sent[-1].content.startswith("Message 4:")
    assert len(memory.get_messages(thread_id="t1")) == 10  # observed messages stay stored


def test_far_over_the_threshold_the_turn_waits_for_the_observer() -> None:
    observer = Scripted(calls=[])
    memory = om_memory(observer, message_tokens=30, block_after=1.0)
    chat_turns(memory, 2)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    assert memory.storage.observation_log(key)  # no flush needed: it ran in the turn


def test_a_hung_observer_holds_a_turn_no_longer_than_block_timeout() -> None:
    """The Observer hangs (its model never answers until released): a turn far over the
    threshold waits `block_timeout`, then goes on with what it has and says so (a `timeout`
    event); nothing is lost, and the run lands once the model answers."""
    gate = threading.Event()
    observer = Scripted(calls=[], gate=gate, gate_seconds=None)
    events: list = []
    memory = om_memory(observer, message_tokens=30, block_after=1.0, block_timeout=0.3,
                       on_status=events.append)  # fmt: skip
    turn = threading.Thread(target=chat_turns, args=(memory, 2))
    turn.start()
    turn.join(60)  # without the bound the turn waits for the model: forever
    hung = turn.is_alive()
    gate.set()
    turn.join()
    assert not hung
    kinds = [e.kind for e in events]
    assert "timeout" in kinds and events[kinds.index("timeout")].detail["waited_seconds"] == 0.3
    assert memory.flush(30)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    assert memory.storage.observation_log(key)  # the run landed behind the turns
    assert len(memory.get_messages(thread_id="t1")) == 4


def test_a_failing_observer_loses_nothing_and_tries_again(caplog) -> None:
    observer = Scripted(calls=[], fail=True)
    memory = om_memory(observer)
    with caplog.at_level(logging.WARNING):
        chat_turns(memory, 4)
        memory.flush()
    assert "observing thread:t1 failed, retried later: observer model down" in caplog.text
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    assert memory.storage.observation_log(key) == []
    seen = chat_turns(memory, 1, start=4)
    memory.flush()  # its run failed too
    assert any("Message 0:" in str(m.content) for m in seen[-1])  # still shown raw
    observer.fail = False
    chat_turns(memory, 1, start=5)
    memory.flush()
    (group,) = memory.storage.observation_log(key)
    assert len(group.message_ids) == 12  # everything, observed once


def test_concurrent_runs_observe_each_message_once() -> None:
    gate = threading.Event()
    observer = Scripted(calls=[], gate=gate)
    memory = om_memory(observer, message_tokens=10_000)  # no run of its own
    chat_turns(memory, 4)
    service = memory.writes.observations
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    runs = [
        threading.Thread(target=run_sync, args=(service.observing.run(key, "t1", "alice"),))
        for _ in range(4)
    ]
    for t in runs:
        t.start()
    for _ in range(100):  # the first run is inside its model call ...
        if observer.calls:
            break
        threading.Event().wait(0.01)
    gate.set()
    for t in runs:
        t.join(10)
    assert len(observer.calls) == 1  # ... and the others found the scope taken, or nothing left
    assert memory.storage.observation_log(key) == []  # under the threshold: buffered, waiting
    (group,) = memory.storage.observation_log(key, buffered=True)
    assert len(group.message_ids) == 8 and not group.active


def test_the_reflector_condenses_a_long_log_with_provenance() -> None:
    observer = Scripted(calls=[])
    memory = om_memory(observer, observation_tokens=20)
    chat_turns(memory, 4)
    memory.flush()
    chat_turns(memory, 4, start=4)
    memory.flush()
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    (reflection,) = memory.storage.observation_log(key)
    assert reflection.kind == "reflection" and "Condensed" in reflection.text
    assert len(reflection.replaces) >= 1
    seen = chat_turns(memory, 1, start=8)
    assert "Condensed: Alice, Lisbon, peanuts" in seen[-1][0].content


def test_resource_scope_shares_the_log_across_threads() -> None:
    observer = Scripted(calls=[])
    memory = om_memory(observer, scope="resource")
    chat_turns(memory, 4)
    memory.flush()
    chat = memory.wrap(strict_model(AIMessage("Hi again.")))
    chat.invoke("New thread, hello", {"configurable": {"thread_id": "t2", "resource_id": "alice"}})
    assert "Observation 1" in chat.bound.seen[-1][0].content


def test_async_turns() -> None:
    observer = Scripted(calls=[])
    memory = om_memory(observer)
    model = strict_model(*[AIMessage(f"Reply {i} about Lisbon.") for i in range(6)])
    chat = memory.wrap(model)

    async def main() -> None:
        for i in range(6):
            text = f"Message {i}: I live in Lisbon and I am allergic to peanuts."
            await chat.ainvoke(text, CONFIG)
            await memory.aflush()

    asyncio.run(main())
    assert any("Observation" in str(m.content) for m in model.seen[-1])


@pytest.mark.parametrize("option", [True, {"message_tokens": 10}, {"model": "gpt-4o"}])
def test_a_model_is_required(option) -> None:
    with pytest.raises(ConfigurationError, match="observational_memory needs"):
        Memory(storage=SQLiteStorage(":memory:"), options={"observational_memory": option})


@pytest.mark.parametrize(
    "shape", ["lcel wrap", "langgraph hook + checkpointer", "agent middleware"]
)
def test_every_shape_with_working_memory_and_recall_is_provider_valid(shape: str, tmp_path) -> None:
    import warnings

    from langchain.agents import create_agent
    from langgraph.prebuilt import create_react_agent

    observer = Scripted(calls=[])
    memory = Memory(
        storage=SQLiteStorage(tmp_path / "m.db"),
        options={
            "observational_memory": {"model": observer, "message_tokens": 100},
            "working_memory": {"enabled": True},
            "semantic_recall": {"scope": "resource", "top_k": 2},
        },
    )
    replies = [AIMessage(f"Reply {i} about Lisbon and peanuts.") for i in range(6)]
    model = strict_model(*replies)
    tools = [memory.working_memory_tool()]
    if shape == "lcel wrap":
        chat = memory.wrap(model.bind_tools(tools))
        agent = RunnableLambda(lambda state, config: chat.invoke(state["messages"][0][1], config))
    elif shape == "agent middleware":
        agent = create_agent(model, tools, middleware=[memory.middleware()])
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = create_react_agent(
                model, tools, pre_model_hook=memory.pre_model_hook(),
                checkpointer=memory.checkpointer(),
            )  # fmt: skip
    for i in range(6):
        text = f"Message {i}: I live in Lisbon and I am allergic to peanuts."
        agent.invoke({"messages": [("user", text)]}, CONFIG)
        memory.flush()
    last = model.seen[-1]  # the strict model accepted every input; the last one:
    assert isinstance(last[0], SystemMessage) and "Observation" in last[0].content
    assert "WORKING_MEMORY_SYSTEM_INSTRUCTION" in last[0].content  # both, in the one block
    assert sum(isinstance(m, SystemMessage) for m in last) == 1
    assert last[-1].content.startswith("Message 5:")
    history = [m for m in last[1:] if not is_injected(m)]  # (recall may bring any message back)
    assert "Message 0:" not in " ".join(str(m.content) for m in history)  # observed, not raw


def test_a_reflection_that_cannot_shorten_the_log_is_not_retried_every_turn(caplog) -> None:
    class Stubborn(Scripted):
        def _call(self, messages, *args, **kwargs):
            if messages[0].content == REFLECTOR_INSTRUCTIONS:
                self.calls.append(messages)
                return messages[1].content  # the log back, no shorter
            return super()._call(messages, *args, **kwargs)

    observer = Stubborn(calls=[])
    memory = om_memory(observer, observation_tokens=20)
    with caplog.at_level(logging.WARNING):
        chat_turns(memory, 4)
        memory.flush()
    assert "no shorter than the log" in caplog.text
    asked = len(observer.calls)
    service = memory.writes.observations
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    for _ in range(3):  # the log has not grown: no new Reflector call
        run_sync(service.reflecting.run(key, "alice"))
    assert len(observer.calls) == asked
    assert [g.kind for g in memory.storage.observation_log(key)] == ["observation"]  # kept


def covered(memory: Memory, key: str) -> list[str]:
    """Every message id the scope's groups cover, active and buffered, in order."""
    return [i for g in memory.storage.observation_log(key, buffered=True) for i in g.message_ids]


def test_buffering_observes_ahead_and_activates_at_the_threshold() -> None:
    """With buffering the Observer runs every `buffer_tokens`; its groups wait outside the
    log (the messages stay raw in the context) until the threshold activates them, leaving
    about `1 - buffer_activation` of it raw; each message is observed exactly once."""
    observer = Scripted(calls=[])
    memory = om_memory(observer, buffer_tokens=0.25)  # a run every 25 tokens, threshold 100
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    ref = {"resource_id": "alice", "thread_id": "t1"}
    chat_turns(memory, 1)
    memory.flush()
    assert len(observer.calls) == 1  # ahead of the threshold ...
    assert memory.storage.observation_log(key) == []  # ... and not in the log yet
    seen = chat_turns(memory, 1, start=1)
    assert not isinstance(seen[-1][0], SystemMessage)  # no log block: the turn is all raw
    assert any("Message 0:" in str(m.content) for m in seen[-1])
    memory.flush()
    for start in range(2, 6):  # past 100 unobserved tokens
        chat_turns(memory, 1, start=start)
        memory.flush()
    log = memory.storage.observation_log(key)
    assert log and all(g.active for g in log)
    raw = memory.storage.unobserved_tokens(key, **ref)
    assert 0 < raw < memory.writes.observations.config.message_tokens
    stored = [s.message.id for s in memory.storage.list_messages("t1")]
    ids = covered(memory, key)
    assert len(ids) == len(set(ids)) and set(ids) <= set(stored)  # each observed once
    unobserved = memory.storage.unobserved_messages(key, **ref)
    in_log = {i for g in log for i in g.message_ids}
    assert in_log.isdisjoint(s.message.id for s in unobserved)
    assert [s.message.id for s in unobserved] == stored[len(in_log) :]  # the log, then raw
    seen = chat_turns(memory, 1, start=6)
    block = seen[-1][0]
    assert isinstance(block, SystemMessage) and "Observation" in block.content
    raw_shown = [str(m.content) for m in seen[-1][1:-1]]
    assert raw_shown == [str(s.message.content) for s in unobserved]


def test_activation_needs_no_model_call() -> None:
    """Once buffering has caught up, crossing the threshold puts the buffered groups into
    the log in the turn itself, even with the model down."""
    observer = Scripted(calls=[])
    memory = om_memory(observer, buffer_tokens=0.25)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    for start in range(3):  # ~93 tokens, all buffered
        chat_turns(memory, 1, start=start)
        memory.flush()
    assert memory.storage.observation_log(key) == [] and covered(memory, key)
    observer.fail = True
    chat_turns(memory, 1, start=3)  # past 100: activation in the save, no model
    assert memory.storage.observation_log(key)
    memory.flush()  # the buffering run of the new turn failed; it will be retried


def test_far_over_the_threshold_the_turn_waits_for_the_buffering_run() -> None:
    """A turn past `block_after` times the threshold while a buffering run is inside its
    model call waits for that run, and is answered with its observations in the log."""
    gate = threading.Event()
    observer = Scripted(calls=[], gate=gate)
    memory = om_memory(observer, buffer_tokens=0.25, block_after=1.2)
    key = scope_key("thread", resource_id="alice", thread_id="t1")
    chat_turns(memory, 1)  # starts a buffering run, held in its model call
    for _ in range(100):
        if observer.calls:
            break
        threading.Event().wait(0.01)
    assert observer.calls and memory.storage.observation_log(key, buffered=True) == []
    threading.Timer(0.3, gate.set).start()
    seen = chat_turns(memory, 4, start=1)  # ~155 tokens: the last turns wait
    assert gate.is_set()
    assert memory.storage.observation_log(key)  # in the log before the later turns ran
    assert any(isinstance(m, SystemMessage) for m in seen[-1])
    memory.flush()


@pytest.mark.parametrize(
    "bad",
    [
        {"buffer_tokens": -0.1},
        {"buffer_activation": 0},
        {"buffer_activation": 1.5},
        {"block_after": 0.5},
        {"message_tokens": 0},
        {"buffering": True},  # not an option
    ],
)
def test_invalid_buffering_options_are_a_clear_error(bad) -> None:
    with pytest.raises(ConfigurationError, match="invalid observational_memory options"):
        Memory(
            storage=SQLiteStorage(":memory:"),
            options={"observational_memory": {"model": Scripted(calls=[]), **bad}},
        )


def test_buffer_tokens_as_a_share_or_a_count() -> None:
    from langchain_mastra_memory.observational import ObservationalConfig

    model = Scripted(calls=[])
    share = ObservationalConfig(model=model, message_tokens=1_000, buffer_tokens=0.25)
    count = ObservationalConfig(model=model, message_tokens=1_000, buffer_tokens=300)
    off = ObservationalConfig(model=model, buffer_tokens=None)
    assert (share.buffer_step, share.retain_tokens) == (250, pytest.approx(200))
    assert count.buffer_step == 300
    assert (off.buffer_step, off.retain_tokens) == (None, 0.0)
