"""The ids of messages read-only turns left in a graph's state (`conversation`'s walks skip them).

A backend without them raises `NotImplementedError` naming what needs them.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence

from ..blocking import off_loop

_NO_WITHHELD = (
    "{} cannot remember the messages of read-only turns (read_only needs SQLiteStorage or "
    "PostgresStorage, or a storage implementing withhold_messages/withheld_ids)"
)


class WithheldRecords(ABC):  # noqa: B024 - every method has a default
    """The ids of messages read-only turns left in a graph's state (part of `MemoryStorage`)."""

    def withhold_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> None:
        """Remember that these messages of `thread_id` are never to be stored (a read-only
        turn's, left in a graph's state)."""
        raise NotImplementedError(_NO_WITHHELD.format(type(self).__name__))

    def withheld_ids(self, message_ids: Sequence[str], *, thread_id: str) -> set[str]:
        """Those of `message_ids` withheld from `thread_id` (`withhold_messages`)."""
        raise NotImplementedError(_NO_WITHHELD.format(type(self).__name__))

    async def awithhold_messages(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> None:
        """Async `withhold_messages`."""
        await off_loop(
            self.withhold_messages, message_ids, thread_id=thread_id, resource_id=resource_id
        )

    async def awithheld_ids(self, message_ids: Sequence[str], *, thread_id: str) -> set[str]:
        """Async `withheld_ids`."""
        return await off_loop(self.withheld_ids, message_ids, thread_id=thread_id)
