"""Maintaining a thread's checkpoints: ``copy_thread``, ``delete_for_runs``, ``prune``.

LangGraph Server calls these (``POST /threads/{id}/copy``, ``multitask_strategy="rollback"``,
thread history pruning and TTLs) and warns at start of a checkpointer that lacks one. A saver
with its own (``PostgresSaver.prune``, say) is used as it is; for the others (``SqliteSaver``,
``InMemorySaver``) the work is done with the base saver API alone, by rewriting the thread:
its checkpoints are listed, the thread is deleted, and the ones kept are put back in order,
each with its pending writes and its parent. Checkpoint ids, metadata and values stay as they
were. A ``DeltaChannel`` stays readable: pruning keeps every ancestor of a kept checkpoint back
to the one holding a snapshot of each delta channel (LangGraph's first safe option).

Memory follows each one: a copy carries memory's messages, vectors and observations
(`Memory.clone_thread`); a rolled-back run's new messages leave the thread (they never were,
as far as the graph is concerned); pruning deletes checkpoints only (memory keeps the
conversation, as it does under compaction).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from ...errors import ConfigurationError, ResourceMismatchError
from ...storage.records import from_iso, stored_ids
from ...twins import Steps, call
from .channel import referenced_at
from .saver_io import SaverIO, deletes_in_place, ids_of, overrides, thread_of

if TYPE_CHECKING:
    from ...storage.base import MemoryStorage
    from ...turn.writes import MemoryWrites
    from .channel import CheckpointMessages, MessageRefs

STRATEGIES = ("keep_latest", "delete", "delete_all")  # "delete_all": LangGraph Server's name


def _thread(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _namespace(item: CheckpointTuple) -> str:
    return str(item.config["configurable"].get("checkpoint_ns") or "")


def _parent_id(item: CheckpointTuple) -> str | None:
    parent = (item.parent_config or {}).get("configurable") or {}
    return parent.get("checkpoint_id")


def put_back(io: SaverIO, items: Sequence[CheckpointTuple], thread_id: str) -> Steps[None]:
    """Put `items` (checkpoints of any thread) into `thread_id`, oldest first, each under its
    own parent with its pending writes (grouped by task, in their stored order)."""
    for item in sorted(items, key=lambda i: i.checkpoint["id"]):
        configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": _namespace(item)}
        if parent := _parent_id(item):
            configurable["checkpoint_id"] = parent
        metadata = dict(item.metadata or {})
        if "thread_id" in metadata:
            metadata["thread_id"] = thread_id
        versions = dict(item.checkpoint.get("channel_versions") or {})
        stored = yield from call(
            io.put, {"configurable": configurable}, item.checkpoint, metadata, versions
        )
        by_task: dict[str, list[tuple[str, Any]]] = {}
        for task_id, channel, value in item.pending_writes or ():
            by_task.setdefault(task_id, []).append((channel, value))
        for task_id, writes in by_task.items():
            yield from call(io.put_writes, stored, writes, task_id)


def keep_for_latest(items: Sequence[CheckpointTuple]) -> list[CheckpointTuple]:
    """The checkpoints ``keep_latest`` keeps: each namespace's newest, and its ancestors back
    to one that holds a value for every channel the newest leaves to a delta replay."""
    return keep_with_ancestors(items, keep_newest(items, before=None, count=1))


def keep_newest(
    items: Sequence[CheckpointTuple], *, before: datetime | None, count: int | None
) -> list[CheckpointTuple]:
    """Per namespace: its newest checkpoint, the newest `count`, and those written at or
    after `before` (retention's choice; None: no such rule)."""
    chosen = []
    for namespace in {_namespace(i) for i in items}:
        mine = sorted(
            (i for i in items if _namespace(i) == namespace),
            key=lambda i: i.checkpoint["id"],
            reverse=True,
        )
        for rank, item in enumerate(mine):
            young = before is not None and from_iso(item.checkpoint["ts"]) >= before
            if rank == 0 or (count is not None and rank < count) or young:
                chosen.append(item)
    return chosen


def keep_with_ancestors(
    items: Sequence[CheckpointTuple], chosen: Sequence[CheckpointTuple]
) -> list[CheckpointTuple]:
    """`chosen`, each with its ancestors back to one holding a value for every channel it
    leaves to a delta replay (so each still reads)."""
    by_id = {i.checkpoint["id"]: i for i in items}
    kept: dict[str, CheckpointTuple] = {}
    for newest in chosen:
        values = newest.checkpoint.get("channel_values") or {}
        waiting = {c for c in newest.checkpoint.get("channel_versions") or {} if c not in values}
        cursor: CheckpointTuple | None = newest
        while cursor is not None:
            kept[cursor.checkpoint["id"]] = cursor
            waiting -= set(cursor.checkpoint.get("channel_values") or {})
            parent = _parent_id(cursor)
            cursor = by_id.get(parent) if waiting and parent else None
    return list(kept.values())


class CheckpointMaintenance:
    """A thread's maintenance through the wrapped saver, as steps (`twins`): `MemoryCheckpointer`
    holds one and runs them sync or async (its ``copy_thread``, ``delete_for_runs``,
    ``write_back``, ``prune_checkpoints`` and ``prune``). `forget_caches` drops what the
    checkpointer's parts remember of a thread whose checkpoints were rewritten."""

    def __init__(
        self,
        io: SaverIO,
        storage: MemoryStorage,
        writes: MemoryWrites,
        channel: CheckpointMessages,
        refs: MessageRefs,
        forget_caches: Callable[[str], None],
    ) -> None:
        self.saver, self._io, self.storage, self.writes = io.saver, io, storage, writes
        self._channel, self._refs, self._forget_caches = channel, refs, forget_caches

    # -- copy ----------------------------------------------------------------------------------
    def copy(self, source_thread_id: str, target_thread_id: str) -> Steps[None]:
        """Copy a thread's checkpoints, and memory's thread with them (same owner only)."""
        storage = self.storage
        source = yield from call(storage.get_thread, source_thread_id)
        target = yield from call(storage.get_thread, target_thread_id)
        if source is not None and target is not None and target.resource_id != source.resource_id:
            raise ResourceMismatchError.for_thread(target_thread_id, source.resource_id)
        if overrides(self.saver, "copy_thread") or overrides(self.saver, "acopy_thread"):
            yield from call(
                self._io.saver_call, self.saver.copy_thread, source_thread_id, target_thread_id
            )
        else:
            items = yield from call(self._io.list_all, _thread(source_thread_id))
            yield from put_back(self._io, items, target_thread_id)
        if source is not None and target is None:
            yield from call(
                self.writes.clone,
                source_thread_id,
                new_thread_id=target_thread_id,
                carry_ids=True,
            )
        if source is not None:  # the copied checkpoints' lists (`checkpointer.channel`); a storage
            with suppress(NotImplementedError):  # without lists referenced none
                yield from call(storage.copy_checkpoint_lists, source_thread_id, target_thread_id)

    # -- a cancelled run, rolled back -------------------------------------------------------------
    def delete_runs(self, run_ids: list[str]) -> Steps[None]:
        """Delete the checkpoints (and writes) of these runs; their new messages leave memory."""
        doomed_runs = {str(r) for r in run_ids}
        threads: set[str] = set()
        for run_id in doomed_runs:
            found = yield from call(self._io.list_all, None, filter={"run_id": run_id})
            threads |= {thread_of(i) for i in found}
        native = overrides(self.saver, "delete_for_runs") or overrides(
            self.saver, "adelete_for_runs"
        )
        for thread_id in sorted(threads):
            items = yield from call(self._io.list_all, _thread(thread_id))
            doomed = [i for i in items if str((i.metadata or {}).get("run_id")) in doomed_runs]
            kept = [i for i in items if i not in doomed]
            yield from self._forget_run_messages(thread_id, doomed, kept)
            if native:
                self._forget_caches(thread_id)
            else:
                yield from self._rewrite(thread_id, kept)
        if native:
            yield from call(self._io.saver_call, self.saver.delete_for_runs, sorted(doomed_runs))

    def _forget_run_messages(
        self, thread_id: str, doomed: list[CheckpointTuple], kept: list[CheckpointTuple]
    ) -> Steps[None]:
        """The messages only the rolled-back checkpoints held leave memory's thread."""
        roots = [i for i in kept if not _namespace(i)]
        held: set[str] = set()
        if roots:
            head = max(roots, key=lambda i: i.checkpoint["id"])
            held = set(ids_of((yield from self._channel.stored(head))))
        added: set[str] = set()
        for item in doomed:
            if not _namespace(item):
                added |= set(ids_of((yield from self._channel.stored(item))))
        gone = sorted(added - held)
        if not gone:
            return
        thread = yield from call(self.storage.get_thread, thread_id)
        if thread is None:
            return
        ref = {"resource_id": thread.resource_id}
        stored = yield from call(self.storage.get_messages_by_id, gone, **ref)
        mine = stored_ids(s for s in stored if s.thread_id == thread_id)
        if mine:
            yield from call(self.writes.delete, mine, **ref)

    # -- the saver's own format -------------------------------------------------------------------
    def write_back(self, thread_id: str, saver: BaseCheckpointSaver[Any] | None) -> Steps[int]:
        """The thread's checkpoints in the saver's own format (`MemoryCheckpointer.write_back`):
        how many were written."""
        items = yield from call(self._io.list_all, _thread(thread_id))
        scratch: dict[str, Any] = {}
        whole: list[CheckpointTuple] = []
        for item in items:
            resolved = yield from self._refs.resolved(item, scratch)
            whole += [resolved] if resolved is not None else []
        if saver is not None:
            yield from put_back(SaverIO(saver), whole, thread_id)
            return len(whole)
        yield from call(self._io.saver_call, self.saver.delete_thread, thread_id)
        yield from put_back(self._io, whole, thread_id)
        self._forget_caches(thread_id)
        with suppress(NotImplementedError):  # no checkpoint refers to memory's lists any more
            yield from call(self.storage.sweep_checkpoint_lists, thread_id, set())
        return len(whole)

    # -- retention: checkpoints older than an age, or beyond the newest N --------------------------
    def prune_checkpoints(
        self, thread_id: str, before: datetime | None, keep: int | None
    ) -> Steps[int]:
        """Delete the thread's checkpoints written before `before` and not among each
        namespace's newest `keep` (never a namespace's newest, nor an ancestor a kept one
        reads through); memory's lists follow. How many went."""
        items = yield from call(self._io.list_all, _thread(thread_id))
        kept = keep_with_ancestors(items, keep_newest(items, before=before, count=keep))
        kept_ids = {i.checkpoint["id"] for i in kept}
        doomed = [
            (_namespace(i), i.checkpoint["id"]) for i in items if i.checkpoint["id"] not in kept_ids
        ]
        if not doomed:
            return 0
        if deletes_in_place(self.saver):
            yield from call(self._io.delete_checkpoints, thread_id, doomed)
        else:
            yield from self._rewrite(thread_id, kept)
        rows = {
            (_namespace(i), at)
            for i in kept
            if (at := referenced_at((i.checkpoint.get("channel_values") or {}).get(self._refs.key)))
            is not None
        }
        with suppress(NotImplementedError):
            yield from call(self.storage.sweep_checkpoint_lists, thread_id, rows, set(doomed))
        return len(doomed)

    # -- pruning ---------------------------------------------------------------------------------
    def prune(self, thread_ids: list[str], strategy: str) -> Steps[None]:
        """Prune the threads' checkpoints (``keep_latest``, or ``delete``: all of them); memory
        keeps their conversations."""
        if strategy not in STRATEGIES:
            msg = f"prune(strategy={strategy!r}): use one of {', '.join(STRATEGIES)}"
            raise ConfigurationError(msg)
        if overrides(self.saver, "prune") or overrides(self.saver, "aprune"):
            try:
                yield from call(
                    self._io.saver_call, self.saver.prune, thread_ids, strategy=strategy
                )
                return
            except ValueError:  # e.g. PostgresSaver refusing a thread with a DeltaChannel
                pass
        for thread_id in map(str, thread_ids):
            if strategy != "keep_latest":
                yield from call(self._io.saver_call, self.saver.delete_thread, thread_id)
                self._forget_caches(thread_id)
                continue
            items = yield from call(self._io.list_all, _thread(thread_id))
            kept = keep_for_latest(items) if items else []
            if len(kept) < len(items):
                yield from self._rewrite(thread_id, kept)

    def _rewrite(self, thread_id: str, kept: list[CheckpointTuple]) -> Steps[None]:
        """The thread holds `kept` alone from now on."""
        yield from call(self._io.saver_call, self.saver.delete_thread, thread_id)
        yield from put_back(self._io, kept, thread_id)
        self._forget_caches(thread_id)
