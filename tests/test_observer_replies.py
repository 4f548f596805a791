"""An Observer or Reflector whose reply must not replace what it read, and one that never
returns: nothing is committed, the messages stay in the context, the process still exits, and
the next run (or the next process) takes the work over. On SQLite and PostgreSQL."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage

from langchain_mastra_memory import Memory, SQLiteStorage
from langchain_mastra_memory.observational.prompts import REFLECTOR_INSTRUCTIONS
from langchain_mastra_memory.observational.replies import (
    observation_problem,
    parse_log,
    reflection_problem,
    usable_entries,
)
from langchain_mastra_memory.storage.records import scope_key

GOOD = "Date: 2026-11-22\n- [high] (10:00) User lives in Lisbon and is allergic to peanuts."
TEMPLATE = "<observations>\nDate: YYYY-MM-DD\n- [high] (HH:MM) ...\n- [medium] (HH:MM) ...\n</observations>"


class Replies(FakeListChatModel):
    """Observer and Reflector: `observe` and `reflect` are their replies (``"echo"``: the
    prompt itself, as a model that repeats its input)."""

    responses: list = ["unused"]  # noqa: RUF012
    observe: str = GOOD
    reflect: str = "Date: 2026-11-22\n- [high] Condensed: Lisbon, peanuts."

    def _call(self, messages, *args, **kwargs):
        reply = self.reflect if messages[0].content == REFLECTOR_INSTRUCTIONS else self.observe
        return "\n".join(str(m.content) for m in messages) if reply == "echo" else reply


def om(storage, model: Replies, **options) -> Memory:
    settings = {"model": model, "message_tokens": 100, "buffer_tokens": None, **options}
    return Memory(storage=storage, options={"observational_memory": settings})


def turns(memory: Memory, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        memory.save_turn(
            [HumanMessage(f"Message {i}: I live in Lisbon and I am allergic to peanuts."),
             AIMessage(f"Reply {i} about Lisbon.")],
            thread_id="t1", resource_id="alice",
        )  # fmt: skip


KEY = scope_key("thread", resource_id="alice", thread_id="t1")


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("echo", "format example"),  # the whole prompt back: its <observations> is the template
        (TEMPLATE, "format example"),
        ("Date: 2026-11-22\n- [high] The sky was blue over Reykjavik.", "mentions nothing"),
        ("", "held no observation"),
    ],
)
def test_an_observer_reply_that_covers_nothing_is_refused(storage, caplog, reply, problem) -> None:
    model = Replies(observe=reply)
    memory = om(storage, model)
    with caplog.at_level(logging.WARNING):
        turns(memory, 4)
        assert memory.flush(30)
    assert problem in caplog.text
    assert memory.storage.observation_log(KEY, buffered=True) == []  # nothing committed
    context = memory.context(
        [HumanMessage("Where do I live?")], thread_id="t1", resource_id="alice"
    )
    assert any("Message 0:" in str(m.content) for m in context)  # still shown raw
    model.observe = GOOD  # the model recovers: the next save observes everything, once
    turns(memory, 1, start=4)
    assert memory.flush(30)
    (group,) = memory.storage.observation_log(KEY)
    assert len(group.message_ids) == 10 and "YYYY" not in group.text


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("echo", "format example"),
        (TEMPLATE, "format example"),
        ("- [high] Lisbon, peanuts.", "dropped every date"),
    ],
)
def test_a_reflection_that_drops_the_logs_dated_content_is_refused(
    storage, caplog, reply, problem
) -> None:
    model = Replies(reflect=reply)
    memory = om(storage, model, observation_tokens=20)
    turns(memory, 4)
    assert memory.flush(30)
    with caplog.at_level(logging.WARNING):
        turns(memory, 4, start=4)
        assert memory.flush(30)
    assert problem in caplog.text
    log = memory.storage.observation_log(KEY)
    assert len(log) == 2 and all(g.kind == "observation" for g in log)  # as it was
    assert all("Lisbon" in g.text for g in log)


def test_placeholder_entries_are_dropped_from_a_reply_that_has_real_ones() -> None:
    mixed = TEMPLATE.replace("</observations>", "Date: 2026-11-22\n- [high] User moved to Lisbon.")
    entries = parse_log(mixed).entries
    assert observation_problem(entries, [HumanMessage("I moved to Lisbon")]) is None
    assert [e.text for e in usable_entries(entries)] == ["User moved to Lisbon."]
    log = parse_log("Date: 2026-11-20\n- [high] a\nDate: 2026-11-21\n- [high] b\n"
                    "Date: 2026-11-22\n- [high] c").entries  # fmt: skip
    kept_one = parse_log("Date: 2026-11-22\n- [high] c").entries
    assert "keeps 1 of the 3 dates" in (reflection_problem(kept_one, log) or "")
    kept_two = parse_log("Date: 2026-11-21\n- [high] b\nDate: 2026-11-22\n- [high] c").entries
    assert reflection_problem(kept_two, log) is None  # a correction may retire one date
    japanese = parse_log("Date: 2026-11-22\n- [high] ユーザーはリスボンに住んでいる").entries
    assert observation_problem(japanese, [HumanMessage("私はリスボンに住んでいます")]) is None


HUNG_PROCESS = """
import sys, threading
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_mastra_memory import Memory, SQLiteStorage

class Hung(FakeListChatModel):
    responses: list = ["unused"]
    def _call(self, *args, **kwargs):
        print("observer called", flush=True)
        threading.Event().wait()  # never returns

options = {"model": Hung(), "message_tokens": 100, "buffer_tokens": None, "lease_seconds": 1,
           "block_after": 10}  # the Observer runs behind the turn, never in it
memory = Memory(storage=SQLiteStorage(sys.argv[1]), options={"observational_memory": options})
for i in range(4):
    memory.save_turn([HumanMessage(f"Message {i}: I live in Lisbon and I am allergic to peanuts."),
                      AIMessage(f"Reply {i} about Lisbon.")], thread_id="t1", resource_id="alice")
memory.flush(2)  # the Observer hangs: flush gives up
print("exiting", flush=True)
"""


def test_a_hung_observer_does_not_hold_the_process_and_the_next_one_takes_over(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    script = tmp_path / "hung.py"
    script.write_text(textwrap.dedent(HUNG_PROCESS))
    done = subprocess.run(  # would wait forever if the worker were joined at exit
        [sys.executable, str(script), str(db)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "observer called" in done.stdout and "exiting" in done.stdout
    time.sleep(1.1)  # the hung run's lease lapses
    memory = om(SQLiteStorage(db), Replies(), lease_seconds=1)
    turns(memory, 1, start=4)
    assert memory.flush(30)
    (group,) = memory.storage.observation_log(KEY)
    assert len(group.message_ids) == 10  # the next process observed what the hung one held
