"""The I/O of `MemoryCheckpointer` as sync/async twins, for its algorithms written once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial
from typing import Any, ParamSpec, Protocol, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from ...pools import in_io_pool
from .configs import root_config
from .deletes import delete_checkpoints

P = ParamSpec("P")
T = TypeVar("T")


def overrides(saver: BaseCheckpointSaver[Any], method: str) -> bool:
    """Whether `saver` has its own `method` (not `BaseCheckpointSaver`'s default)."""
    return getattr(type(saver), method, None) is not getattr(BaseCheckpointSaver, method, None)


async def on_saver(method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """A saver's sync method (``saver.put``), awaited: its own async twin (``saver.aput``)
    when its class has one, else the sync method on memory's I/O threads (a sync-only saver,
    or one whose twin raises NotImplementedError, as `SqliteSaver`'s do)."""
    saver, twin = getattr(method, "__self__", None), "a" + method.__name__
    if isinstance(saver, BaseCheckpointSaver) and overrides(saver, twin):
        try:
            result: T = await getattr(saver, twin)(*args, **kwargs)
            return result
        except NotImplementedError:
            pass
    return await in_io_pool(partial(method, *args, **kwargs))


class Checkpointing(Protocol):
    """What the I/O needs of a checkpointer (`MemoryCheckpointer`): its wrapped saver and its
    owners' reads. Typed here so this module does not name the class that uses it."""

    saver: BaseCheckpointSaver[Any]
    owners: Any  # `owners.ThreadOwners`


class CheckpointerIO:
    """A checkpointer's I/O as sync/async twins, for the algorithms written once (`twins`):
    the wrapped saver's reads and writes (its async methods, or its sync ones in a worker
    thread) and the owner reads."""

    def __init__(self, checkpointer: Checkpointing) -> None:
        self.cp = checkpointer

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.cp.saver.get_tuple(config)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await on_saver(self.cp.saver.get_tuple, config)

    def put(self, *args: Any) -> RunnableConfig:
        return self.cp.saver.put(*args)

    async def aput(self, *args: Any) -> RunnableConfig:
        return await on_saver(self.cp.saver.put, *args)

    def put_writes(self, *args: Any) -> None:
        self.cp.saver.put_writes(*args)

    async def aput_writes(self, *args: Any) -> None:
        await on_saver(self.cp.saver.put_writes, *args)

    def list_all(self, config: RunnableConfig | None, **kwargs: Any) -> list[CheckpointTuple]:
        """Every checkpoint the saver lists for `config` (no owner filter: upkeep's reads)."""
        return list(self.cp.saver.list(config, **kwargs))

    async def alist_all(
        self, config: RunnableConfig | None, **kwargs: Any
    ) -> list[CheckpointTuple]:
        items = self.saver_alist(config, kwargs.get("filter"), None, None)
        return [item async for item in items]

    def saver_call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One of the saver's own methods (``saver.delete_thread``, ``saver.prune``, ...)."""
        return method(*args, **kwargs)

    async def asaver_call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await on_saver(method, *args, **kwargs)

    def delete_checkpoints(self, thread_id: str, doomed: Any) -> None:
        """Some checkpoints of a thread, deleted in the saver's own rows (`deletes`)."""
        delete_checkpoints(self.cp.saver, thread_id, doomed)

    async def adelete_checkpoints(self, thread_id: str, doomed: Any) -> None:
        await in_io_pool(delete_checkpoints, self.cp.saver, thread_id, doomed)

    def delta_history(self, config: RunnableConfig, channels: Sequence[str]) -> Any:
        """The saver's `get_delta_channel_history` (its own fast query where it has one)."""
        return self.cp.saver.get_delta_channel_history(config=config, channels=channels)

    async def adelta_history(self, config: RunnableConfig, channels: Sequence[str]) -> Any:
        saver = self.cp.saver
        if overrides(saver, "aget_delta_channel_history") or not overrides(
            saver, "get_delta_channel_history"
        ):  # its own async query, or the default walk over its own aget_tuple
            try:
                return await saver.aget_delta_channel_history(config=config, channels=channels)
            except NotImplementedError:  # a sync-only saver's aget_tuple
                pass
        return await in_io_pool(self.delta_history, config, channels)

    def owner(self, thread_id: str) -> str | None:
        return cast("str | None", self.cp.owners.owner(thread_id))

    async def aowner(self, thread_id: str) -> str | None:
        return cast("str | None", await self.cp.owners.aowner(thread_id))

    def purge_orphans(self, thread_id: str) -> None:
        self.cp.owners.purge_orphans(thread_id)

    async def apurge_orphans(self, thread_id: str) -> None:
        await self.cp.owners.apurge_orphans(thread_id)

    def latest(self, thread_id: str) -> str | None:
        """The thread's latest root checkpoint id, as the saver has it now."""
        found = self.cp.saver.get_tuple(root_config(thread_id))
        return None if found is None else str(found.checkpoint["id"])

    async def alatest(self, thread_id: str) -> str | None:
        found = await on_saver(self.cp.saver.get_tuple, root_config(thread_id))
        return None if found is None else str(found.checkpoint["id"])

    async def saver_alist(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The saver's `alist`, or its `list` read whole on memory's I/O threads (a sync-only
        saver, whose `alist` raises NotImplementedError before its first item)."""
        saver = self.cp.saver
        if overrides(saver, "alist"):
            try:
                async for item in saver.alist(config, filter=filter, before=before, limit=limit):
                    yield item
                return
            except NotImplementedError:
                pass
        items = await in_io_pool(
            lambda: [*saver.list(config, filter=filter, before=before, limit=limit)]
        )
        for item in items:
            yield item
