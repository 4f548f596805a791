"""Observational memory that survives a bad day: a list of models is a fallback chain (the next
answers when one raises), `ModelByInputTokens` picks a model by the prompt's size, and
``temporal_markers`` mark pauses in what the Observer reads. Each model sees only the prompt
of the scope it was called for."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import ConfigurationError, Memory, ModelByInputTokens, SQLiteStorage
from langchain_mastra_memory.storage.observations import scope_key


class Down(FakeListChatModel):
    """A provider having a bad day: every call raises."""

    responses: list = ["unused"]  # noqa: RUF012
    calls: int = 0

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.calls += 1
        raise ConnectionError("503 from the provider")


class Noting(FakeListChatModel):
    """An Observer noting each line it is shown (and keeping what it was shown)."""

    responses: list = ["unused"]  # noqa: RUF012
    shown: list = []  # noqa: RUF012

    def _call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        text = messages[-1].content
        self.shown.append(text)
        lines = [ln for ln in text.split("<new-messages>")[-1].splitlines() if ln.startswith("[")]
        return "Date: 2026-11-22\n" + "\n".join(f"- [high] Noted {ln}" for ln in lines)


def observe(
    model: Any, tmp_path: Any, *, times: list[datetime] | None = None, **extra: Any
) -> Memory:
    options = {"observational_memory": {"model": model, "scope": "thread", "message_tokens": 20,
                                        "buffer_tokens": None, **extra}}  # fmt: skip
    tmp_path.mkdir(parents=True, exist_ok=True)
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options=options)
    memory.create_thread(thread_id="t", resource_id="alice")
    memory.save_messages([HumanMessage("Our sailboat is named Albatross."),
                          AIMessage("A fine name for a boat " * 4)],
                         thread_id="t", resource_id="alice", created_at=times)  # fmt: skip
    memory.context([HumanMessage("and?")], thread_id="t", resource_id="alice")
    memory.settled()
    return memory


def log_text(memory: Memory) -> str:
    key = scope_key("thread", resource_id="alice", thread_id="t")
    return "\n".join(g.text for g in memory.storage.observation_log(key))


def test_the_next_model_observes_when_the_first_raises(tmp_path: Any) -> None:
    down, up = Down(), Noting()
    memory = observe([down, up], tmp_path)
    assert down.calls >= 1  # it was asked first
    assert "Albatross" in log_text(memory)  # ... and the second one answered


def test_a_model_is_chosen_by_the_size_of_its_input(tmp_path: Any) -> None:
    small, large = Noting(), Down()
    memory = observe(ModelByInputTokens(up_to={100_000: small, 1_000_000: large}), tmp_path)
    assert "Albatross" in log_text(memory) and large.calls == 0
    tiny = Down()
    memory = observe([ModelByInputTokens(up_to={10: tiny, 100_000: Down()}), Noting()],
                     tmp_path / "other")  # fmt: skip
    assert "Albatross" in log_text(memory) and tiny.calls == 0  # the prompt is over 10 tokens


def test_pauses_are_marked_in_what_the_observer_reads(tmp_path: Any) -> None:
    start = datetime(2026, 11, 20, 9, tzinfo=timezone.utc)
    times = [start, start + timedelta(days=3, hours=2)]
    marked, plain = Noting(), Noting()
    observe(marked, tmp_path, times=times, temporal_markers=True)
    observe(plain, tmp_path / "plain", times=times)
    assert "(3 days later)" in marked.shown[-1]
    assert "later)" not in plain.shown[-1]


@pytest.mark.parametrize("model", [[], ["gpt-4o"], "gpt-4o", ModelByInputTokens])
def test_a_bad_model_option_is_a_configuration_error(tmp_path: Any, model: Any) -> None:
    with pytest.raises(ConfigurationError):
        Memory(storage=SQLiteStorage(tmp_path / "m.db"),
               options={"observational_memory": {"model": model}})  # fmt: skip


def test_model_by_input_tokens_refuses_bad_bounds() -> None:
    for up_to in ({}, {0: Noting()}, {10: "gpt-4o"}, {True: Noting()}):
        with pytest.raises(ConfigurationError):
            ModelByInputTokens(up_to=up_to)
