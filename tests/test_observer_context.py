"""How much of the log the Observer is shown (Mastra's ``observation.previousObserverTokens``):
the newest entries within the budget, none at 0, the whole log by default."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from test_extractors import CONFIG
from test_observation_hooks import SAYS, echo, memory_with

from langchain_mastra_memory.errors import ConfigurationError
from langchain_mastra_memory.observational.prompts import REFLECTOR_INSTRUCTIONS
from langchain_mastra_memory.observational.replies import log_tail
from langchain_mastra_memory.testing import strict_model
from langchain_mastra_memory.tokens.counting import TokenCounter

COUNTER = TokenCounter()


def count(text: str) -> float:
    return float(len(COUNTER.encoding.encode_ordinary(text)))


def shown_logs(budget: object, tmp_path) -> list[str]:
    model = echo()
    memory = memory_with(model, tmp_path, previous_observer_tokens=budget)
    chat = memory.wrap(strict_model(*[AIMessage(f"ok {i}") for i in range(12)]))
    for text in SAYS * 2:
        chat.invoke(text, CONFIG)
        assert memory.flush(30)
    prompts = [str(m[-1].content) for m in model.seen
               if not m[0].content.startswith(REFLECTOR_INSTRUCTIONS[:80])]  # fmt: skip
    return [p.split("<existing-observations>")[-1].split("</existing-observations>")[0]
            if "<existing-observations>" in p else "" for p in prompts]  # fmt: skip


@pytest.mark.parametrize("budget", [None, False])
def test_the_observer_sees_the_whole_log_by_default(budget: object, tmp_path) -> None:
    logs = shown_logs(budget, tmp_path)
    assert len(logs) >= 3 and logs[-1].count("Said:") > logs[1].count("Said:") > 0


def test_the_observer_sees_the_newest_entries_within_the_budget(tmp_path) -> None:
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    whole, tail = shown_logs(None, tmp_path / "a"), shown_logs(40, tmp_path / "b")
    assert len(whole) == len(tail) >= 3
    assert count(tail[-1].strip()) <= 40 < count(whole[-1].strip())
    newest = [line for line in whole[-1].strip().splitlines() if "Said:" in line][-1]
    assert newest in tail[-1]  # the newest entry is what is kept


def test_a_zero_budget_shows_no_log(tmp_path) -> None:
    logs = shown_logs(0, tmp_path)
    assert len(logs) >= 3 and all(log.strip() == "(none yet)" for log in logs)


def test_log_tail_keeps_dates_and_refuses_a_negative_budget(tmp_path) -> None:
    log = "Date: 2026-01-01\n- [high] a\n- [low] b\nDate: 2026-01-02\n- [high] c"
    assert log_tail(log, None, count) == log and log_tail(log, 1_000, count) == log
    last_two = "Date: 2026-01-01\n- [low] b\nDate: 2026-01-02\n- [high] c"
    assert log_tail(log, count(last_two), count) == last_two
    assert log_tail(log, count(last_two) - 1, count) == "Date: 2026-01-02\n- [high] c"
    with pytest.raises(ConfigurationError, match="previous_observer_tokens"):
        memory_with(echo(), tmp_path, previous_observer_tokens=-1)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "shape", ["lcel wrap", "langgraph hook", "agent middleware", "checkpointer"]
)
@pytest.mark.parametrize("on_idle", [False, True])
def test_a_turn_that_ends_is_buffered_with_buffer_on_idle(
    shape: str, mode: str, on_idle: bool, tmp_path
) -> None:
    from test_extractors import talk
    from test_group_chat_authors import agent_for

    model, events = echo(), []
    memory = memory_with(model, tmp_path, message_tokens=400, buffer_tokens=0.5,
                         buffer_on_idle=on_idle, on_status=events.append)  # fmt: skip
    agent = agent_for(shape, memory, strict_model(AIMessage("Booked.")))
    talk(agent, memory, mode, SAYS[:1])  # one short turn: far under buffer_tokens (200)
    buffered = memory.storage.observation_log("thread:t1", buffered=True)
    if on_idle:  # observed behind the turn, waiting buffered (the log itself is unchanged)
        assert [e.kind for e in events] == ["observing", "buffered"]
        assert len(buffered) == 1 and "Booked." in buffered[0].text
        assert memory.storage.observation_log("thread:t1") == []
    else:
        assert events == [] and buffered == [] and model.seen == []
