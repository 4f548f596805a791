"""What a graph state's messages add to a memory thread: the new turns, never a compaction.

Memory keeps the conversation; a graph's state is a view of it (Mastra's model). A state edited
the way LangGraph and LangChain document (``RemoveMessage``, a summary replacing old messages,
trimming) still ends with the conversation's newest messages, and whatever a step adds lands
after them. So the new turns of a state are its *unknown suffix*: walking back from its newest
message, every message the thread does not hold yet, up to the first one it does (the
*anchor*). A message that is new but stands before every held one (a compaction's summary)
is not a turn and is never saved; nothing the state dropped is deleted. New messages between
two held ones, right before the anchor, are an *insertion* (deepagents' ToolMessage answering
a dangling tool call, put after the call): they are turns, saved in their place (a time
between their neighbours'). The walk reads storage one chunk of ids at a time from the end,
so its cost follows the new messages, not the state's length.

A read-only turn's messages stay in the state but are never turns: their ids were withheld
(`storage.withheld`) when the turn ran, and the walk passes over them.

A message whose id is already stored in *another* thread (a conversation carried into a new
thread, a model that reuses ids) is saved in this thread too, once, under an id derived from
the thread and its own (`carried_id`), and is held by this thread from then on.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> from langchain_mastra_memory.twins import run_sync
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> old = [HumanMessage("q0", id="h0"), AIMessage("a0", id="a0")]
    >>> _ = memory.save_turn(old, thread_id="t", resource_id="r")
    >>> state = [HumanMessage("Summary of q0", id="s"), old[1], HumanMessage("q1", id="h1")]
    >>> found = run_sync(state_suffix(memory.storage, state, thread_id="t", resource_id="r"))
    >>> [m.content for m in found.new], found.anchor
    (['q1'], 'a0')
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from langchain_core.messages import BaseMessage, message_to_dict

from ..messages import carried_id, is_injected
from ..storage.base import MemoryStorage
from ..storage.records import ONE_MICROSECOND, StoredMessage
from ..twins import Steps, call
from .branches import held_by_branches

CHUNK = 16  # state messages looked up at a time, from the newest


def is_summary(message: BaseMessage) -> bool:
    """A summary LangChain's `SummarizationMiddleware` put in place of older messages: never a
    turn, wherever it stands (even with nothing kept after it)."""
    return message.additional_kwargs.get("lc_source") == "summarization"


_UNNAMED = uuid.UUID("5f0c8a61-2d3e-4b7a-8e19-c4a6d2f7b093")


def with_stable_ids(messages: Sequence[BaseMessage], thread_id: str) -> list[BaseMessage]:
    """The state with an id for each message that has none, the same at every read.

    A ``DeltaChannel`` rebuilds its value from stored writes at every read, and a write LangGraph
    did not give an id (a ``("user", text)`` tuple under deepagents' reducer) comes back without
    one each time; the suffix walk matches messages by id, so such a message would look new at
    every step. Its id is derived from the thread, its place among the state's unnamed messages
    and its content: every shape reading the same state (the checkpointer, the middleware) finds
    the same id, and a later state that keeps it finds it held.
    """
    if all(m.id for m in messages):
        return list(messages)
    named: list[BaseMessage] = []
    unnamed = 0
    for message in messages:
        if not message.id:
            key = f"{thread_id}\x1f{unnamed}\x1f{message.type}\x1f{message.content!r}"
            message = message.model_copy(update={"id": str(uuid.uuid5(_UNNAMED, key))})
            unnamed += 1
        named.append(message)
    return named


@dataclass
class StateSuffix:
    """The state's new turns (to save, carried ones already under their derived id), the
    state ids they stand for, and the newest state message the thread holds (or one of its
    branches holds: the graph went back to that branch)."""

    new: list[BaseMessage] = field(default_factory=list)
    state_ids: list[str] = field(default_factory=list)
    anchor: str | None = None
    created_at: list[datetime | None] = field(default_factory=list)  # None: appended now

    @property
    def times(self) -> list[datetime | None] | None:
        """`created_at` for a save when an insertion needs its place (None: all appended)."""
        return self.created_at if any(self.created_at) else None

    @property
    def ids(self) -> list[str]:
        """The state ids of the new turns (those that have one)."""
        return [i for i in self.state_ids if i]


@dataclass
class _Found:
    """What a look-up found of some state ids (see `_look_up`)."""

    held: set[str]  # this thread holds them, directly or as a carried copy
    elsewhere: set[str]  # stored in another thread
    returning: set[str]  # held by one of this thread's branches
    withheld: set[str]  # a read-only turn's: never stored (`storage.withheld`)


def _look_up(storage: MemoryStorage, ids: list[str], thread_id: str) -> Steps[_Found]:
    """What storage says of `ids` in `thread_id`."""
    derived = {carried_id(thread_id, i): i for i in ids}
    stored: list[StoredMessage] = yield from call(
        storage.get_messages_by_id, [*ids, *derived]
    )  # every owner's: only whether an id is taken is used, nothing of another is returned
    held: set[str] = set()
    elsewhere: dict[str, str] = {}  # id -> the other thread holding it
    for s in stored:
        stored_id = s.message.id or ""
        own = derived.get(stored_id, stored_id)
        if s.thread_id == thread_id:
            held.add(own)
        elif stored_id == own:
            elsewhere[own] = s.thread_id
    # held by a branch of this thread: a fork went back to that branch
    returning = set((yield from held_by_branches(storage, thread_id, elsewhere)))
    unheld = [i for i in ids if i not in held]
    withheld: set[str] = set()
    if unheld:
        withheld = yield from call(storage.withheld_ids, unheld, thread_id=thread_id)
    return _Found(held, set(elsewhere) - held - returning, returning, withheld)


def state_suffix(
    storage: MemoryStorage,
    messages: Sequence[BaseMessage],
    *,
    thread_id: str,
    resource_id: str,
    known: set[str] | None = None,
    look_up: bool = True,
) -> Steps[StateSuffix]:
    """The unknown suffix of `messages` and what was inserted right before it (see the module
    docstring). `known`, the ids the thread is known to hold (a cache kept by the caller),
    grows with what the walk finds. ``look_up=False`` trusts `known` to be complete (a thread
    this process mirrors turn by turn): no storage read for the suffix; an id stored elsewhere
    then fails the save, and the caller walks again with look-ups."""
    walk = _Walk(storage, messages, thread_id, set() if known is None else known)
    newest_first: list[BaseMessage] = []
    anchor_at: int | None = None
    end = len(messages)
    while end > 0 and anchor_at is None:
        if look_up:
            yield from walk.look_up_chunk(end - 1)
        for i in range(end - 1, max(0, end - CHUNK) - 1, -1):
            message = messages[i]
            if walk.passed_over(message):
                continue
            if walk.holds(message):
                anchor_at = i
                break
            newest_first.append(message)
        end -= CHUNK
    found = StateSuffix(anchor=None if anchor_at is None else messages[anchor_at].id)
    if anchor_at is not None:
        inserted, after = yield from walk.inserted_before(anchor_at)
        if inserted:
            times = yield from _times_between(storage, thread_id, after, found.anchor, inserted)
            for message, moment in zip(inserted, times, strict=True):
                walk.add(found, message, moment)
    for message in reversed(newest_first):
        walk.add(found, message, None)
    return found


class _Walk:
    """What a walk over a state's messages has learned of their ids (`_look_up`)."""

    def __init__(
        self,
        storage: MemoryStorage,
        messages: Sequence[BaseMessage],
        thread_id: str,
        known: set[str],
    ) -> None:
        self.storage, self.messages, self.thread_id = storage, messages, thread_id
        self.known = known
        self.elsewhere: set[str] = set()
        self.returning: set[str] = set()
        self.withheld: set[str] = set()
        self.looked_up: set[str] = set()

    def look_up_chunk(self, newest: int) -> Steps[None]:
        """Look up the ids of the chunk ending at `newest` not known nor looked up yet."""
        chunk = self.messages[max(0, newest - CHUNK + 1) : newest + 1]
        unknown = [
            m.id
            for m in chunk
            if m.id and m.id not in self.known and m.id not in self.looked_up and not is_injected(m)
        ]
        if not unknown:
            return
        looked: _Found = yield from _look_up(self.storage, unknown, self.thread_id)
        self.looked_up.update(unknown)
        self.known |= looked.held
        self.elsewhere |= looked.elsewhere
        self.returning |= looked.returning
        self.withheld |= looked.withheld

    def passed_over(self, message: BaseMessage) -> bool:
        """Never a turn: memory's own, a summary, a read-only turn's."""
        return is_injected(message) or is_summary(message) or message.id in self.withheld

    def holds(self, message: BaseMessage) -> bool:
        """The thread holds it (or one of its branches does: a fork brings it home)."""
        return bool(message.id) and (message.id in self.known or message.id in self.returning)

    def inserted_before(self, anchor_at: int) -> Steps[tuple[list[BaseMessage], str | None]]:
        """The new messages standing right before the anchor, in order, when a held message
        stands before them (an insertion between stored messages: deepagents' ToolMessage for
        a dangling tool call, put after the call), and that message's id. New messages with
        nothing held before them are a compaction's and are not returned. Reads storage only
        when the message before the anchor is not known to be held."""
        run: list[BaseMessage] = []
        for i in range(anchor_at - 1, -1, -1):
            message = self.messages[i]
            if message.id and message.id not in self.known and message.id not in self.looked_up:
                yield from self.look_up_chunk(i)
            if self.holds(message):
                return run[::-1], message.id
            if self.passed_over(message):
                if is_summary(message):
                    break  # a compaction's: what stands before it is not the conversation's
                continue
            run.append(message)
        return [], None

    def add(self, found: StateSuffix, message: BaseMessage, moment: datetime | None) -> None:
        """Add a new turn to `found` (under its carried id when another thread holds its own),
        with its time (None: now, after the thread's newest)."""
        state_id = message.id or ""
        if message.id in self.elsewhere:
            message = message.model_copy(update={"id": carried_id(self.thread_id, message.id)})
        found.new.append(message)
        found.state_ids.append(state_id)
        found.created_at.append(moment)


def _times_between(
    storage: MemoryStorage,
    thread_id: str,
    after: str | None,
    before: str | None,
    inserted: Sequence[BaseMessage],
) -> Steps[list[datetime | None]]:
    """Times for `inserted` that order them between the held messages `after` and `before`:
    evenly spaced in the gap, or all at `after`'s time when the gap is too small (stored order
    then follows the insertion's sequence number, after `after`'s)."""
    ids = [i for i in (after, before) if i]
    derived = {carried_id(thread_id, i): i for i in ids}
    stored: list[StoredMessage] = yield from call(storage.get_messages_by_id, [*ids, *derived])
    times = {
        derived.get(s.message.id or "", s.message.id): s.created_at
        for s in stored
        if s.thread_id == thread_id
    }
    start, stop = times.get(after or ""), times.get(before or "")
    count = len(inserted)
    if start is None:
        return [None] * count  # appended: nothing to go after
    if stop is None or stop - start <= ONE_MICROSECOND * count:
        return [start] * count
    step = (stop - start) / (count + 1)
    return [start + step * (k + 1) for k in range(count)]


def edited(
    storage: MemoryStorage, messages: Sequence[BaseMessage], *, thread_id: str
) -> Steps[list[BaseMessage]]:
    """Those of `messages` that the thread holds under the same id (or as a carried copy) with
    other content: each as it should be stored (under its stored id), to update in place."""
    by_id = {m.id: m for m in messages if m.id and not is_injected(m)}
    if not by_id:
        return []
    derived = {carried_id(thread_id, i): i for i in by_id}
    stored: list[StoredMessage] = yield from call(storage.get_messages_by_id, [*by_id, *derived])
    changes = []
    for s in stored:
        stored_id = s.message.id or ""
        state = by_id.get(derived.get(stored_id, stored_id))
        if s.thread_id != thread_id or state is None:
            continue
        as_stored = state if state.id == stored_id else state.model_copy(update={"id": stored_id})
        if message_to_dict(as_stored) != message_to_dict(s.message):
            changes.append(as_stored)
    return changes
