"""`list` and `alist` of `MemoryCheckpointer`: the wrapped saver's listing, for the owner only.

A listing of one thread checks its owner first (another resource's thread raises
`ResourceMismatchError`; a thread memory no longer holds lists nothing: its checkpoints are
nobody's). A listing without a thread keeps the threads of the resource the config names (all
threads when it names none), reading each thread's owner once. Every checkpoint comes back
whole (its ``messages`` list put back from memory, `refs`) and stamped with the owner it was
checked against, so its config replays (`configs.stamped`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

from ...twins import run_async, run_sync
from . import configs


class Listed(Protocol):
    """What a listing needs of the checkpointer: its saver, its I/O and lists, and its owners.
    Typed here so this module does not name the class that uses it."""

    saver: Any
    owners: Any  # `owners.ThreadOwners`
    _io: Any
    _refs: Any


class CheckpointListing:
    """The owner-checked listings of one checkpointer (see the module docstring)."""

    def __init__(self, checkpointer: Listed) -> None:
        self.cp = checkpointer

    def list(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Iterator[CheckpointTuple]:
        cp = self.cp
        if target := cp.owners.read_target(config):
            if (owner := cp.owners.check_owner(*target)) is not None:  # else orphaned: nobody's
                scratch: dict[str, Any] = {}  # values read for one checkpoint serve the next
                for item in cp.saver.list(config, filter=filter, before=before, limit=limit):
                    yield configs.stamped(run_sync(cp._refs.resolved(item, scratch)), owner)
            return
        owner = cp.owners.list_owner(config)
        count = 0
        everyone = None if owner else config  # the owner's threads: read all, keep theirs
        owners: dict[str, str | None] = {}  # read once per thread for this listing
        for item in cp.saver.list(
            everyone, filter=filter, before=before, limit=None if owner else limit
        ):
            if limit is not None and count >= limit:
                return
            thread_id = configs.thread_of(item)
            if thread_id not in owners:
                owners[thread_id] = cp.owners.owner(thread_id)
            if (found := owners[thread_id]) == owner or owner is None:
                count += 1
                yield configs.stamped(run_sync(cp._refs.resolved(item)), found)

    async def alist(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> AsyncIterator[CheckpointTuple]:
        cp = self.cp
        if target := cp.owners.read_target(config):
            if (owner := await cp.owners.acheck_owner(*target)) is not None:  # else orphaned
                scratch: dict[str, Any] = {}
                async for item in cp._io.saver_alist(config, filter, before, limit):
                    resolved = await run_async(cp._refs.resolved(item, scratch))
                    yield configs.stamped(resolved, owner)
            return
        owner = cp.owners.list_owner(config)
        count = 0
        everyone = None if owner else config
        owners: dict[str, str | None] = {}  # read once per thread for this listing
        async for item in cp._io.saver_alist(everyone, filter, before, None if owner else limit):
            if limit is not None and count >= limit:
                return
            thread_id = configs.thread_of(item)
            if thread_id not in owners:
                owners[thread_id] = await cp.owners.aowner(thread_id)
            if (found := owners[thread_id]) == owner or owner is None:
                count += 1
                yield configs.stamped(await run_async(cp._refs.resolved(item)), found)
