"""What is older than an age, for retention (`Memory.prune`; `sql.retention`).

A backend without them raises `NotImplementedError` naming what needs them.
"""

from __future__ import annotations

from abc import ABC
from datetime import datetime

from ..blocking import off_loop

_NO_RETENTION = (
    "{} does not support retention (memory.prune() needs SQLiteStorage or PostgresStorage)"
)


class RetentionRecords(ABC):  # noqa: B024 - every method has a default
    """What is older than an age, for retention (part of `MemoryStorage`)."""

    def aged_messages(self, before: datetime, limit: int) -> list[tuple[str, str, str]]:
        """Messages created before `before`, oldest first: (id, thread, owner)."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    def idle_threads(self, before: datetime, limit: int) -> list[tuple[str, str]]:
        """Threads last active before `before`: (id, owner)."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    def delete_aged_observations(self, before: datetime, limit: int) -> int:
        """Delete observation groups written before `before`; how many went."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    def aged_items(self, before: datetime, limit: int) -> list[tuple[tuple[str, ...], str]]:
        """Store items with no time to live, last written before `before`."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    def drop_observation_sources(
        self, message_ids: list[str], *, thread_id: str, resource_id: str
    ) -> int:
        """Take pruned messages out of their logs' provenance."""
        raise NotImplementedError(_NO_RETENTION.format(type(self).__name__))

    async def adrop_observation_sources(
        self, message_ids: list[str], *, thread_id: str, resource_id: str
    ) -> int:
        """Async `drop_observation_sources`."""
        return await off_loop(
            self.drop_observation_sources,
            message_ids,
            thread_id=thread_id,
            resource_id=resource_id,
        )

    async def aaged_messages(self, before: datetime, limit: int) -> list[tuple[str, str, str]]:
        """Async `aged_messages`."""
        return await off_loop(self.aged_messages, before, limit)

    async def aidle_threads(self, before: datetime, limit: int) -> list[tuple[str, str]]:
        """Async `idle_threads`."""
        return await off_loop(self.idle_threads, before, limit)

    async def adelete_aged_observations(self, before: datetime, limit: int) -> int:
        """Async `delete_aged_observations`."""
        return await off_loop(self.delete_aged_observations, before, limit)

    async def aaged_items(self, before: datetime, limit: int) -> list[tuple[tuple[str, ...], str]]:
        """Async `aged_items`."""
        return await off_loop(self.aged_items, before, limit)
