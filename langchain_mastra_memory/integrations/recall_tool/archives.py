"""What the recall tool reads of rolling archives (``mode="observations"``): the caller's
archives, newest first, a page at a time, and one archived group's exact text, a chunk at a
time, with where it came from (Mastra's ``recall`` with ``mode: "observations"``).

An archive is the caller's when its scope is: the caller's resource log, or the log of a thread
the caller owns now. Any other id (another resource's, a deleted thread's, a made-up one) reads
as unknown, in the same words, so an id never tells whether someone else's archive exists.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from langchain_core.tools import ToolException

from ...observational.archives import date_span, label
from ...storage.records import ObservationArchive, ObservationGroup, scope_key
from ...tokens.counting import TokenCounter, default_counter
from ...twins import Steps, call

CHUNK_TOKENS = 2_000  # the most of a group's text one call returns (Mastra's default)


def _tokens(text: str) -> int:
    counter = default_counter() or TokenCounter()  # (None only without tiktoken's file)
    return len(counter.encoding.encode_ordinary(text))


def chunk(text: str, offset: int, max_tokens: int = CHUNK_TOKENS) -> tuple[str, int | None]:
    """The longest piece of `text` from `offset` within `max_tokens` (at least a character),
    and where the next piece starts (None: this one reaches the end).

    Examples:
        >>> chunk("one two three", 4)
        ('two three', None)
        >>> piece, after = chunk("a " * 5000, 0, max_tokens=10)
        >>> _tokens(piece) <= 10 < _tokens("a " * 5000), after == len(piece)
        (True, True)
    """
    rest = text[offset:]
    if _tokens(rest) <= max_tokens:
        return rest, None
    low, high, best = 1, len(rest), 1
    while low <= high:
        mid = (low + high) // 2
        if _tokens(rest[:mid]) <= max_tokens:
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return rest[:best], offset + best


def owns(storage: Any, resource_id: str, archive: ObservationArchive) -> Steps[bool]:
    """Whether `archive` lies in one of `resource_id`'s observation scopes."""
    if archive.scope_key == scope_key("resource", resource_id=resource_id, thread_id=None):
        return True
    if not archive.scope_key.startswith("thread:"):
        return False
    thread = yield from call(storage.get_thread, archive.scope_key.removeprefix("thread:"))
    return thread is not None and thread.resource_id == resource_id


def listing(storage: Any, keys: list[str], page: int, per_page: int, more: Any) -> Steps[str]:
    """The archives of `keys`, newest first, page `page`: each with its groups' ids, dates and
    labels (`more(page)`: the line that asks for the next page)."""
    found: list[ObservationArchive] = yield from call(
        storage.observation_archives, keys, limit=per_page + 1, offset=page * per_page
    )
    if not found:
        return (
            f"No archived observations on page {page}."
            if page
            else "No observations have been archived."
        )
    lines = [f"Archived observations, newest first (page {page}):"]
    for archive in found[:per_page]:
        lines.append(f"- archive_id={archive.id!r}, archived {archive.archived_at:%Y-%m-%d}:")
        for group in reversed(archive.groups):
            lines.append(f"  - group_id={group.id!r} ({date_span(group)}): {label(group)}")
    if len(found) > per_page:
        lines.append(more(page))
    return "\n".join(lines)


def reading(
    storage: Any,
    resource_id: str,
    archive_id: str,
    group_id: str | None,
    char_offset: int,
) -> Steps[str]:
    """One archived group's text from `char_offset` (the archive's first group when
    `group_id` is None), a chunk at a time, with where its messages are."""
    unknown = ToolException(
        f"There is no archive {archive_id!r} in this user's memory. Use an archive_id from "
        'the catalog, or call with mode "observations" and no query to list the archives.'
    )
    archive: ObservationArchive | None = yield from call(storage.observation_archive, archive_id)
    if archive is None or not (yield from owns(storage, resource_id, archive)):
        raise unknown
    groups = {g.id: g for g in archive.groups}
    group = groups.get(group_id) if group_id is not None else archive.groups[0]
    if group is None:
        raise ToolException(
            f"Archive {archive_id!r} has no group {group_id!r}; its groups are "
            f"{', '.join(repr(g) for g in groups)}."
        )
    if not 0 <= char_offset <= len(group.text):
        raise ToolException(f"char_offset must be between 0 and {len(group.text)} for this group.")
    text, next_offset = chunk(group.text, char_offset)
    position = list(groups).index(group.id) + 1
    lines = [
        f"Archived observations (archive_id={archive.id!r}, group_id={group.id!r}, group "
        f"{position} of {len(groups)}, archived {archive.archived_at:%Y-%m-%d}, about "
        f"{date_span(group)}), characters {char_offset}..{char_offset + len(text)} of "
        f"{len(group.text)}:",
        text,
    ]
    if next_offset is not None:
        lines.append(
            f"More of this group: call again with archive_id={archive.id!r}, "
            f"group_id={group.id!r}, char_offset={next_offset}."
        )
    lines.append((yield from _source(storage, resource_id, group)))
    others = [repr(g) for g in groups if g != group.id]
    if others:
        lines.append(f"Other groups in this archive: {', '.join(others)}.")
    return "\n".join(lines)


def _source(storage: Any, resource_id: str, group: ObservationGroup) -> Steps[str]:
    """Where a group's messages are, and how to read their exact words."""
    found = []
    if group.message_ids:
        ends = list(dict.fromkeys([group.message_ids[0], group.message_ids[-1]]))
        found = yield from call(storage.get_messages_by_id, ends, resource_id=resource_id)
    if not found:
        return "Source: its messages are no longer stored."
    first, last = min(found, key=lambda s: s.created_at), max(found, key=lambda s: s.created_at)
    until = last.created_at + timedelta(seconds=1)  # (until is exclusive)
    return (
        f"Source: {len(group.message_ids)} messages in thread {first.thread_id!r}, "
        f"{first.created_at:%Y-%m-%d %H:%M} to {last.created_at:%Y-%m-%d %H:%M} (UTC). For "
        f"their exact words, search with thread_id={first.thread_id!r}, "
        f"since={first.created_at:%Y-%m-%dT%H:%M:%S}Z, until={until:%Y-%m-%dT%H:%M:%S}Z."
    )
