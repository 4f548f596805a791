"""The synchronous contract of a storage backend: threads, messages, working memory."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from ..errors import ResourceMismatchError, ThreadExistsError, ThreadNotFoundError
from ..messages import index_text
from .records import ImportedThread, Neighbour, ResourceSummary, StoredMessage, TimeWindow
from .thread import Thread
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
        if (thread := self.get_thread(check_id(thread_id, "thread_id"))) is None:
            try:
                return self.create_thread(thread_id=thread_id, resource_id=resource_id)
            except ThreadExistsError:  # created by someone else meanwhile
                thread = self.get_thread(thread_id)
        return owned_thread(thread, thread_id=thread_id, resource_id=resource_id)


def owned_thread(thread: Thread | None, *, thread_id: str, resource_id: str) -> Thread:
    """`thread` if `resource_id` owns it; `ThreadNotFoundError` / `ResourceMismatchError`."""
    if thread is None:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")
    if thread.resource_id != resource_id:
        raise ResourceMismatchError.for_thread(thread_id, resource_id)
    return thread
