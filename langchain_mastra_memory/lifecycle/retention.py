"""Retention, as Mastra's ``storage.retention`` + ``prune()``: nothing grows without bound
unless the user wants it to.

``Memory(options={"retention": {...}})`` sets an age per kind; `Pruner` (``memory.prune()``)
applies it. Nothing is pruned unless configured.

- ``messages``: messages created longer ago leave their thread, keyword search, every vector
  engine, the observation log's provenance and the checkpoint lists that held them;
- ``threads``: a thread last active longer ago goes whole (`Memory.delete_thread`: messages,
  vectors, checkpoints, thread working memory, observations, branch threads);
- ``checkpoints``: ``{"max_age": ..., "keep": N}``: a checkpoint older than the age and not
  among its thread's newest N goes (never a thread's latest);
- ``observations``: observation groups written longer ago;
- ``items``: LangGraph store items with no TTL of their own, last written longer ago.

A prune works in batches, each its own short transaction, oldest first; it stops when its
time is up (``max_seconds``) and says so (``done`` False): calling again resumes, since
what is left is still what is old. Two processes pruning at once overlap harmlessly (every
delete is idempotent), and turns go on meanwhile.

Below `Memory`: it reaches the checkpointers through the `PrunesCheckpoints` protocol and
deletes threads through `Erasure`, messages through `MemoryWrites` (vectors with them).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from ..config.options import UNITS, RetentionPolicy
from ..errors import ConfigurationError, StorageError
from ..storage.base import MemoryStorage
from ..storage.records import ItemWrite, now_utc
from ..twins import Steps, call, run_async, run_sync

if TYPE_CHECKING:
    from ..turn.writes import MemoryWrites
    from .erasure import Erasure


class PrunesCheckpoints(Protocol):
    """What a prune asks of a checkpointer (`MemoryCheckpointer.prune_checkpoints`)."""

    def prune_checkpoints(
        self, thread_id: str, *, before: datetime | None = None, keep: int | None = None
    ) -> int: ...

    async def aprune_checkpoints(
        self, thread_id: str, *, before: datetime | None = None, keep: int | None = None
    ) -> int: ...


@dataclass
class PruneReport:
    """What one prune removed, by kind, and whether it finished (False: its time was up;
    call again to go on)."""

    messages: int = 0
    threads: int = 0
    checkpoints: int = 0
    observations: int = 0
    items: int = 0
    done: bool = True
    errors: list[str] = field(default_factory=list)

    def total(self) -> int:
        return self.messages + self.threads + self.checkpoints + self.observations + self.items


def _age(age: timedelta) -> str:
    seconds = age.total_seconds()
    for unit in ("w", "d", "h", "m"):
        if seconds >= UNITS[unit] and seconds % UNITS[unit] == 0:
            return f"{int(seconds // UNITS[unit])}{unit}"
    return f"{seconds:g}s"


class Pruner:
    """`Memory.prune`: the policy applied in batches (see the module)."""

    def __init__(
        self,
        storage: MemoryStorage,
        writes: MemoryWrites,
        erasure: Erasure,
        checkpointers: Iterable[PrunesCheckpoints],
        make_checkpointer: Callable[[], PrunesCheckpoints],
        policy: RetentionPolicy,
    ) -> None:
        self.storage, self.writes, self.erasure = storage, writes, erasure
        self.checkpointers = checkpointers  # those over this memory (read at each prune)
        self.make_checkpointer = make_checkpointer  # else one on its database, made once
        self._own: PrunesCheckpoints | None = None
        self.policy = policy
        self._thread_offset = 0  # where the checkpoints' walk over threads goes on

    def summary(self) -> str:
        """One line for the explorer: the policy, and how many messages wait for a prune.

        Examples:
            >>> from langchain_mastra_memory import Memory, SQLiteStorage
            >>> Memory(storage=SQLiteStorage(":memory:")).pruner.summary()
            'retention: none (nothing is pruned)'
        """
        policy = self.policy
        if not policy.configured:
            return "retention: none (nothing is pruned)"
        parts = [
            f"{kind} {_age(age)}"
            for kind in ("messages", "threads", "checkpoints", "observations", "items")
            if (age := getattr(policy, kind)) is not None
        ]
        if policy.checkpoints_keep is not None:
            parts.append(f"checkpoints: newest {policy.checkpoints_keep} kept")
        line = "retention: " + ", ".join(parts)
        if policy.messages is not None:
            due = self.storage.aged_messages(now_utc() - policy.messages, 1001)
            if due:
                count = "1,000+" if len(due) > 1000 else str(len(due))
                noun = "message" if count == "1" else "messages"
                line += f"; {count} {noun} past their age wait for prune()"
        return line

    def prune(self, *, max_seconds: float | None = 30.0, batch_size: int = 500) -> PruneReport:
        return run_sync(self._prune(max_seconds, batch_size))

    async def aprune(
        self, *, max_seconds: float | None = 30.0, batch_size: int = 500
    ) -> PruneReport:
        result: PruneReport = await run_async(self._prune(max_seconds, batch_size))
        return result

    def _prune(self, max_seconds: float | None, batch_size: int) -> Steps[PruneReport]:
        if batch_size < 1:
            raise ConfigurationError(f"prune(batch_size={batch_size!r}) must be at least 1")
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        report = PruneReport()
        now = now_utc()
        policy = self.policy
        steps = (
            ("threads", policy.threads, self._threads),
            ("messages", policy.messages, self._messages),
            ("checkpoints", policy.checkpoints or policy.checkpoints_keep, self._checkpoints),
            ("observations", policy.observations, self._observations),
            ("items", policy.items, self._items),
        )
        for kind, setting, step in steps:
            if setting is None:
                continue
            before: Any = now - setting if isinstance(setting, timedelta) else None
            while True:  # at least one batch a kind per call, so every call makes progress
                removed, more = yield from step(before, batch_size, report)
                setattr(report, kind, getattr(report, kind) + removed)
                if not more:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    report.done = False
                    return report
        return report

    # -- each kind: one batch; (how many went, whether more may be left) ---------------------------
    def _threads(
        self, before: datetime, limit: int, report: PruneReport
    ) -> Steps[tuple[int, bool]]:
        idle = yield from call(self.storage.idle_threads, before, limit)
        gone = 0
        for thread_id, owner in idle:
            thread = yield from call(self.storage.get_thread, thread_id)  # a turn may have come
            if thread is None or thread.updated_at >= before:  # since
                continue
            if (yield from call(self.erasure.delete_thread, thread_id, owner)):
                gone += 1
        return gone, len(idle) == limit

    def _messages(
        self, before: datetime, limit: int, report: PruneReport
    ) -> Steps[tuple[int, bool]]:
        storage = self.storage
        aged = yield from call(storage.aged_messages, before, limit)
        by_thread: dict[tuple[str, str], list[str]] = defaultdict(list)
        for message_id, thread_id, owner in aged:
            by_thread[(thread_id, owner)].append(message_id)
        gone = 0
        for (thread_id, owner), ids in by_thread.items():
            gone += yield from call(self.writes.delete, ids, resource_id=owner)
            yield from call(
                storage.drop_observation_sources, ids, thread_id=thread_id, resource_id=owner
            )
            yield from call(storage.blank_checkpoint_values, thread_id, ids)
        return gone, len(aged) == limit

    def _checkpoints(
        self, before: datetime | None, limit: int, report: PruneReport
    ) -> Steps[tuple[int, bool]]:
        """Every thread's checkpoints, through each checkpointer this memory made (or, with
        none, one on memory's own database)."""
        checkpointers = list(self.checkpointers)
        if not checkpointers:
            self._own = self._own or self.make_checkpointer()
            checkpointers = [self._own]
        keep = self.policy.checkpoints_keep
        gone = 0
        offset = self._thread_offset
        threads = yield from call(
            self.storage.list_threads,
            order_by="created_at",
            descending=False,
            limit=limit,
            offset=offset,
        )
        for thread in threads:
            for checkpointer in checkpointers:
                try:
                    gone += yield from call(
                        checkpointer.prune_checkpoints, thread.id, before=before, keep=keep
                    )
                except StorageError as exc:  # one thread's trouble does not stop the rest
                    report.errors.append(f"checkpoints of {thread.id!r}: {exc}")
        more = len(threads) == limit
        self._thread_offset = offset + len(threads) if more else 0
        return gone, more

    def _observations(
        self, before: datetime, limit: int, report: PruneReport
    ) -> Steps[tuple[int, bool]]:
        gone = yield from call(self.storage.delete_aged_observations, before, limit)
        return gone, gone == limit

    def _items(self, before: datetime, limit: int, report: PruneReport) -> Steps[tuple[int, bool]]:
        aged = yield from call(self.storage.aged_items, before, limit)
        if aged:
            yield from call(
                self.storage.put_items, [ItemWrite(namespace, key, None) for namespace, key in aged]
            )
        return len(aged), len(aged) == limit
