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

Examples:
    >>> RetentionPolicy.parse({"messages": "90d", "checkpoints": {"keep": 20}}).messages
    datetime.timedelta(days=90)
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, StorageError
from ..storage.records import ItemWrite, now_utc
from ..twins import Steps, call, run_async, run_sync

if TYPE_CHECKING:
    from ..memory import Memory

KINDS = ("messages", "threads", "checkpoints", "observations", "items")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_age(value: Any, where: str) -> timedelta:
    """A positive duration: ``"90d"``, ``"12h"``, ``"30m"``, ``"45s"``, ``"2w"``, or a
    ``timedelta``; anything else a `ConfigurationError` naming `where`."""
    if isinstance(value, timedelta):
        age = value
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        age = timedelta(seconds=float(match[1]) * UNITS[match[2]])
    else:
        msg = (
            f"{where}: {value!r} is not a duration; give one like '90d', '12h', '30m', '45s', "
            "'2w' or a datetime.timedelta"
        )
        raise ConfigurationError(msg)
    if age <= timedelta(0):
        raise ConfigurationError(f"{where}: {value!r} must be longer than zero")
    return age


@dataclass(frozen=True)
class RetentionPolicy:
    """How old each kind may grow (None: kept forever)."""

    messages: timedelta | None = None
    threads: timedelta | None = None
    checkpoints: timedelta | None = None
    checkpoints_keep: int | None = None
    observations: timedelta | None = None
    items: timedelta | None = None

    @property
    def configured(self) -> bool:
        return any(getattr(self, name) is not None for name in self.__dataclass_fields__)

    @classmethod
    def parse(cls, value: Any) -> RetentionPolicy:
        """``{"messages": "90d", "checkpoints": {"max_age": "30d", "keep": 20}, ...}``;
        each kind an age or ``{"max_age": age}`` (Mastra's ``maxAge`` too)."""
        where = "options['retention']"
        if value is None:
            return cls()
        if not isinstance(value, dict):
            raise ConfigurationError(f"{where} must be a dict of ages by kind, got {value!r}")
        ages: dict[str, Any] = {}
        for kind, setting in value.items():
            if kind not in KINDS:
                msg = f"{where}: unknown kind {kind!r}; use {', '.join(map(repr, KINDS))}"
                raise ConfigurationError(msg)
            here = f"{where}[{kind!r}]"
            if isinstance(setting, dict):
                allowed = {"max_age", "maxAge"} | ({"keep"} if kind == "checkpoints" else set())
                if unknown := set(setting) - allowed:
                    msg = f"{here}: unknown option(s) {sorted(unknown)}; use {sorted(allowed)}"
                    raise ConfigurationError(msg)
                age = setting.get("max_age", setting.get("maxAge"))
                if "keep" in setting:
                    keep = setting["keep"]
                    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
                        msg = f"{here}['keep']: {keep!r} must be a whole number of at least 1"
                        raise ConfigurationError(msg)
                    ages["checkpoints_keep"] = keep
                if age is None and "keep" not in setting:
                    raise ConfigurationError(f"{here}: give 'max_age'")
                if age is not None:
                    ages[kind] = parse_age(age, f"{here}['max_age']")
            else:
                ages[kind] = parse_age(setting, here)
        return cls(**ages)


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

    def __init__(self, memory: Memory, policy: RetentionPolicy) -> None:
        self.memory = memory
        self.policy = policy

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
            due = self.memory.storage.aged_messages(now_utc() - policy.messages, 1001)
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
        storage = self.memory.storage
        idle = yield call(storage, "idle_threads", before, limit)
        gone = 0
        for thread_id, owner in idle:
            thread = yield call(storage, "get_thread", thread_id)  # a turn may have come since
            if thread is None or thread.updated_at >= before:
                continue
            if (yield call(self.memory, "delete_thread", thread_id, resource_id=owner)):
                gone += 1
        return gone, len(idle) == limit

    def _messages(
        self, before: datetime, limit: int, report: PruneReport
    ) -> Steps[tuple[int, bool]]:
        storage = self.memory.storage
        aged = yield call(storage, "aged_messages", before, limit)
        by_thread: dict[tuple[str, str], list[str]] = defaultdict(list)
        for message_id, thread_id, owner in aged:
            by_thread[(thread_id, owner)].append(message_id)
        gone = 0
        for (thread_id, owner), ids in by_thread.items():
            gone += yield call(self.memory, "delete_messages", ids, resource_id=owner)
            yield call(storage, "drop_observation_sources", ids, thread_id=thread_id,
                       resource_id=owner)  # fmt: skip
            yield call(storage, "blank_checkpoint_values", thread_id, ids)
        return gone, len(aged) == limit

    def _checkpoints(
        self, before: datetime | None, limit: int, report: PruneReport
    ) -> Steps[tuple[int, bool]]:
        """Every thread's checkpoints, through each checkpointer this memory made (or, with
        none, one on memory's own database)."""
        checkpointers = list(self.memory.checkpointers)
        if not checkpointers:  # (kept: a checkpointer on memory's database, made once)
            self._own = getattr(self, "_own", None) or self.memory.checkpointer()
            checkpointers = [self._own]
        keep = self.policy.checkpoints_keep
        gone = 0
        offset = getattr(self, "_thread_offset", 0)
        threads = yield call(self.memory.storage, "list_threads", order_by="created_at",
                             descending=False, limit=limit, offset=offset)  # fmt: skip
        for thread in threads:
            for checkpointer in checkpointers:
                try:
                    gone += yield call(checkpointer, "prune_checkpoints", thread.id,
                                       before=before, keep=keep)  # fmt: skip
                except StorageError as exc:  # one thread's trouble does not stop the rest
                    report.errors.append(f"checkpoints of {thread.id!r}: {exc}")
        more = len(threads) == limit
        self._thread_offset = offset + len(threads) if more else 0
        return gone, more

    def _observations(
        self, before: datetime, limit: int, report: PruneReport
    ) -> Steps[tuple[int, bool]]:
        gone = yield call(self.memory.storage, "delete_aged_observations", before, limit)
        return gone, gone == limit

    def _items(self, before: datetime, limit: int, report: PruneReport) -> Steps[tuple[int, bool]]:
        aged = yield call(self.memory.storage, "aged_items", before, limit)
        if aged:
            yield call(self.memory.storage, "put_items",
                       [ItemWrite(namespace, key, None) for namespace, key in aged])  # fmt: skip
        return len(aged), len(aged) == limit
