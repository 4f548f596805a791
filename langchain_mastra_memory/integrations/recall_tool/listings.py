"""What the recall tool reads beside messages: the caller's conversations (mode ``threads``) and
their observation logs and archives (mode ``observations``), and the cursor that pages every mode.

Both are the caller's alone: threads are listed by the owner storage holds, and the observation
logs read are the caller's resource log and the logs of the caller's own threads. A cursor is
opaque to the model: it names the mode, the query and the next page, so a cursor given with
another query or mode is refused with words the model can act on.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from ...browsing import thread_page
from ...storage.records import ObservationGroup, scope_key
from ...twins import Steps, call

OBSERVATION_THREADS = 50  # the newest conversations whose logs an observation search reads
SNIPPET_CHARS = 400


class CursorError(ValueError):
    """A cursor that does not belong to this search."""


def _fingerprint(mode: str, query: str | None, thread_id: str | None) -> str:
    return hashlib.sha256(f"{mode}\x1f{query or ''}\x1f{thread_id or ''}".encode()).hexdigest()[:12]


def make_cursor(mode: str, query: str | None, thread_id: str | None, page: int) -> str:
    """The cursor of page `page` of this search."""
    raw = json.dumps({"f": _fingerprint(mode, query, thread_id), "p": page}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str, mode: str, query: str | None, thread_id: str | None) -> int:
    """The page a cursor points to; `CursorError` when it is not this search's."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
        page, mark = int(value["p"]), str(value["f"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CursorError("that cursor is not one this tool gave") from exc
    if mark != _fingerprint(mode, query, thread_id) or not 0 <= page <= 10_000:
        raise CursorError(
            "that cursor belongs to another search: repeat the same query and "
            "mode with it, or leave it out to start again"
        )
    return page


def more(mode: str, query: str | None, thread_id: str | None, page: int) -> str:
    return (
        f"More results: call again with cursor={make_cursor(mode, query, thread_id, page + 1)!r}."
    )


def threads(
    storage: Any, resource_id: str, query: str | None, page: int, per_page: int
) -> Steps[str]:
    """The caller's conversations, newest first (titles holding `query`'s words, if given):
    title, id, dates; a page at a time."""
    if not query:
        found = yield from thread_page(
            storage, resource_id=resource_id, page=page, per_page=per_page
        )
        items, total, has_more = found.items, found.total, found.has_more
    else:  # a title filter: the caller's threads are read whole (a user's count, not a corpus)
        everything = yield from call(
            storage.list_threads,
            resource_id=resource_id,
            order_by="updated_at",
            descending=True,
            archived=False,
        )
        words = _words(query)
        matching = [t for t in everything if words & _words(t.title or "")]
        total = len(matching)
        items = matching[page * per_page : (page + 1) * per_page]
        has_more = (page + 1) * per_page < total
    if not items:
        about = f" with {query!r} in the title" if query else ""
        return f"No conversations{about} on page {page}." if page else f"No conversations{about}."
    lines = [f"{total} conversations (page {page}):"]
    for n, thread in enumerate(items, start=page * per_page + 1):
        title = f'"{thread.title}"' if thread.title else "untitled"
        lines.append(
            f"{n}. {title} (thread {thread.id}) · started {thread.created_at:%Y-%m-%d}"
            f" · last {thread.updated_at:%Y-%m-%d %H:%M}"
        )
    if has_more:
        lines.append(more("threads", query, None, page))
    return "\n".join(lines)


def owned_keys(storage: Any, resource_id: str, thread_id: str | None) -> Steps[list[str]]:
    """The observation scopes the caller may read: its resource log, and its threads' logs
    (the newest `OBSERVATION_THREADS`), or the one thread's."""
    keys = [scope_key("resource", resource_id=resource_id, thread_id=None)]
    if thread_id is not None:
        return [*keys, scope_key("thread", resource_id=resource_id, thread_id=thread_id)]
    mine = yield from call(
        storage.list_threads,
        resource_id=resource_id,
        order_by="updated_at",
        descending=True,
        limit=OBSERVATION_THREADS,
    )
    return keys + [scope_key("thread", resource_id=resource_id, thread_id=t.id) for t in mine]


ARCHIVES_SEARCHED = 50  # the newest archives an observation search reads, besides the logs


def observations(
    storage: Any,
    resource_id: str,
    keys: list[str],
    query: str,
    thread_id: str | None,
    page: int,
    per_page: int,
) -> Steps[str]:
    """Lines of the caller's observation logs (`keys`, `owned_keys`) and of their newest
    archives that share words with `query`, best first; an archived line names its archive
    and group, for reading the whole."""
    sources: list[tuple[ObservationGroup, str]] = []
    for key in keys:
        groups = yield from call(storage.observation_log, key)
        sources += [(group, "") for group in groups]
    shelved = yield from call(storage.observation_archives, keys, limit=ARCHIVES_SEARCHED)
    for archive in shelved:
        where = f" (archived: archive_id={archive.id!r}, group_id={{}})"
        sources += [(group, where.format(repr(group.id))) for group in archive.groups]
    words = _words(query)
    scored: list[tuple[int, str, str, str]] = []
    for group, where in sources:
        if group.resource_id != resource_id:  # (a log is keyed by its owner: never)
            continue
        date = ""
        for line in group.text.splitlines():
            if line.startswith("Date:"):
                date = line.removeprefix("Date:").strip()
                continue
            shared = len(words & _words(line))
            if shared and line.strip():
                scored.append((shared, date, line.strip(), where))
    scored.sort(key=lambda item: -item[0])  # stable: the log's order among equals
    total = len(scored)
    chosen = scored[page * per_page : (page + 1) * per_page]
    if not chosen:
        return f"No observations match {query!r}" + (f" on page {page}." if page else ".")
    lines = [f"{total} observations match {query!r} (page {page}):"]
    for n, (_, date, line, where) in enumerate(chosen, start=page * per_page + 1):
        text = line if len(line) <= SNIPPET_CHARS else line[: SNIPPET_CHARS - 1] + "…"
        lines.append(f"{n}. [{date or 'undated'}] {text}{where}")
    if (page + 1) * per_page < total:
        lines.append(more("observations", query, thread_id, page))
    return "\n".join(lines)


STOP = frozenset(
    "a an and are do does for from i in is it me my of on or the to was what when "
    "where which who why with you your".split()
)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 1}
