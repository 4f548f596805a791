"""The storage interface every backend implements (threads, messages, resources)."""

from __future__ import annotations

import asyncio
import functools
import logging
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from langchain_core.messages import ToolMessage
from langchain_core.runnables.config import run_in_executor

from ..errors import (
    BlockingCallError,
    OrphanToolResultWarning,
    ResourceMismatchError,
    ThreadExistsError,
    ThreadNotFoundError,
)
from ..threads.thread import Thread
from .records import (
    ImportedThread,
    ItemWrite,
    ObservationGroup,
    ResourceSummary,
    StoredItem,
    StoredMessage,
)
from .validation import check_id, check_ids

logger = logging.getLogger(__name__)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


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


T = TypeVar("T")
_NO_LOG = (
    "{} does not keep an observational-memory log; observational memory needs SQLiteStorage "
    "or PostgresStorage"
)
_NO_ITEMS = (
    "{} does not keep LangGraph store items; memory.store() needs SQLiteStorage or "
    "PostgresStorage (or a storage implementing put_items/get_items/search_items)"
)


class MemoryStorage(ABC):
    """Where threads, messages and resources live.

    Backends implement the synchronous methods; the ``a``-prefixed twins default to running the
    synchronous method in a worker thread (``run_in_executor``, as langchain-core does), and a
    backend with a native async driver overrides them.

    Every method that takes ``resource_id`` checks ownership: a thread or message of another
    resource raises `ResourceMismatchError` and nothing is changed.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _guard_subclass(cls)  # the blocking-call test mode sees every backend's sync I/O

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
    ) -> tuple[Thread, list[StoredMessage]]:
        """Copy a thread under the same resource, in one transaction: its messages (new ids;
        those `message_filter` keeps — a `MessageFilter` or its dict —, the newest
        `message_limit` of them), its thread-scoped working memory and observation log."""

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
    ) -> list[tuple[str, str, float]]:
        """Keyword (BM25) search over user and assistant messages of one resource (and thread,
        or those of `thread_ids`: filtered inside the search, never a short pool).

        Returns ``(message_id, thread_id, score)``, best first; higher scores are better.
        """

    @abstractmethod
    def message_windows(
        self, message_ids: Sequence[str], *, before: int, after: int, resource_id: str
    ) -> list[StoredMessage]:
        """Each message with up to `before`/`after` neighbours of its thread, de-duplicated,
        grouped by thread in chronological order. Messages of other resources are left out."""

    @abstractmethod
    def unembedded(self, *, limit: int = 500) -> list[StoredMessage]:
        """User and assistant messages whose embedding is not written yet (oldest first)."""

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

    # -- LangGraph store items (`memory.store()`); the SQL backends keep them -----------------
    def put_items(self, writes: Sequence[ItemWrite]) -> None:
        """Apply item puts and deletes in one transaction."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def get_items(
        self, refs: Sequence[tuple[tuple[str, ...], str]], *, refresh_ttl: bool = True
    ) -> list[StoredItem | None]:
        """The live item at each (namespace, key), or None."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def search_items(
        self,
        prefix: tuple[str, ...],
        *,
        limit: int | None = None,
        offset: int = 0,
        refresh_ttl: bool = False,
    ) -> list[StoredItem]:
        """Live items under a namespace prefix, most recently updated first."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def item_namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding a live item."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def nearest_items(
        self, prefix: tuple[str, ...], vector: Sequence[float], *, limit: int
    ) -> list[tuple[tuple[str, ...], str, float]]:
        """The live items under `prefix` nearest `vector`: (namespace, key, cosine), best
        first."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    def working_memories(
        self, resource_id: str | None = None
    ) -> list[tuple[str, str | None, str, datetime]]:
        """``(resource_id, thread_id or None, text, updated_at)`` of stored working memories."""
        raise NotImplementedError(_NO_ITEMS.format(type(self).__name__))

    async def aput_items(self, writes: Sequence[ItemWrite]) -> None:
        """Async `put_items`."""
        await _off_loop(self.put_items, writes)

    async def aget_items(
        self, refs: Sequence[tuple[tuple[str, ...], str]], *, refresh_ttl: bool = True
    ) -> list[StoredItem | None]:
        """Async `get_items`."""
        return await _off_loop(self.get_items, refs, refresh_ttl=refresh_ttl)

    async def asearch_items(
        self,
        prefix: tuple[str, ...],
        *,
        limit: int | None = None,
        offset: int = 0,
        refresh_ttl: bool = False,
    ) -> list[StoredItem]:
        """Async `search_items`."""
        return await _off_loop(
            self.search_items, prefix, limit=limit, offset=offset, refresh_ttl=refresh_ttl
        )

    async def anearest_items(
        self, prefix: tuple[str, ...], vector: Sequence[float], *, limit: int
    ) -> list[tuple[tuple[str, ...], str, float]]:
        """Async `nearest_items`."""
        return await _off_loop(self.nearest_items, prefix, vector, limit=limit)

    async def aitem_namespaces(self) -> list[tuple[str, ...]]:
        """Async `item_namespaces`."""
        return await _off_loop(self.item_namespaces)

    async def aworking_memories(
        self, resource_id: str | None = None
    ) -> list[tuple[str, str | None, str, datetime]]:
        """Async `working_memories`."""
        return await _off_loop(self.working_memories, resource_id)

    # -- observational memory's log; the SQL backends keep it ----------------------------------
    def observation_log(self, key: str, *, buffered: bool = False) -> list[ObservationGroup]:
        """The active groups of an observation scope, oldest first (then, with `buffered`,
        the groups waiting for activation)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def unobserved_messages(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> list[StoredMessage]:
        """The scope's messages after its cursor (`buffered`: after its buffer frontier)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def unobserved_tokens(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> float:
        """The stored token count of `unobserved_messages`."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def claim_observation(self, key: str, *, owner: str, seconds: float) -> bool:
        """Take the scope's lease unless another owner holds a live one."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def release_observation(self, key: str, *, owner: str) -> None:
        """Give the scope's lease back."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def commit_observation(
        self,
        key: str,
        *,
        owner: str,
        resource_id: str,
        text: str,
        current_task: str | None,
        message_ids: Sequence[str],
        token_count: float,
        buffered: bool = False,
    ) -> ObservationGroup | None:
        """Store an Observer's group, move the cursor (`buffered`: only the buffer frontier)
        and release the lease (one transaction)."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def activate_observations(
        self, key: str, *, resource_id: str, thread_id: str | None, retain_tokens: float
    ) -> list[ObservationGroup]:
        """Turn the oldest buffered groups active, leaving about `retain_tokens` unobserved."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    def commit_reflection(
        self,
        key: str,
        *,
        owner: str,
        resource_id: str,
        text: str,
        current_task: str | None,
        replaces: Sequence[str],
        token_count: float,
    ) -> ObservationGroup | None:
        """Store a Reflector's group in place of the groups it condensed, release the lease."""
        raise NotImplementedError(_NO_LOG.format(type(self).__name__))

    async def aobservation_log(self, key: str, *, buffered: bool = False) -> list[ObservationGroup]:
        """Async `observation_log`."""
        return await _off_loop(self.observation_log, key, buffered=buffered)

    async def aunobserved_messages(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> list[StoredMessage]:
        """Async `unobserved_messages`."""
        return await _off_loop(
            self.unobserved_messages, key, resource_id=resource_id, thread_id=thread_id,
            buffered=buffered,
        )  # fmt: skip

    async def aunobserved_tokens(
        self, key: str, *, resource_id: str, thread_id: str | None, buffered: bool = False
    ) -> float:
        """Async `unobserved_tokens`."""
        return await _off_loop(
            self.unobserved_tokens, key, resource_id=resource_id, thread_id=thread_id,
            buffered=buffered,
        )  # fmt: skip

    async def aactivate_observations(
        self, key: str, *, resource_id: str, thread_id: str | None, retain_tokens: float
    ) -> list[ObservationGroup]:
        """Async `activate_observations`."""
        return await _off_loop(
            self.activate_observations, key, resource_id=resource_id, thread_id=thread_id,
            retain_tokens=retain_tokens,
        )  # fmt: skip

    async def aclaim_observation(self, key: str, *, owner: str, seconds: float) -> bool:
        """Async `claim_observation`."""
        return await _off_loop(self.claim_observation, key, owner=owner, seconds=seconds)

    async def arelease_observation(self, key: str, *, owner: str) -> None:
        """Async `release_observation`."""
        await _off_loop(self.release_observation, key, owner=owner)

    async def acommit_observation(self, key: str, **group: Any) -> ObservationGroup | None:
        """Async `commit_observation` (same keyword arguments)."""
        return await _off_loop(self.commit_observation, key, **group)

    async def acommit_reflection(self, key: str, **group: Any) -> ObservationGroup | None:
        """Async `commit_reflection` (same keyword arguments)."""
        return await _off_loop(self.commit_reflection, key, **group)

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

    async def apage_resources(
        self, *, query: str = "", offset: int = 0, limit: int = 50
    ) -> tuple[list[ResourceSummary], int]:
        """Async `page_resources`."""
        return await _off_loop(self.page_resources, query=query, offset=offset, limit=limit)

    def get_threads(self, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """The threads of `thread_ids` that exist, by id (SQL backends read them at once)."""
        threads = (self.get_thread(i) for i in dict.fromkeys(check_ids(thread_ids, "thread_ids")))
        return {thread.id: thread for thread in threads if thread is not None}

    def ensure_thread(self, *, thread_id: str, resource_id: str) -> Thread:
        """The thread, created for `resource_id` if it does not exist yet (a thread of another
        resource raises `ResourceMismatchError`)."""
        if (thread := self.get_thread(check_id(thread_id, "thread_id"))) is None:
            try:
                return self.create_thread(thread_id=thread_id, resource_id=resource_id)
            except ThreadExistsError:  # created by someone else meanwhile
                thread = self.get_thread(thread_id)
        return owned_thread(thread, thread_id=thread_id, resource_id=resource_id)

    async def aensure_thread(self, *, thread_id: str, resource_id: str) -> Thread:
        """Async `ensure_thread`."""
        if (thread := await self.aget_thread(check_id(thread_id, "thread_id"))) is None:
            try:
                return await self.acreate_thread(thread_id=thread_id, resource_id=resource_id)
            except ThreadExistsError:
                thread = await self.aget_thread(thread_id)
        return owned_thread(thread, thread_id=thread_id, resource_id=resource_id)

    # -- async twins: the sync method in a worker thread, unless a backend overrides them -------
    async def asetup(self) -> None:
        """Async `setup`."""
        await run_in_executor(None, self.setup)

    async def aclose(self) -> None:
        """Async `close`."""
        await run_in_executor(None, self.close)

    async def acreate_thread(
        self,
        *,
        thread_id: str,
        resource_id: str,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Thread:
        """Async `create_thread`."""
        return await _off_loop(
            self.create_thread,
            thread_id=thread_id,
            resource_id=resource_id,
            title=title,
            metadata=metadata,
        )

    async def aget_thread(self, thread_id: str) -> Thread | None:
        """Async `get_thread`."""
        return await _off_loop(self.get_thread, thread_id)

    async def aget_threads(self, thread_ids: Sequence[str]) -> dict[str, Thread]:
        """Async `get_threads`."""
        return await _off_loop(self.get_threads, thread_ids)

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
        return await _off_loop(
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
        return await _off_loop(
            self.count_threads, resource_id=resource_id, metadata=metadata, archived=archived
        )

    async def athread_stats(self, thread_ids: Sequence[str]) -> dict[str, tuple[int, float]]:
        """Async `thread_stats`."""
        return await _off_loop(self.thread_stats, thread_ids)

    async def aset_archived(
        self, thread_id: str, *, archived: bool, resource_id: str | None = None
    ) -> Thread:
        """Async `set_archived`."""
        return await _off_loop(
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
        return await _off_loop(
            self.update_thread, thread_id, title=title, metadata=metadata, resource_id=resource_id
        )

    async def adelete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        """Async `delete_thread`."""
        return await _off_loop(self.delete_thread, thread_id, resource_id=resource_id)

    async def aclone_thread(
        self,
        thread_id: str,
        *,
        new_thread_id: str,
        resource_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        message_limit: int | None = None,
        message_filter: Any = None,
    ) -> tuple[Thread, list[StoredMessage]]:
        """Async `clone_thread`."""
        return await _off_loop(
            self.clone_thread,
            thread_id,
            new_thread_id=new_thread_id,
            resource_id=resource_id,
            title=title,
            metadata=metadata,
            message_limit=message_limit,
            message_filter=message_filter,
        )

    async def atransfer_thread(
        self, thread_id: str, *, to_resource_id: str, resource_id: str | None = None
    ) -> tuple[Thread, list[StoredMessage]]:
        """Async `transfer_thread`."""
        return await _off_loop(
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
        return await _off_loop(
            self.save_messages,
            messages,
            thread_id=thread_id,
            resource_id=resource_id,
            created_at=created_at,
        )

    async def asave_import(self, threads: Sequence[ImportedThread]) -> list[StoredMessage]:
        """Async `save_import`."""
        return await _off_loop(self.save_import, threads)

    async def alist_messages(
        self, thread_id: str, *, last: int | None = None, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """Async `list_messages`."""
        return await _off_loop(self.list_messages, thread_id, last=last, resource_id=resource_id)

    async def apage_messages(self, thread_id: str, **page: Any) -> tuple[list[StoredMessage], int]:
        """Async `page_messages` (same keyword arguments)."""
        return await _off_loop(self.page_messages, thread_id, **page)

    async def aget_messages_by_id(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """Async `get_messages_by_id`."""
        return await _off_loop(self.get_messages_by_id, message_ids, resource_id=resource_id)

    async def aupdate_messages(
        self, messages: Sequence[object], *, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """Async `update_messages`."""
        return await _off_loop(self.update_messages, messages, resource_id=resource_id)

    async def adelete_messages(
        self, message_ids: Sequence[str], *, resource_id: str | None = None
    ) -> int:
        """Async `delete_messages`."""
        return await _off_loop(self.delete_messages, message_ids, resource_id=resource_id)

    async def amove_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> list[StoredMessage]:
        """Async `move_messages`."""
        return await _off_loop(
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
    ) -> list[tuple[str, str, float]]:
        """Async `search_text`."""
        return await _off_loop(
            self.search_text, query, resource_id=resource_id, thread_id=thread_id, limit=limit,
            thread_ids=thread_ids,
        )  # fmt: skip

    async def amessage_windows(
        self, message_ids: Sequence[str], *, before: int, after: int, resource_id: str
    ) -> list[StoredMessage]:
        """Async `message_windows`."""
        return await _off_loop(
            self.message_windows, message_ids, before=before, after=after, resource_id=resource_id
        )

    async def aunembedded(self, *, limit: int = 500) -> list[StoredMessage]:
        """Async `unembedded`."""
        return await _off_loop(self.unembedded, limit=limit)

    async def amark_embedded(self, message_ids: Sequence[str], *, embedded: bool = True) -> None:
        """Async `mark_embedded`."""
        await _off_loop(self.mark_embedded, message_ids, embedded=embedded)

    async def aembedded_ids(
        self, *, after: int = 0, limit: int = 1000
    ) -> list[tuple[int, str, str]]:
        """Async `embedded_ids`."""
        return await _off_loop(self.embedded_ids, after=after, limit=limit)

    async def aget_working_memory(
        self, *, resource_id: str, thread_id: str | None = None
    ) -> str | None:
        """Async `get_working_memory`."""
        return await _off_loop(
            self.get_working_memory, resource_id=resource_id, thread_id=thread_id
        )

    async def amodify_working_memory(
        self,
        update: Callable[[str | None], str],
        *,
        resource_id: str,
        thread_id: str | None = None,
    ) -> str:
        """Async `modify_working_memory`."""
        return await _off_loop(
            self.modify_working_memory, update, resource_id=resource_id, thread_id=thread_id
        )


def owned_thread(thread: Thread | None, *, thread_id: str, resource_id: str) -> Thread:
    """`thread` if `resource_id` owns it; `ThreadNotFoundError` / `ResourceMismatchError`."""
    if thread is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")
    if thread.resource_id != resource_id:
        raise ResourceMismatchError.for_thread(thread_id, resource_id)
    return thread


# -- never blocking the event loop ---------------------------------------------------------------
_forbid_blocking = False


@contextmanager
def forbid_blocking_calls() -> Iterator[None]:
    """While active, a storage method called on a thread that runs an event loop raises
    `BlockingCallError` (a test mode: async code must use the ``a``-prefixed twins)."""
    global _forbid_blocking
    previous, _forbid_blocking = _forbid_blocking, True
    try:
        yield
    finally:
        _forbid_blocking = previous


def _check_not_on_loop(name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return  # no loop runs on this thread: blocking is fine here
    raise BlockingCallError(
        f"storage.{name}() blocked the event loop's thread; await storage.a{name}() instead"
    )


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _forbid_blocking:
            _check_not_on_loop(method.__name__)
        return method(self, *args, **kwargs)

    guarded.__wrapped_storage__ = True  # type: ignore[attr-defined]
    return guarded


_SYNC_IO = (
    "setup", "close", "create_thread", "get_thread", "get_threads", "list_threads", "update_thread",
    "count_threads", "set_archived", "page_messages", "transfer_thread", "thread_stats",
    "delete_thread", "clone_thread", "save_messages", "list_messages", "get_messages_by_id",
    "update_messages", "delete_messages", "move_messages", "search_text", "message_windows",
    "unembedded", "mark_embedded", "embedded_ids", "get_working_memory", "modify_working_memory",
    "ensure_thread", "put_items", "get_items", "search_items", "item_namespaces",
    "nearest_items",
    "working_memories", "observation_log", "unobserved_messages", "unobserved_tokens",
    "claim_observation", "release_observation", "commit_observation", "activate_observations",
    "commit_reflection",
)  # fmt: skip


def _guard_subclass(cls: type) -> None:
    for name in _SYNC_IO:
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "__wrapped_storage__", False):
            setattr(cls, name, _guarded(method))


async def _off_loop(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a sync storage call in a worker thread (langchain-core's executor)."""
    return await run_in_executor(None, functools.partial(func, *args, **kwargs))
