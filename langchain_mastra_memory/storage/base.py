"""The storage interface every backend implements (threads, messages, resources).

`MemoryStorage` is the synchronous contract of the conversation (`ConversationStorage`: what a
backend implements, and the few methods with a default), what the SQL backends keep
beside it (`side_records.SideRecords`) and the ``a``-prefixed twins every caller can await.
"""

from __future__ import annotations

import logging
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import ToolMessage

from ..errors import (
    OrphanToolResultWarning,
    ResourceMismatchError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from ..messages import index_text
from ..pools import in_io_pool
from ..twins import Steps, call, run_async, run_sync
from .blocking import forbid_blocking_calls, guard_subclass, off_loop
from .records import (
    ImportedThread,
    MessageFilter,
    Neighbour,
    ResourceSummary,
    StoredMessage,
    Thread,
    TimeWindow,
)
from .side_records import SideRecords
from .validation import check_id, check_ids


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


class ConversationStorage(ABC):
    """The methods a backend implements (see `MemoryStorage`), and the few with a default."""

    # -- lifecycle -----------------------------------------------------------------------------
    @abstractmethod
    def setup(self) -> None:
        """Create or migrate the schema; safe to call more than once."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    # -- threads -------------------------------------------------------------------------------
    @abstractmethod
    def create_thread(
        self,
        *,
        thread_id: str,
        resource_id: str,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        """Create a thread; `ThreadExistsError` if the id is taken."""

    @abstractmethod
    def get_thread(self, thread_id: str) -> Thread | None:
        """The thread, or None."""

    @abstractmethod
    def list_threads(
        self,
        *,
        resource_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        order_by: str = "updated_at",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
        archived: bool | None = None,
    ) -> list[Thread]:
        """Threads filtered by owner, metadata equality and archived state (None: both),
        ordered and paged."""

    @abstractmethod
    def count_threads(
        self,
        *,
        resource_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        archived: bool | None = None,
    ) -> int:
        """How many threads `list_threads` with these filters lists in all."""

    @abstractmethod
    def thread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        """``(messages, stored tokens)`` of each thread (``(0, 0.0)`` for an unknown id)."""

    @abstractmethod
    def set_archived(
        self, thread_id: str, *, archived: bool, resource_id: str | None = None
    ) -> Thread:
        """Archive (or restore) a thread; its ``updated_at`` is kept. `ThreadNotFoundError` /
        `ResourceMismatchError` for an unknown thread or another resource's."""

    @abstractmethod
    def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, Any] | None = None,
        resource_id: str | None = None,
    ) -> Thread:
        """Set the title and/or merge keys into the metadata."""

    @abstractmethod
    def delete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        """Delete a thread and its messages; False if there was no such thread."""

    def delete_resource(self, resource_id: str) -> bool:
        """Erase a resource: its threads with everything keyed by them, its working memory and
        observation log, the record of it; False if storage held nothing of it. (Vectors,
        store items and checkpoints: `Memory.delete_resource`.)"""
        raise NotImplementedError(f"{type(self).__name__} cannot delete a resource")

    @abstractmethod
    def clone_thread(
        self,
        thread_id: str,
        *,
        new_thread_id: str,
        resource_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        message_limit: int | None = None,
        message_filter: Any = None,
        carry_ids: bool = False,
    ) -> tuple[Thread, list[StoredMessage]]:
        """Copy a thread under the same resource, in one transaction: its messages (new ids;
        those `message_filter` keeps — a `MessageFilter` or its dict —, the newest
        `message_limit` of them), its thread-scoped working memory and observation log.
        `carry_ids`: each copy's id is `carried_id` of the new thread and the original's (what
        a graph state copied with the thread's checkpoints finds held there)."""

    @abstractmethod
    def transfer_thread(
        self, thread_id: str, *, to_resource_id: str, resource_id: str | None = None
    ) -> tuple[Thread, list[StoredMessage]]:
        """Give a thread (its messages, working memory and observation log) to another
        resource; the thread and its messages as now stored. `resource_id`: the caller, who
        must own it."""

    # -- messages ------------------------------------------------------------------------------
    @abstractmethod
    def save_messages(
        self,
        messages: Sequence[object],
        *,
        thread_id: str,
        resource_id: str,
        created_at: Sequence[datetime | None] | None = None,
    ) -> list[StoredMessage]:
        """Upsert messages into a thread (by id); returns them as stored, ids and times set.

        New messages get strictly increasing timestamps after the thread's newest one, unless
        `created_at` gives one per message (an import keeping its original times).
        """

    @abstractmethod
    def save_import(self, threads: Sequence[ImportedThread]) -> list[StoredMessage]:
        """Save several threads' messages in ONE transaction: all of them, or (on any error)
        nothing, no thread created. Threads are created as given when new."""

    @abstractmethod
    def list_messages(
        self, thread_id: str, *, last: int | None = None, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """The thread's messages in order; with `last`, only the newest `last` of them."""

    @abstractmethod
    def page_messages(
        self,
        thread_id: str,
        *,
        resource_id: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        descending: bool = False,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> tuple[list[StoredMessage], int]:
        """A page of the thread's messages (oldest first, or newest first with `descending`)
        created in ``[since, until)``, and how many there are in that range."""

    @abstractmethod
    def get_messages_by_id(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """The stored messages with these ids (unknown ids are left out), in thread order."""

    @abstractmethod
    def update_messages(
        self, messages: Sequence[object], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """Replace stored messages by id; `MessageNotFoundError` if any id is unknown."""

    @abstractmethod
    def delete_messages(self, message_ids: Sequence[str], *, resource_id: str | None = None) -> int:
        """Delete messages by id; returns how many were deleted."""

    @abstractmethod
    def move_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> list[StoredMessage]:
        """Move messages of `resource_id` (ids, times and order kept) into its thread
        `thread_id`; the moved messages, in order. Another resource's message or thread raises
        `ResourceMismatchError` and nothing moves."""

    # -- recall --------------------------------------------------------------------------------
    @abstractmethod
    def search_text(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int = 10,
        thread_ids: Sequence[str] | None = None,
        window: TimeWindow | None = None,
    ) -> list[tuple[str, str, float]]:
        """Keyword (BM25) search over user and assistant messages of one resource (and thread,
        or those of `thread_ids`, created in `window`: filtered inside the search, never a
        short pool).

        Returns ``(message_id, thread_id, score)``, best first; higher scores are better.
        """

    @abstractmethod
    def message_windows(
        self, message_ids: Sequence[str], *, before: int, after: int, resource_id: str
    ) -> list[StoredMessage]:
        """Each message with up to `before`/`after` neighbours of its thread, de-duplicated,
        grouped by thread in chronological order. Messages of other resources are left out."""

    def message_neighbours(
        self, message_ids: Sequence[str], *, resource_id: str
    ) -> list[Neighbour]:
        """`message_windows` with one message before and after each, light: id, thread,
        type and searchable text of each, in the same order (what recall's context stage
        reads for ~50 candidates a turn; a backend may read them without building message
        objects). Messages of other resources are left out."""
        around = self.message_windows(message_ids, before=1, after=1, resource_id=resource_id)
        return [
            Neighbour(str(s.message.id), s.thread_id, s.message.type, index_text(s.message))
            for s in around
        ]

    @abstractmethod
    def unembedded(self, *, limit: int = 500) -> list[StoredMessage]:
        """User and assistant messages whose embedding is not written yet (oldest first)."""

    def count_unembedded(self) -> int:
        """How many messages wait in the embedding backlog (`unembedded`, all of them)."""
        return len(self.unembedded(limit=1_000_000_000))

    @abstractmethod
    def mark_embedded(self, message_ids: Sequence[str], *, embedded: bool = True) -> None:
        """Record that these messages' embeddings are in the vector store (or, with
        ``embedded=False``, that they are missing there and must be written again)."""

    @abstractmethod
    def embedded_ids(self, *, after: int = 0, limit: int = 1000) -> list[tuple[int, str, str]]:
        """``(seq, message_id, resource_id)`` of user and assistant messages recorded as
        embedded, after position `after`, in storage order (to check them against the vectors)."""

    # -- working memory ------------------------------------------------------------------------
    @abstractmethod
    def get_working_memory(self, *, resource_id: str, thread_id: str | None = None) -> str | None:
        """The stored working memory of a resource, or of one of its threads when `thread_id`."""

    @abstractmethod
    def modify_working_memory(
        self,
        update: Callable[[str | None], str],
        *,
        resource_id: str,
        thread_id: str | None = None,
    ) -> str:
        """Read, transform with `update` and write the working memory in one transaction.

        Updates of the same memory are serialized (threads, tasks and processes), so none is
        lost; if `update` raises, nothing is written.
        """

    # -- derived -----------------------------------------------------------------------------
    def page_resources(
        self, *, query: str = "", offset: int = 0, limit: int = 50
    ) -> tuple[list[ResourceSummary], int]:
        """One page of the resources that own threads, newest activity first, whose id holds
        `query` (any case), with their message and token totals; and how many match in all.
        (SQL backends answer it in the database.)"""
        latest: dict[str, tuple[int, datetime]] = {}
        for t in self.list_threads(archived=None):
            if query.lower() in t.resource_id.lower():
                count, at = latest.get(t.resource_id, (0, t.updated_at))
                latest[t.resource_id] = (count + 1, max(at, t.updated_at))
        ordered = sorted(latest.items(), key=lambda item: (item[1][1], item[0]), reverse=True)
        rows = []
        for resource_id, (count, at) in ordered[offset : offset + limit]:
            owned = [t.id for t in self.list_threads(resource_id=resource_id, archived=None)]
            stats = self.thread_stats(owned).values()
            messages, tokens = sum(n for n, _ in stats), sum(t for _, t in stats)
            rows.append(ResourceSummary(resource_id, count, at, messages, tokens))
        return rows, len(ordered)

    def get_threads(self, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """The threads of `thread_ids` that exist, by id (SQL backends read them at once)."""
        threads = (self.get_thread(i) for i in dict.fromkeys(check_ids(thread_ids, "thread_ids")))
        return {thread.id: thread for thread in threads if thread is not None}

    def ensure_thread(self, *, thread_id: str, resource_id: str) -> Thread:
        """The thread, created for `resource_id` if it does not exist yet (a thread of another
        resource raises `ResourceMismatchError`)."""
        return run_sync(self._ensure_thread(thread_id, resource_id))

    def _ensure_thread(self, thread_id: str, resource_id: str) -> Steps[Thread]:
        thread = yield from call(self.get_thread, check_id(thread_id, "thread_id"))
        if thread is None:
            try:
                return (
                    yield from call(
                        self.create_thread, thread_id=thread_id, resource_id=resource_id
                    )
                )
            except ThreadExistsError:  # created by someone else meanwhile
                thread = yield from call(self.get_thread, thread_id)
        return owned_thread(thread, thread_id=thread_id, resource_id=resource_id)


def owned_thread(thread: Thread | None, *, thread_id: str, resource_id: str) -> Thread:
    """`thread` if `resource_id` owns it; `ThreadNotFoundError` / `ResourceMismatchError`."""
    if thread is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")
    if thread.resource_id != resource_id:
        raise ResourceMismatchError.for_thread(thread_id, resource_id)
    return thread


__all__ = ["UNSET", "MemoryStorage", "forbid_blocking_calls", "owned_thread", "report_orphans"]

logger = logging.getLogger(__name__)


def report_orphans(orphans: Sequence[ToolMessage], thread_id: str) -> None:
    """Warn (once per save) about tool results whose call is not in the thread. They are stored."""
    if not orphans:
        return
    ids = ", ".join(repr(m.tool_call_id) for m in orphans)
    text = (
        f"thread {thread_id!r}: stored {len(orphans)} ToolMessage(s) whose tool_call_id matches "
        f"no earlier tool call in the thread ({ids}). They are kept; TokenLimiter and "
        "ToolCallFilter drop such orphans before they reach a model."
    )
    logger.warning(text)
    warnings.warn(text, OrphanToolResultWarning, stacklevel=4)


class MemoryStorage(SideRecords, ConversationStorage):
    """Where threads, messages and resources live.

    Backends implement the synchronous methods; the ``a``-prefixed twins default to running the
    synchronous method on memory's I/O threads (`pools.io_pool`), and a
    backend with a native async driver overrides them.

    Every method that takes ``resource_id`` checks ownership: a thread or message of another
    resource raises `ResourceMismatchError` and nothing is changed.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        guard_subclass(cls)  # the blocking-call test mode sees every backend's sync I/O

    async def apage_resources(
        self, *, query: str = "", offset: int = 0, limit: int = 50
    ) -> tuple[list[ResourceSummary], int]:
        """Async `page_resources`."""
        return await off_loop(self.page_resources, query=query, offset=offset, limit=limit)

    async def aensure_thread(self, *, thread_id: str, resource_id: str) -> Thread:
        """Async `ensure_thread`."""
        return await run_async(self._ensure_thread(thread_id, resource_id))

    # -- async twins: the sync method in a worker thread, unless a backend overrides them -------
    async def asetup(self) -> None:
        """Async `setup`."""
        await in_io_pool(self.setup)

    async def aclose(self) -> None:
        """Async `close`."""
        await in_io_pool(self.close)

    async def acreate_thread(
        self,
        *,
        thread_id: str,
        resource_id: str,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        """Async `create_thread`."""
        return await off_loop(
            self.create_thread,
            thread_id=thread_id,
            resource_id=resource_id,
            title=title,
            metadata=metadata,
        )

    async def aget_thread(self, thread_id: str) -> Thread | None:
        """Async `get_thread`."""
        return await off_loop(self.get_thread, thread_id)

    async def aget_threads(self, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """Async `get_threads`."""
        return await off_loop(self.get_threads, thread_ids)

    async def alist_threads(
        self,
        *,
        resource_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        order_by: str = "updated_at",
        descending: bool = True,
        limit: int | None = None,
        offset: int = 0,
        archived: bool | None = None,
    ) -> list[Thread]:
        """Async `list_threads`."""
        return await off_loop(
            self.list_threads,
            resource_id=resource_id,
            metadata=metadata,
            order_by=order_by,
            descending=descending,
            limit=limit,
            offset=offset,
            archived=archived,
        )

    async def acount_threads(
        self,
        *,
        resource_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        archived: bool | None = None,
    ) -> int:
        """Async `count_threads`."""
        return await off_loop(
            self.count_threads, resource_id=resource_id, metadata=metadata, archived=archived
        )

    async def athread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        """Async `thread_stats`."""
        return await off_loop(self.thread_stats, thread_ids)

    async def aset_archived(
        self, thread_id: str, *, archived: bool, resource_id: str | None = None
    ) -> Thread:
        """Async `set_archived`."""
        return await off_loop(
            self.set_archived, thread_id, archived=archived, resource_id=resource_id
        )

    async def aupdate_thread(
        self,
        thread_id: str,
        *,
        title: str | None = UNSET,
        metadata: dict[str, Any] | None = None,
        resource_id: str | None = None,
    ) -> Thread:
        """Async `update_thread`."""
        return await off_loop(
            self.update_thread, thread_id, title=title, metadata=metadata, resource_id=resource_id
        )

    async def adelete_resource(self, resource_id: str) -> bool:
        """Async `delete_resource`."""
        return await off_loop(self.delete_resource, resource_id)

    async def adelete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        """Async `delete_thread`."""
        return await off_loop(self.delete_thread, thread_id, resource_id=resource_id)

    async def aclone_thread(
        self,
        thread_id: str,
        *,
        new_thread_id: str,
        resource_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        message_limit: int | None = None,
        message_filter: MessageFilter | None = None,
        carry_ids: bool = False,
    ) -> tuple[Thread, list[StoredMessage]]:
        """Async `clone_thread`."""
        return await off_loop(
            self.clone_thread,
            thread_id,
            new_thread_id=new_thread_id,
            resource_id=resource_id,
            title=title,
            metadata=metadata,
            message_limit=message_limit,
            message_filter=message_filter,
            carry_ids=carry_ids,
        )

    async def atransfer_thread(
        self, thread_id: str, *, to_resource_id: str, resource_id: str | None = None
    ) -> tuple[Thread, list[StoredMessage]]:
        """Async `transfer_thread`."""
        return await off_loop(
            self.transfer_thread, thread_id, to_resource_id=to_resource_id, resource_id=resource_id
        )

    async def asave_messages(
        self,
        messages: Sequence[object],
        *,
        thread_id: str,
        resource_id: str,
        created_at: Sequence[datetime | None] | None = None,
    ) -> list[StoredMessage]:
        """Async `save_messages`."""
        return await off_loop(
            self.save_messages,
            messages,
            thread_id=thread_id,
            resource_id=resource_id,
            created_at=created_at,
        )

    async def asave_import(self, threads: Sequence[ImportedThread]) -> list[StoredMessage]:
        """Async `save_import`."""
        return await off_loop(self.save_import, threads)

    async def alist_messages(
        self, thread_id: str, *, last: int | None = None, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """Async `list_messages`."""
        return await off_loop(self.list_messages, thread_id, last=last, resource_id=resource_id)

    async def apage_messages(
        self,
        thread_id: str,
        *,
        resource_id: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        descending: bool = False,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> tuple[list[StoredMessage], int]:
        """Async `page_messages`."""
        return await off_loop(
            self.page_messages,
            thread_id,
            resource_id=resource_id,
            limit=limit,
            offset=offset,
            descending=descending,
            since=since,
            until=until,
        )

    async def aget_messages_by_id(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """Async `get_messages_by_id`."""
        return await off_loop(self.get_messages_by_id, message_ids, resource_id=resource_id)

    async def aupdate_messages(
        self, messages: Sequence[object], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """Async `update_messages`."""
        return await off_loop(self.update_messages, messages, resource_id=resource_id)

    async def adelete_messages(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> int:
        """Async `delete_messages`."""
        return await off_loop(self.delete_messages, message_ids, resource_id=resource_id)

    async def amove_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> list[StoredMessage]:
        """Async `move_messages`."""
        return await off_loop(
            self.move_messages, message_ids, thread_id=thread_id, resource_id=resource_id
        )

    async def asearch_text(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int = 10,
        thread_ids: Sequence[str] | None = None,
        window: TimeWindow | None = None,
    ) -> list[tuple[str, str, float]]:
        """Async `search_text`."""
        return await off_loop(
            self.search_text,
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            limit=limit,
            thread_ids=thread_ids,
            window=window,
        )

    async def amessage_windows(
        self, message_ids: Sequence[str], *, before: int, after: int, resource_id: str
    ) -> list[StoredMessage]:
        """Async `message_windows`."""
        return await off_loop(
            self.message_windows, message_ids, before=before, after=after, resource_id=resource_id
        )

    async def amessage_neighbours(
        self, message_ids: Sequence[str], *, resource_id: str
    ) -> list[Neighbour]:
        """Async `message_neighbours`."""
        return await off_loop(self.message_neighbours, message_ids, resource_id=resource_id)

    async def acount_unembedded(self) -> int:
        """Async `count_unembedded`."""
        return await off_loop(self.count_unembedded)

    async def aunembedded(self, *, limit: int = 500) -> list[StoredMessage]:
        """Async `unembedded`."""
        return await off_loop(self.unembedded, limit=limit)

    async def amark_embedded(self, message_ids: Sequence[str], *, embedded: bool = True) -> None:
        """Async `mark_embedded`."""
        await off_loop(self.mark_embedded, message_ids, embedded=embedded)

    async def aembedded_ids(
        self, *, after: int = 0, limit: int = 1000
    ) -> list[tuple[int, str, str]]:
        """Async `embedded_ids`."""
        return await off_loop(self.embedded_ids, after=after, limit=limit)

    async def aget_working_memory(
        self, *, resource_id: str, thread_id: str | None = None
    ) -> str | None:
        """Async `get_working_memory`."""
        return await off_loop(self.get_working_memory, resource_id=resource_id, thread_id=thread_id)

    async def amodify_working_memory(
        self,
        update: Callable[[str | None], str],
        *,
        resource_id: str,
        thread_id: str | None = None,
    ) -> str:
        """Async `modify_working_memory`."""
        return await off_loop(
            self.modify_working_memory, update, resource_id=resource_id, thread_id=thread_id
        )
