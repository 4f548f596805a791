"""LangGraph store items (`memory.store()`, `store.MemoryStore`), with their async twins.

A backend without them raises `NotImplementedError` naming what needs them.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from datetime import datetime

from ..blocking import off_loop
from ..records import (
    ItemWrite,
    StoredItem,
)

_NO_ITEMS = (
    "{} does not keep LangGraph store items; memory.store() needs SQLiteStorage or "
    "PostgresStorage (or a storage implementing put_items/get_items/search_items)"
)


class ItemRecords(ABC):  # noqa: B024 - every method has a default
    """LangGraph store items (part of `MemoryStorage`)."""

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

    def delete_items_labelled(self, label: str) -> int:
        """Delete every item whose namespace has `label` as a label; how many went."""
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
        await off_loop(self.put_items, writes)

    async def aget_items(
        self, refs: Sequence[tuple[tuple[str, ...], str]], *, refresh_ttl: bool = True
    ) -> list[StoredItem | None]:
        """Async `get_items`."""
        return await off_loop(self.get_items, refs, refresh_ttl=refresh_ttl)

    async def asearch_items(
        self,
        prefix: tuple[str, ...],
        *,
        limit: int | None = None,
        offset: int = 0,
        refresh_ttl: bool = False,
    ) -> list[StoredItem]:
        """Async `search_items`."""
        return await off_loop(
            self.search_items, prefix, limit=limit, offset=offset, refresh_ttl=refresh_ttl
        )

    async def anearest_items(
        self, prefix: tuple[str, ...], vector: Sequence[float], *, limit: int
    ) -> list[tuple[tuple[str, ...], str, float]]:
        """Async `nearest_items`."""
        return await off_loop(self.nearest_items, prefix, vector, limit=limit)

    async def aitem_namespaces(self) -> list[tuple[str, ...]]:
        """Async `item_namespaces`."""
        return await off_loop(self.item_namespaces)

    async def aworking_memories(
        self, resource_id: str | None = None
    ) -> list[tuple[str, str | None, str, datetime]]:
        """Async `working_memories`."""
        return await off_loop(self.working_memories, resource_id)
