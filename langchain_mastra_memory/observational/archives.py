"""Rolling archives instead of reflection (Mastra's ``observation.archive``).

When the live log passes ``after_tokens``, its oldest groups leave it whole (a group is never
split) so that about ``keep_tokens`` of the newest stay live; no model is called and nothing
is rewritten. The model sees the live tail and a *catalog* of what was archived, newest first,
never over ``max_catalog_tokens``: a line per archived group with its archive and group ids,
the dates it speaks of and a label taken from its own most important lines. The recall tool
(``mode="observations"``) lists the archives and reads a group's exact text, a chunk at a time.

Mastra's Observer writes each group's catalog summary in its own call; here the label is the
group's own high-priority lines, so archiving changes nothing in the Observer's prompt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING

from ..messages import attribute, neutralised
from ..storage.records import ObservationArchive, ObservationGroup
from ..twins import Steps, call
from .config import ArchiveConfig
from .leases import under_lease

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage

logger = logging.getLogger(__name__)

LABEL_CHARS = 160  # the longest label a catalog line shows
CATALOG_PAGES = (20, 20, 10)  # archives read per catalog page (Mastra's 20 + 20 + 10)
OPEN, CLOSE = "<archived-observations>", "</archived-observations>"
SHORTEST_MARKER = "<hidden-archive-range />"

Count = Callable[[str], float]


def retiring(log: Sequence[ObservationGroup], config: ArchiveConfig) -> list[str]:
    """The ids of the oldest groups of `log` to archive: none while it holds fewer than
    ``after_tokens``; else all but the newest groups that hold ``keep_tokens`` (the newest
    group always stays).

    Examples:
        >>> from datetime import datetime, timezone
        >>> def g(n, tokens):
        ...     return ObservationGroup(str(n), "thread:t", "r", "observation", "", None, (),
        ...                             (), tokens, datetime.now(timezone.utc), None)
        >>> retiring([g(1, 30), g(2, 30), g(3, 30)], ArchiveConfig(after_tokens=80,
        ...                                                        keep_tokens=40))
        ['1']
    """
    if not log or sum(g.token_count for g in log) < config.after_tokens:
        return []
    start, kept = len(log) - 1, log[-1].token_count
    while start > 0 and kept < config.keep_tokens:
        start -= 1
        kept += log[start].token_count
    return [g.id for g in log[:start]]


def label(group: ObservationGroup) -> str:
    """A group's catalog label: its high-priority lines first, then the rest, cut to
    `LABEL_CHARS`.

    Examples:
        >>> from datetime import datetime, timezone
        >>> text = "Date: 2026-01-02\\n- [low] 10:00 asked the time\\n- [high] 10:01 lives in Porto"
        >>> label(ObservationGroup("g", "thread:t", "r", "observation", text, None, (), (), 9,
        ...                        datetime.now(timezone.utc), None))
        '10:01 lives in Porto; 10:00 asked the time'
    """
    items = [
        line.strip().removeprefix("-").strip()
        for line in group.text.splitlines()
        if line.strip() and not line.startswith("Date:")
    ]
    high = [i.removeprefix("[high]").strip() for i in items if i.startswith("[high]")]
    rest = [
        i.split("]", 1)[1].strip() if i.startswith("[") else i
        for i in items
        if not i.startswith("[high]")
    ]
    text = " ".join("; ".join(high + rest).split())
    if not text:
        return f"Observations of {group.created_at:%Y-%m-%d}"
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def date_span(group: ObservationGroup) -> str:
    """The days a group speaks of (its ``Date:`` lines), ``first..last``, else the day it was
    written."""
    days = [
        line.removeprefix("Date:").strip()
        for line in group.text.splitlines()
        if line.startswith("Date:") and line.removeprefix("Date:").strip() not in ("", "undated")
    ]
    if not days:
        return f"{group.created_at:%Y-%m-%d}"
    return days[0] if days[0] == days[-1] else f"{days[0]}..{days[-1]}"


def _row(archive: ObservationArchive, group: ObservationGroup, text: str) -> str:
    """One catalog line; the label is stored text, so no tag in it can open or close one."""
    return (
        f'<archived-observation archive-id="{attribute(archive.id)}" '
        f'group-id="{attribute(group.id)}" archived-at="{archive.archived_at:%Y-%m-%d}" '
        f'date-span="{attribute(date_span(group))}" messages="{len(group.message_ids)}">'
        f"{neutralised(escape(text, quote=False))}</archived-observation>"
    )


def _hidden(archive: ObservationArchive) -> str:
    return (
        f'<hidden-archive-range from-archive="{attribute(archive.id)}" '
        f'archived-at="{archive.archived_at:%Y-%m-%d}" />'
    )


def _assemble(lines: Sequence[str], marker: str | None) -> str:
    return "\n".join([OPEN, *lines, *([marker] if marker else []), CLOSE])


def render_catalog(
    archives: Sequence[ObservationArchive], *, more: bool, max_tokens: float, count: Count
) -> tuple[str | None, bool]:
    """The catalog of `archives` (newest first; `more`: older ones exist) within `max_tokens`,
    and whether the budget is full (no older archive should be read). A group that does not
    fit whole is shown with its label cut, and what is left out is marked hidden.

    Examples:
        >>> render_catalog([], more=False, max_tokens=100, count=len)
        (None, False)
    """
    if count(_assemble([], SHORTEST_MARKER)) > max_tokens:
        return None, True
    rows = [(a, g) for a in archives for g in reversed(a.groups)]  # newest first
    lines: list[str] = []
    for n, (archive, group) in enumerate(rows):
        after = rows[n + 1][0] if n + 1 < len(rows) else None
        marker = _hidden(after) if after is not None else (SHORTEST_MARKER if more else None)
        whole = _row(archive, group, label(group))
        if count(_assemble([*lines, whole], marker)) <= max_tokens:
            lines.append(whole)
            continue
        cut = _cut_to_fit(archive, group, lines, marker, max_tokens, count)
        if cut is not None:
            return _assemble([*lines, cut], marker), True
        hidden = _assemble(lines, _hidden(archive))
        if count(hidden) <= max_tokens:
            return hidden, True
        return (_assemble(lines, SHORTEST_MARKER) if lines else None), True
    if not lines:
        return None, False
    return _assemble(lines, SHORTEST_MARKER if more else None), False


def _cut_to_fit(
    archive: ObservationArchive,
    group: ObservationGroup,
    lines: Sequence[str],
    marker: str | None,
    max_tokens: float,
    count: Count,
) -> str | None:
    """The longest row of `group` with its label cut that still fits (None: not even a word)."""
    text = label(group)
    low, high, best = 1, len(text) - 1, None
    while low <= high:  # the longest prefix that fits
        mid = (low + high) // 2
        row = _row(archive, group, text[:mid].rstrip() + "…")
        if count(_assemble([*lines, row], marker)) <= max_tokens:
            best, low = row, mid + 1
        else:
            high = mid - 1
    return best


def catalog(storage: MemoryStorage, key: str, max_tokens: float, count: Count) -> Steps[str | None]:
    """Steps of the catalog of scope `key`'s archives (None: none, or no room): read a page of
    archives at a time, newest first, until the budget is full (at most 50 archives)."""
    if count(_assemble([], SHORTEST_MARKER)) > max_tokens:
        return None  # not even the frame fits: nothing is read
    archives: list[ObservationArchive] = []
    text: str | None = None
    for size in CATALOG_PAGES:
        page: list[ObservationArchive] = yield from call(
            storage.observation_archives, [key], limit=size + 1, offset=len(archives)
        )
        more = len(page) > size
        archives += page[:size]
        text, full = render_catalog(archives, more=more, max_tokens=max_tokens, count=count)
        if full or not more:
            break
    return text


def archive(
    storage: MemoryStorage,
    key: str,
    resource_id: str,
    config: ArchiveConfig,
    emit: Callable[..., None],
    lease_seconds: float = 60.0,
) -> Steps[ObservationArchive | None]:
    """Steps that archive the oldest groups of scope `key` when its live log has passed
    ``after_tokens`` (under the scope's lease; no model call); an ``archived`` event tells."""
    log: list[ObservationGroup] = yield from call(storage.observation_log, key)
    if not retiring(log, config):
        return None

    def commit(owner: str) -> Steps[ObservationArchive | None]:
        log = yield from call(storage.observation_log, key)  # (as it is now, under the lease)
        retires = retiring(log, config)
        if not retires:
            return None
        made: ObservationArchive | None = yield from call(
            storage.commit_archive, key, owner=owner, resource_id=resource_id, retires=retires
        )
        return made

    try:  # (another run holding the scope archives when it ends)
        made = yield from under_lease(storage, key, "archiver", lease_seconds, commit)
    except Exception as exc:  # the log stays as it was; the next save tries again
        logger.warning("observational memory: archiving %s failed, retried later: %s", key, exc)
        emit("failed", key, resource_id, None, step="archive", error=str(exc))
        return None
    if made is None:
        return None
    emit(
        "archived",
        key,
        resource_id,
        None,
        archive_id=made.id,
        groups=len(made.groups),
        tokens=sum(g.token_count for g in made.groups),
    )
    return made
