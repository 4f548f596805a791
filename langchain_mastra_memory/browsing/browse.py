"""Reading memory a page at a time: threads, a thread's messages, search hits.

Each algorithm is written once as steps (`twins`) and run sync or async by `Memory`'s method
pairs (``page_threads`` / ``apage_threads``, ``page_messages``, ``search_messages``). Every read
is scoped: a thread is read only by its owner, included ids and recalled messages come from the
owner's messages only, and a search returns the searching resource's messages only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..errors import ConfigurationError, ThreadNotFoundError
from ..recall.index import Mode, RecallIndex, hide_working_memory
from ..storage.base import MemoryStorage, owned_thread
from ..storage.records import StoredMessage, TimeWindow, stored_ids
from ..storage.thread import Thread
from ..storage.validation import check_id, check_ids, check_optional_id, check_time
from ..twins import Steps, call
from .paging import MessagePage, Page, SearchHit, check_count, page_bounds

MAX_HITS = 100  # a search ranks this many messages at most (its pages page through them)


def thread_page(
    storage: MemoryStorage,
    *,
    resource_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    archived: bool | None = False,
    order_by: str = "updated_at",
    descending: bool = True,
    page: int = 0,
    per_page: int | None = 20,
) -> Steps[Page[Thread]]:
    """Page `page` of the threads matching the filters (archived ones only when asked)."""
    limit, offset = page_bounds(page, per_page)
    threads = yield from call(
        storage.list_threads,
        resource_id=resource_id,
        metadata=metadata,
        archived=archived,
        order_by=order_by,
        descending=descending,
        limit=limit,
        offset=offset,
    )
    total = yield from call(
        storage.count_threads, resource_id=resource_id, metadata=metadata, archived=archived
    )
    if threads:  # a thread made between the two reads is counted
        total = max(total, offset + len(threads))
    return Page(threads, total, page, per_page)


def owner_of(storage: MemoryStorage, thread_id: str, resource_id: str | None) -> Steps[Thread]:
    """The thread, read by `resource_id` (its own owner when None); `ThreadNotFoundError` /
    `ResourceMismatchError` otherwise."""
    check_id(thread_id, "thread_id")
    check_optional_id(resource_id, "resource_id")
    thread = yield from call(storage.get_thread, thread_id)
    if thread is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")
    return owned_thread(thread, thread_id=thread_id, resource_id=resource_id or thread.resource_id)


def message_page(
    storage: MemoryStorage,
    index: RecallIndex,
    thread_id: str,
    *,
    resource_id: str | None = None,
    page: int = 0,
    per_page: int | None = 40,
    descending: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
    include: Sequence[str] = (),
    include_window: int = 0,
    query: str | None = None,
) -> Steps[MessagePage]:
    """Page `page` of the thread's messages in ``[since, until)`` (oldest first, or newest
    first with `descending`), and `included`: the messages of `include` with
    `include_window` neighbours each side, and what `query` recalls (the index's search and
    neighbours) — of the owner's messages only, none repeated from the page."""
    limit, offset = page_bounds(page, per_page)
    if isinstance(include, (str, bytes)):  # a list of ids, never a string's characters
        msg = f"include takes a list of message ids, got the string {include!r}: pass [{include!r}]"
        raise ConfigurationError(msg)
    ids = check_ids(list(include), "include")
    check_count(include_window, "include_window")
    TimeWindow.of(
        check_time(since, "since", ConfigurationError),
        check_time(until, "until", ConfigurationError),
    )
    thread = yield from owner_of(storage, thread_id, resource_id)
    owner = thread.resource_id
    stored, total = yield from call(
        storage.page_messages,
        thread_id,
        resource_id=owner,
        limit=limit,
        offset=offset,
        descending=descending,
        since=since,
        until=until,
    )
    shown = set(stored_ids(stored))
    extra: list[StoredMessage] = []
    if ids:
        extra += yield from call(
            storage.message_windows,
            ids,
            before=include_window,
            after=include_window,
            resource_id=owner,
        )
    if query is not None and query.strip():
        extra += yield from call(
            index.recall, query, resource_id=owner, thread_id=thread_id, exclude=shown
        )
    seen: set[str | None] = set()
    included = []
    for s in sorted(extra, key=lambda s: (s.thread_id != thread_id, s.thread_id, s.created_at)):
        if s.message.id not in shown and s.message.id not in seen:
            seen.add(s.message.id)
            included.append(s)
    return MessagePage(
        [s.message for s in stored],
        total,
        page,
        per_page,
        included=[s.message for s in hide_working_memory(included)],
    )


def search_page(
    storage: MemoryStorage,
    index: RecallIndex,
    query: str,
    *,
    resource_id: str,
    thread_id: str | None = None,
    mode: Mode | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    include_archived: bool = False,
    page: int = 0,
    per_page: int | None = 10,
) -> Steps[Page[SearchHit]]:
    """Page `page` of `resource_id`'s messages best matching `query` (by the index's mode or
    `mode`), within `thread_id` when given, created in ``[since, until)``, archived threads
    left out unless `include_archived`; up to `MAX_HITS` are ranked."""
    limit, offset = page_bounds(page, per_page)
    check_id(resource_id, "resource_id")
    window = TimeWindow.of(  # searched inside every engine, not kept from a short pool
        check_time(since, "since", ConfigurationError),
        check_time(until, "until", ConfigurationError),
    )
    if thread_id is not None:
        yield from owner_of(storage, thread_id, resource_id)
    hits = yield from call(
        index.search,
        query,
        resource_id=resource_id,
        thread_id=thread_id,
        limit=MAX_HITS,
        mode=mode,
        within_thread=thread_id is not None,
        window=window,
    )
    found = yield from call(
        storage.get_messages_by_id, [h.message_id for h in hits], resource_id=resource_id
    )
    by_id = {s.message.id: s for s in found}
    threads = yield from call(storage.get_threads, sorted({s.thread_id for s in found}))
    kept: list[SearchHit] = []
    for hit in hits:
        stored = by_id.get(hit.message_id)
        if stored is None or stored.thread_id not in threads:
            continue
        thread = threads[stored.thread_id]
        if thread.archived and not include_archived:
            continue
        if window is not None and not window.keeps(stored.created_at.timestamp()):
            continue  # (an engine that ignored the window: kept out all the same)
        kept.append(
            SearchHit(stored.message, stored.thread_id, thread.title, stored.created_at, hit.score)
        )
    end = None if limit is None else offset + limit
    return Page(kept[offset:end], len(kept), page, per_page)
