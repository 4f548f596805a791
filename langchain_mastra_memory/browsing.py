"""Reading memory a page at a time: `paging` (the `Page`, `MessagePage` and `SearchHit`
records) and `browse` (threads, messages and search hits, paged as Mastra 1.x does).

Pages for chat UIs and tools: threads, a thread's messages, search hits.

Mastra 1.x answers ``listThreads`` and ``recall`` with ``{ items, total, page, perPage,
hasMore }``; here a `Page` (``page`` counts from 0, ``per_page=None`` is everything).

Examples:
    >>> page = Page(items=["a", "b"], total=5, page=0, per_page=2)
    >>> page.has_more, Page(items=["e"], total=5, page=2, per_page=2).has_more
    (True, False)

Reading memory a page at a time: threads, a thread's messages, search hits.

Each algorithm is written once as steps (`twins`) and run sync or async by `Memory`'s method
pairs (``page_threads`` / ``apage_threads``, ``page_messages``, ``search_messages``). Every read
is scoped: a thread is read only by its owner, included ids and recalled messages come from the
owner's messages only, and a search returns the searching resource's messages only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from langchain_core.messages import BaseMessage

from .errors import ConfigurationError, ThreadNotFoundError
from .recall.index import Mode, RecallIndex, hide_working_memory
from .storage.base import MemoryStorage, owned_thread
from .storage.records import StoredMessage, Thread, TimeWindow, stored_ids
from .storage.validation import check_id, check_ids, check_optional_id, check_time
from .twins import Steps, call

# its old submodules (a package until 0.2) still import, with a warning (`MOVED`)
__path__: list[str] = []

T = TypeVar("T")

MAX_PER_PAGE = 1000

MAX_PAGE = 10**9  # page * per_page stays a 64-bit integer (SQLite's and PostgreSQL's OFFSET)


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing: its items, how many there are in all, and where it stands."""

    items: list[T]
    total: int
    page: int
    per_page: int | None

    @property
    def has_more(self) -> bool:
        """Whether a later page holds more items."""
        return self.per_page is not None and (self.page + 1) * self.per_page < self.total


@dataclass(frozen=True)
class MessagePage(Page[BaseMessage]):
    """A page of a thread's messages, plus `included`: the messages asked for by id (with
    their neighbours) and those a semantic query recalled, in thread order, none of them
    repeated from `items`."""

    included: list[BaseMessage] = field(default_factory=list)


@dataclass(frozen=True)
class SearchHit:
    """A message found by a search of a resource's memory, with where and when it was said."""

    message: BaseMessage
    thread_id: str
    thread_title: str | None
    created_at: datetime
    score: float


def check_count(value: object, what: str, *, low: int = 0, high: int | None = None) -> int:
    """`value` if it is an int in ``low..high``; `ConfigurationError` naming `what` if not."""
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < low
        or (high is not None and value > high)
    ):
        span = f"in {low}..{high}" if high is not None else f">= {low}"
        raise ConfigurationError(f"{what} must be an int {span}, got {value!r}")
    return value


def page_bounds(page: object, per_page: object) -> tuple[int | None, int]:
    """``(limit, offset)`` of page `page` (from 0) of `per_page` items (None: all of them);
    `ConfigurationError` for anything else."""
    page = check_count(page, "page", high=MAX_PAGE)
    if per_page is None:
        if page:
            raise ConfigurationError("per_page=None is one page of everything: page must be 0")
        return None, 0
    per_page = check_count(per_page, "per_page", low=1, high=MAX_PER_PAGE)
    return per_page, page * per_page


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
