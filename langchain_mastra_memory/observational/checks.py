"""Whether an Observer's or Reflector's reply may replace what it read.

Once an observation lands, the messages it covers leave the context; once a reflection lands,
the log it condensed does. So a reply must carry real content before it is committed. A model
that echoes its prompt returns the format example (``Date: YYYY-MM-DD`` / ``- [high] (HH:MM)
...``) or the instructions themselves; a confused one writes about nothing it was shown. Both
are refused (`UnusableReply`): nothing is committed, the messages stay raw, and the next run
tries again.

The rules, each cheap and independent of the language:

- entries that are the template's placeholders are dropped (and a current task that is the
  template's own line); an observation left with nothing is refused;
- an observation must share content with the messages it covers: some term (a word of three
  or more characters, a number, or a pair of characters in scripts written without spaces)
  that is not a word of the instructions;
- a reflection must keep the log's dated content: at least half of the dates under which the
  log holds a ``[high]`` entry (a correction may retire one), and some entry with a date.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> from .prompts import Entry
    >>> echo = [Entry(None, "medium", "Date: YYYY-MM-DD"), Entry(None, "high", "(HH:MM) ...")]
    >>> observation_problem(echo, [HumanMessage("I moved to Lisbon")])
    "the Observer's reply holds only the prompt's format example"
    >>> observation_problem([Entry("2026-11-22", "high", "User moved to Lisbon")],
    ...                     [HumanMessage("I moved to Lisbon")]) is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from .prompts import OBSERVER_INSTRUCTIONS, REFLECTOR_INSTRUCTIONS, Entry

_PLACEHOLDER = re.compile(r"YYYY-MM-DD|\bHH:MM\b|^\W*(?:\(\s*HH:MM\s*\)\s*)?(?:\.\.\.|…)\W*$")
_TEMPLATE_TASK = "One or two lines: what the user is working on right now"
_WORD = re.compile(r"[^\W_]+")


class UnusableReply(ValueError):
    """A model reply that must not replace what it read (see the module docstring)."""


def _terms(text: str) -> set[str]:
    """Words of three or more characters and numbers; in scripts written without spaces
    (CJK), each pair of adjacent characters."""
    found: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if word.isascii():
            if len(word) >= 3 or word.isdigit():
                found.add(word)
        else:
            found.update(word[i : i + 2] for i in range(max(1, len(word) - 1)))
    return found


_INSTRUCTION_TERMS = _terms(OBSERVER_INSTRUCTIONS + REFLECTOR_INSTRUCTIONS)


def is_placeholder(entry: Entry) -> bool:
    """An entry copied from the prompt's format example."""
    return bool(_PLACEHOLDER.search(entry.text))


def usable_entries(entries: Sequence[Entry]) -> list[Entry]:
    """The entries without the template's placeholders."""
    return [e for e in entries if not is_placeholder(e)]


def usable_task(task: str | None) -> str | None:
    """The current task, unless it is the template's own line."""
    return None if task is None or task.startswith(_TEMPLATE_TASK) else task


def _transcript_terms(messages: Sequence[BaseMessage]) -> set[str]:
    terms: set[str] = set()
    for message in messages:
        terms |= _terms(message.text or "")
        for call in getattr(message, "tool_calls", None) or []:
            terms |= _terms(f"{call['name']} {call['args']}")
    return terms


def observation_problem(entries: Sequence[Entry], messages: Sequence[BaseMessage]) -> str | None:
    """Why an Observer's entries may not stand for `messages` (None: they may)."""
    kept = usable_entries(entries)
    if not entries:
        return "the Observer's reply held no observation"
    if not kept:
        return "the Observer's reply holds only the prompt's format example"
    said = set().union(*(_terms(e.text) for e in kept)) - _INSTRUCTION_TERMS
    if not said & _transcript_terms(messages):
        return "the Observer's reply mentions nothing of the messages it was to observe"
    return None


def reflection_problem(entries: Sequence[Entry], log: Sequence[Entry]) -> str | None:
    """Why a Reflector's entries may not replace `log` (None: they may)."""
    kept = usable_entries(entries)
    if not kept:
        return "the Reflector's reply holds no observation but the prompt's format example"
    dates = {e.date for e in kept if e.date}
    if any(e.date for e in log) and not dates:
        return "the Reflector's reply dropped every date of the log"
    important = {e.date for e in log if e.date and e.priority == "high"}
    if important and len(important & dates) * 2 < len(important):
        return (
            f"the Reflector's reply keeps {len(important & dates)} of the "
            f"{len(important)} dates with high-priority observations"
        )
    return None
