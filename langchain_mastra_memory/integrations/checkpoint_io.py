"""The I/O of `MemoryCheckpointer` as sync/async twins, for its algorithms written once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

if TYPE_CHECKING:
    from .checkpointer import MemoryCheckpointer


class CheckpointerIO:
    """A checkpointer's I/O as sync/async twins, for the algorithms written once (`twins`):
    the wrapped saver's reads and writes (its async methods, or its sync ones in a worker
    thread) and the owner cache."""

    def __init__(self, checkpointer: MemoryCheckpointer) -> None:
        self.cp = checkpointer

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.cp.saver.get_tuple(config)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.cp._inner("get_tuple", config)

    def put(self, *args: Any) -> RunnableConfig:
        return self.cp.saver.put(*args)

    async def aput(self, *args: Any) -> RunnableConfig:
        return await self.cp._inner("put", *args)

    def put_writes(self, *args: Any) -> None:
        self.cp.saver.put_writes(*args)

    async def aput_writes(self, *args: Any) -> None:
        await self.cp._inner("put_writes", *args)

    def owner(self, thread_id: str) -> str | None:
        return self.cp._owner(thread_id)

    async def aowner(self, thread_id: str) -> str | None:
        return await self.cp._aowner(thread_id)

    def purge_orphans(self, thread_id: str) -> None:
        self.cp._purge_orphans(thread_id)

    async def apurge_orphans(self, thread_id: str) -> None:
        await self.cp._apurge_orphans(thread_id)

    def latest(self, thread_id: str) -> str | None:
        return self.cp._latest(thread_id)

    async def alatest(self, thread_id: str) -> str | None:
        return await self.cp._alatest(thread_id)
