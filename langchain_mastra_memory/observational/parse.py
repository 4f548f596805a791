"""Reading an Observer's or Reflector's reply into log entries, whatever shape it came in.

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
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .prompts import PRIORITIES, Entry, format_entries

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
