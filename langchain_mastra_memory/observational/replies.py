"""An Observer's or Reflector's reply: read into log entries whatever shape it came in
(`parse_log`), then checked that it may replace what it read.

Models drift from the format they are asked for: a missing closing tag, ``**Date:**`` or
``## 2026-11-22`` headings, emoji or ``(high)`` priorities, numbered lists, prose lines,
reasoning in ``<think>`` blocks. `parse_log` takes what it can and never loses a line: a line
it cannot place becomes a medium-priority entry of the current date, an indented line continues
the entry above, and it never raises.

Examples:
    >>> parsed = parse_log("<observations>\\nDate: 2026-11-22\\n- [high] (14:05) Likes tea\\n"
    ...                    "</observations>\\n<current-task>\\nPlan the trip\\n</current-task>")
    >>> parsed.entries[0].priority, parsed.entries[0].text, parsed.current_task
    ('high', '(14:05) Likes tea', 'Plan the trip')

**Whether a reply may replace what it read.** Once an observation lands, the messages it covers
leave the context; once a reflection lands, the log it condensed does. So a reply must carry
real content before it is committed. A model that echoes its prompt returns the format example
(``Date: YYYY-MM-DD`` / ``- [high] (HH:MM) ...``) or the instructions themselves; a confused one
writes about nothing it was shown. Both are refused (`UnusableReply`): nothing is committed, the
messages stay raw, and the next run tries again.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage

from .prompts import (
    OBSERVER_INSTRUCTIONS,
    PRIORITIES,
    REFLECTOR_INSTRUCTIONS,
    Entry,
    format_entries,
)

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)

_DATE = re.compile(
    r"^\s*(?:#+\s*|\*\*)?(?:date\s*:?\s*)?(?:\*\*\s*)?(\d{4}-\d{2}-\d{2}|undated)\b[^\n]*$", re.I
)

_BULLET = re.compile(r"^(\s*)(?:[-*•+]|\d+[.)])\s+(.*)$")

_PRIORITY = re.compile(
    r"^(?:\[(high|medium|low)\]|\((high|medium|low)\)|(high|medium|low)\s*:|(🔴|🟡|🟢))\s*", re.I
)

_EMOJI = {"🔴": "high", "🟡": "medium", "🟢": "low"}


@dataclass
class ParsedLog:
    """Entries in the order read, and the current task (None when the reply gave none)."""

    entries: list[Entry] = field(default_factory=list)
    current_task: str | None = None
    working_memory: str | None = None  # an Observer's update of the working memory, if any
    title: str | None = None  # an Observer's suggested thread title (``suggest_title``)
    extraction: Any = None  # the pass's extractor values (`extractors.Extraction`), if asked


def _block(text: str, tag: str) -> tuple[str | None, str]:
    """The inside of ``<tag>...</tag>`` (an unclosed one runs to the next tag or the end), and
    the text without it."""
    match = re.search(rf"<{tag}>(.*?)(?:</{tag}>|(?=<[a-z-]+>)|$)", text, re.S | re.I)
    if match is None:
        return None, text
    return match.group(1).strip(), text[: match.start()] + text[match.end() :]


def _priority(text: str) -> tuple[str, str]:
    match = _PRIORITY.match(text)
    if match is None:
        return "medium", text.strip()
    word = next(g for g in match.groups() if g)
    return _EMOJI.get(word, word.lower()), text[match.end() :].strip()


def reply_text(content: object) -> str:
    """A reply's text (content blocks joined)."""
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return str(content or "")


def parse_log(text: object) -> ParsedLog:
    """The entries and current task in a model's reply (see the module docstring)."""
    body = _THINK.sub("", reply_text(text))
    working, body = _block(body, "working-memory")
    title, body = _block(body, "thread-title")
    task, body = _block(body, "current-task")
    observations, rest = _block(body, "observations")
    body = observations if observations is not None else rest
    parsed = ParsedLog(
        current_task=task or None,
        working_memory=working or None,
        title=" ".join((title or "").split())[:120] or None,
    )
    date: str | None = None
    for raw in body.splitlines():
        if not raw.strip() or re.fullmatch(r"\s*</?[a-z-]+>\s*", raw, re.I):
            continue
        if (found := _DATE.match(raw)) is not None and not _BULLET.match(raw):
            date = None if found.group(1).lower() == "undated" else found.group(1)
            continue
        bullet = _BULLET.match(raw)
        indented = raw[: len(raw) - len(raw.lstrip())]
        if bullet is None and indented and parsed.entries:  # continues the entry above
            last = parsed.entries[-1]
            parsed.entries[-1] = Entry(last.date, last.priority, f"{last.text} {raw.strip()}")
            continue
        priority, words = _priority(bullet.group(2) if bullet else raw.strip())
        if words:
            parsed.entries.append(
                Entry(date, priority if priority in PRIORITIES else "medium", words)
            )
    return parsed


def log_tail(log: str, max_tokens: int | None, count: Callable[[str], float]) -> str:
    """The newest entries of `log` within `max_tokens` (Mastra's ``previousObserverTokens``:
    what the Observer is shown of the log); the whole log when None, nothing when 0.

    Examples:
        >>> log = "Date: 2026-01-01\\n- [high] old fact\\nDate: 2026-01-02\\n- [low] new fact"
        >>> print(log_tail(log, 7, lambda text: len(text.split())))
        Date: 2026-01-02
        - [low] new fact
    """
    if max_tokens is None or count(log) <= max_tokens:
        return log
    entries = parse_log(log).entries
    kept: list[Entry] = []
    for entry in reversed(entries):
        if count(format_entries([entry, *kept])) > max_tokens:
            break
        kept.insert(0, entry)
    return format_entries(kept) if kept else ""


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
