"""Pages for chat UIs and tools: threads, a thread's messages, search hits.

Mastra 1.x answers ``listThreads`` and ``recall`` with ``{ items, total, page, perPage,
hasMore }``; here a `Page` (``page`` counts from 0, ``per_page=None`` is everything).

Examples:
    >>> page = Page(items=["a", "b"], total=5, page=0, per_page=2)
    >>> page.has_more, Page(items=["e"], total=5, page=2, per_page=2).has_more
    (True, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from langchain_core.messages import BaseMessage

from ..errors import ConfigurationError

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
