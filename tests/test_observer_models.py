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
from langchain_mastra_memory.provider_rules import provider_violations
from langchain_mastra_memory.storage.records import scope_key


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
        problems = provider_violations(messages)  # what a provider would refuse
        if problems:
            raise ValueError(f"invalid model input: {problems}")
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


class Titling(Noting):
    """An Observer that also suggests a title when asked for one."""

    def _call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        reply = super()._call(messages, *args, **kwargs)
        asked = "<thread-title>" in str(messages[0].content)
        return reply + ("\n<thread-title>Naming the sailboat</thread-title>" if asked else "")


def test_the_observer_titles_an_untitled_thread_and_never_renames_one(tmp_path: Any) -> None:
    memory = observe(Titling(), tmp_path, suggest_title=True)
    assert memory.get_thread("t").title == "Naming the sailboat"
    options = {"observational_memory": {"model": Titling(), "scope": "thread",
                                        "message_tokens": 20, "buffer_tokens": None,
                                        "suggest_title": True}}  # fmt: skip
    named = Memory(storage=SQLiteStorage(tmp_path / "named.db"), options=options)
    named.create_thread(thread_id="n", resource_id="alice", title="My own title")
    named.save_messages([HumanMessage("Our sailboat is named Albatross."),
                         AIMessage("A fine name for a boat " * 4)],
                        thread_id="n", resource_id="alice")  # fmt: skip
    named.settled()
    assert named.get_thread("n").title == "My own title"


def test_a_long_backlog_is_observed_in_batches(tmp_path: Any) -> None:
    noting = Noting()
    noting.shown = []
    options = {"observational_memory": {"model": noting, "scope": "thread",
                                        "message_tokens": 60, "buffer_tokens": None,
                                        "max_tokens_per_batch": 40}}  # fmt: skip
    memory = Memory(storage=SQLiteStorage(tmp_path / "m.db"), options=options)
    memory.create_thread(thread_id="t", resource_id="alice")
    memory.save_messages([HumanMessage(f"Fact number {i}: the boat has {i} sails.") for i in range(8)],
                         thread_id="t", resource_id="alice")  # fmt: skip
    memory.settled()
    assert len(noting.shown) >= 3  # ~13 tokens a message, 40 a batch
    key = scope_key("thread", resource_id="alice", thread_id="t")
    log = "\n".join(g.text for g in memory.storage.observation_log(key, buffered=True))
    assert all(log.count(f"Fact number {i}:") == 1 for i in range(8))  # each observed once
    batches = [chunk.split("<new-messages>")[-1] for chunk in noting.shown]
    assert all(batch.count("Fact number") <= 3 for batch in batches)  # within 40 tokens


def test_buffered_observations_activate_after_an_idle_thread(tmp_path: Any) -> None:
    start = datetime(2026, 11, 20, 9, tzinfo=timezone.utc)

    def run(folder: Any, **extra: Any) -> str:
        folder.mkdir(parents=True, exist_ok=True)
        options = {"observational_memory": {"model": Noting(), "scope": "thread",
                                            "message_tokens": 10_000, "buffer_tokens": 20,
                                            **extra}}  # fmt: skip
        memory = Memory(storage=SQLiteStorage(folder / "m.db"), options=options)
        memory.create_thread(thread_id="t", resource_id="alice")
        memory.save_messages([HumanMessage("Our sailboat is named Albatross."),
                              AIMessage("A fine name for a boat " * 4)],
                             thread_id="t", resource_id="alice",
                             created_at=[start, start])  # fmt: skip
        memory.settled()  # buffered behind the turn, under the threshold: not in the log yet
        assert log_text(memory) == ""
        later = start + timedelta(minutes=10)
        memory.save_messages([HumanMessage("Back again.")], thread_id="t", resource_id="alice",
                             created_at=[later])  # fmt: skip
        memory.settled()
        return log_text(memory)

    assert "Albatross" in run(tmp_path / "idle", activate_after_idle="auto")  # 5 minutes
    assert run(tmp_path / "plain") == ""


@pytest.mark.parametrize("value", ["soon", -5, "5 fortnights", True])
def test_a_bad_idle_duration_names_the_option(tmp_path: Any, value: Any) -> None:
    with pytest.raises(ConfigurationError, match="activate_after_idle"):
        Memory(storage=SQLiteStorage(tmp_path / "m.db"), options={"observational_memory": {
            "model": Noting(), "activate_after_idle": value}})  # fmt: skip
