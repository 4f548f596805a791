"""The storage interface every backend implements (threads, messages, resources)."""

from __future__ import annotations

import logging
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables.config import run_in_executor

from ..errors import OrphanToolResultWarning
from ..thread import Thread
from .records import StoredMessage

logger = logging.getLogger("langchain_mastra_memory")


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


class MemoryStorage(ABC):
    """Where threads, messages and resources live.

    Backends implement the synchronous methods; the ``a``-prefixed twins default to running the
    synchronous method in a worker thread (``run_in_executor``, as langchain-core does), and a
    backend with a native async driver overrides them.

    Every method that takes ``resource_id`` checks ownership: a thread or message of another
    resource raises `ResourceMismatchError` and nothing is changed.
    """

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
    ) -> list[Thread]:
        """Threads filtered by owner and metadata equality, ordered and paged."""

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
    ) -> tuple[Thread, list[StoredMessage]]:
        """Copy a thread and its messages (new message ids) under the same resource."""

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
    def list_messages(
        self, thread_id: str, *, last: int | None = None, resource_id: str | None = None
    ) -> list[StoredMessage]:
        """The thread's messages in order; with `last`, only the newest `last` of them."""

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

    # -- recall --------------------------------------------------------------------------------
    @abstractmethod
    def search_text(
        self, query: str, *, resource_id: str, thread_id: str | None = None, limit: int = 10
    ) -> list[tuple[str, str, float]]:
        """Keyword (BM25) search over user and assistant messages of one resource (and thread).

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
    def mark_embedded(self, message_ids: Sequence[str]) -> None:
        """Record that these messages' embeddings are in the vector store."""

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

    # -- async twins (delegate to a worker thread unless a backend overrides them) --------------
    async def asetup(self) -> None:
        """Async `setup`."""
        await run_in_executor(None, self.setup)

    async def aclose(self) -> None:
        """Async `close`."""
        await run_in_executor(None, self.close)

    async def acreate_thread(self, **kwargs: Any) -> Thread:
        """Async `create_thread`."""
        return await run_in_executor(None, lambda: self.create_thread(**kwargs))

    async def aget_thread(self, thread_id: str) -> Thread | None:
        """Async `get_thread`."""
        return await run_in_executor(None, self.get_thread, thread_id)

    async def alist_threads(self, **kwargs: Any) -> list[Thread]:
        """Async `list_threads`."""
        return await run_in_executor(None, lambda: self.list_threads(**kwargs))

    async def aupdate_thread(self, thread_id: str, **kwargs: Any) -> Thread:
        """Async `update_thread`."""
        return await run_in_executor(None, lambda: self.update_thread(thread_id, **kwargs))

    async def adelete_thread(self, thread_id: str, **kwargs: Any) -> bool:
        """Async `delete_thread`."""
        return await run_in_executor(None, lambda: self.delete_thread(thread_id, **kwargs))

    async def aclone_thread(
        self, thread_id: str, **kwargs: Any
    ) -> tuple[Thread, list[StoredMessage]]:
        """Async `clone_thread`."""
        return await run_in_executor(None, lambda: self.clone_thread(thread_id, **kwargs))

    async def asave_messages(
        self, messages: Sequence[object], **kwargs: Any
    ) -> list[StoredMessage]:
        """Async `save_messages`."""
        return await run_in_executor(None, lambda: self.save_messages(messages, **kwargs))

    async def alist_messages(self, thread_id: str, **kwargs: Any) -> list[StoredMessage]:
        """Async `list_messages`."""
        return await run_in_executor(None, lambda: self.list_messages(thread_id, **kwargs))

    async def aget_messages_by_id(
        self, message_ids: Sequence[str], **kwargs: Any
    ) -> list[StoredMessage]:
        """Async `get_messages_by_id`."""
        return await run_in_executor(None, lambda: self.get_messages_by_id(message_ids, **kwargs))

    async def aupdate_messages(
        self, messages: Sequence[object], **kwargs: Any
    ) -> list[StoredMessage]:
        """Async `update_messages`."""
        return await run_in_executor(None, lambda: self.update_messages(messages, **kwargs))

    async def asearch_text(self, query: str, **kwargs: Any) -> list[tuple[str, str, float]]:
        """Async `search_text`."""
        return await run_in_executor(None, lambda: self.search_text(query, **kwargs))

    async def amessage_windows(
        self, message_ids: Sequence[str], **kwargs: Any
    ) -> list[StoredMessage]:
        """Async `message_windows`."""
        return await run_in_executor(None, lambda: self.message_windows(message_ids, **kwargs))

    async def aunembedded(self, **kwargs: Any) -> list[StoredMessage]:
        """Async `unembedded`."""
        return await run_in_executor(None, lambda: self.unembedded(**kwargs))

    async def amark_embedded(self, message_ids: Sequence[str]) -> None:
        """Async `mark_embedded`."""
        await run_in_executor(None, self.mark_embedded, message_ids)

    async def aget_working_memory(self, **kwargs: Any) -> str | None:
        """Async `get_working_memory`."""
        return await run_in_executor(None, lambda: self.get_working_memory(**kwargs))

    async def amodify_working_memory(
        self, update: Callable[[str | None], str], **kwargs: Any
    ) -> str:
        """Async `modify_working_memory`."""
        return await run_in_executor(None, lambda: self.modify_working_memory(update, **kwargs))

    async def adelete_messages(self, message_ids: Sequence[str], **kwargs: Any) -> int:
        """Async `delete_messages`."""
        return await run_in_executor(None, lambda: self.delete_messages(message_ids, **kwargs))
