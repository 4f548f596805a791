"""The storage interface every backend implements (threads, messages, resources).

`MemoryStorage` is the synchronous contract (`ConversationStorage`), what the SQL backends keep
beside it (`DerivedRecords`) and the ``a``-prefixed twins every caller can await.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import ToolMessage

from ..errors import OrphanToolResultWarning, ThreadExistsError
from ..pools import in_io_pool
from .blocking import forbid_blocking_calls, guard_subclass, off_loop
from .contract import UNSET, ConversationStorage, owned_thread
from .derived import DerivedRecords
from .records import (
    ImportedThread,
    MessageFilter,
    Neighbour,
    ResourceSummary,
    StoredMessage,
    TimeWindow,
)
from .thread import Thread
from .validation import check_id

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


class MemoryStorage(DerivedRecords, ConversationStorage):
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
        if (thread := await self.aget_thread(check_id(thread_id, "thread_id"))) is None:
            try:
                return await self.acreate_thread(thread_id=thread_id, resource_id=resource_id)
            except ThreadExistsError:
                thread = await self.aget_thread(thread_id)
        return owned_thread(thread, thread_id=thread_id, resource_id=resource_id)

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
