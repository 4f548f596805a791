"""A graph's message lists, each value once (`integrations.checkpointer.refs`; kept by
`sql.checkpoint_lists`).

A backend without them raises `NotImplementedError` naming what needs them.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Collection, Sequence

from ..blocking import off_loop
from ..records import (
    CheckpointList,
    CheckpointValue,
)
from ..thread import Thread

_NO_LISTS = (
    "{} does not keep checkpoint message lists (MemoryCheckpointer stores each message once in "
    "SQLiteStorage or PostgresStorage; elsewhere the saver keeps whole lists)"
)


class CheckpointListRecords(ABC):  # noqa: B024 - every method has a default
    """A graph's message lists, each value once (part of `MemoryStorage`)."""

    def save_checkpoint_list(
        self,
        entry: CheckpointList,
        values: Sequence[CheckpointValue] = (),
        *,
        resource_id: str | None = None,
    ) -> None:
        """Store a checkpoint's message list and the values it adds (in a thread of
        `resource_id`, when given)."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def read_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] | None = None,
    ) -> tuple[list[str], int, dict[str, CheckpointValue]] | None:
        """A checkpoint's stored list: its keys, depth and the values not `known`."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def read_thread_and_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] = (),
    ) -> tuple[Thread | None, tuple[list[str], int, dict[str, CheckpointValue]] | None]:
        """The thread now and a checkpoint's stored list (`read_checkpoint_list`), together."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def copy_checkpoint_lists(self, source_thread_id: str, target_thread_id: str) -> None:
        """Give a thread copy the source thread's lists and values."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def blank_checkpoint_values(self, thread_id: str, message_ids: Sequence[str]) -> int:
        """Blank these messages' values in the thread's lists (retention)."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    def sweep_checkpoint_lists(
        self,
        thread_id: str,
        keep: Collection[tuple[str, str]],
        doomed: Collection[tuple[str, str]] | None = None,
    ) -> int:
        """Delete the list rows no kept checkpoint reaches, and unused values."""
        raise NotImplementedError(_NO_LISTS.format(type(self).__name__))

    async def asave_checkpoint_list(
        self,
        entry: CheckpointList,
        values: Sequence[CheckpointValue] = (),
        *,
        resource_id: str | None = None,
    ) -> None:
        """Async `save_checkpoint_list`."""
        await off_loop(self.save_checkpoint_list, entry, values, resource_id=resource_id)

    async def aread_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] | None = None,
    ) -> tuple[list[str], int, dict[str, CheckpointValue]] | None:
        """Async `read_checkpoint_list`."""
        return await off_loop(
            self.read_checkpoint_list, thread_id, checkpoint_ns, checkpoint_id, known=known
        )

    async def aread_thread_and_checkpoint_list(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        known: Collection[str] = (),
    ) -> tuple[Thread | None, tuple[list[str], int, dict[str, CheckpointValue]] | None]:
        """Async `read_thread_and_checkpoint_list`."""
        return await off_loop(
            self.read_thread_and_checkpoint_list,
            thread_id,
            checkpoint_ns,
            checkpoint_id,
            known=known,
        )

    async def acopy_checkpoint_lists(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async `copy_checkpoint_lists`."""
        await off_loop(self.copy_checkpoint_lists, source_thread_id, target_thread_id)

    async def ablank_checkpoint_values(self, thread_id: str, message_ids: Sequence[str]) -> int:
        """Async `blank_checkpoint_values`."""
        return await off_loop(self.blank_checkpoint_values, thread_id, message_ids)

    async def asweep_checkpoint_lists(
        self,
        thread_id: str,
        keep: Collection[tuple[str, str]],
        doomed: Collection[tuple[str, str]] | None = None,
    ) -> int:
        """Async `sweep_checkpoint_lists`."""
        return await off_loop(self.sweep_checkpoint_lists, thread_id, keep, doomed)
