"""What a graph state's messages add to a memory thread: the new turns, never a compaction.

Memory keeps the conversation; a graph's state is a view of it (Mastra's model). A state edited
the way LangGraph and LangChain document (``RemoveMessage``, a summary replacing old messages,
trimming) still ends with the conversation's newest messages, and whatever a step adds lands
after them. So the new turns of a state are its *unknown suffix*: walking back from its newest
message, every message the thread does not hold yet, up to the first one it does (the
*anchor*). A message that is new but stands before a held one (a compaction's summary) is
not a turn and is never saved; nothing the state dropped is deleted. The walk reads storage
one chunk of ids at a time from the end, so its cost follows the new messages, not the
state's length.

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

from langchain_core.messages import BaseMessage, message_to_dict

from ..injected import is_injected
from ..messages import carried_id
from ..storage.base import MemoryStorage
from ..storage.records import StoredMessage
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
    stored: list[StoredMessage] = yield call(
        storage, "get_messages_by_id", [*ids, *derived]
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
        withheld = yield call(storage, "withheld_ids", unheld, thread_id=thread_id)
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
    """The unknown suffix of `messages` (see the module docstring). `known`, the ids the
    thread is known to hold (a cache kept by the caller), grows with what the walk finds.
    ``look_up=False`` trusts `known` to be complete (a thread this process mirrors turn by
    turn): no storage read; an id stored elsewhere then fails the save, and the caller walks
    again with look-ups."""
    known = set() if known is None else known
    found = StateSuffix()
    newest_first: list[BaseMessage] = []
    elsewhere: set[str] = set()
    returning: set[str] = set()
    withheld: set[str] = set()
    end = len(messages)
    while end > 0:
        chunk = messages[max(0, end - CHUNK) : end]
        end -= CHUNK
        unknown = [m.id for m in chunk if m.id and m.id not in known and not is_injected(m)]
        if unknown and look_up:
            looked = yield from _look_up(storage, unknown, thread_id)
            known |= looked.held
            elsewhere |= looked.elsewhere
            returning |= looked.returning
            withheld |= looked.withheld
        for message in reversed(chunk):
            if is_injected(message) or is_summary(message) or message.id in withheld:
                continue  # not a turn (a read-only turn's is never one)
            if message.id and (message.id in known or message.id in returning):
                found.anchor = message.id  # the thread holds it (or a fork brings it home)
                end = 0
                break
            newest_first.append(message)
    for message in reversed(newest_first):
        if message.id in elsewhere:
            found.new.append(message.model_copy(update={"id": carried_id(thread_id, message.id)}))
        else:
            found.new.append(message)
        found.state_ids.append(message.id or "")
    return found


def edited(
    storage: MemoryStorage, messages: Sequence[BaseMessage], *, thread_id: str
) -> Steps[list[BaseMessage]]:
    """Those of `messages` that the thread holds under the same id (or as a carried copy) with
    other content: each as it should be stored (under its stored id), to update in place."""
    by_id = {m.id: m for m in messages if m.id and not is_injected(m)}
    if not by_id:
        return []
    derived = {carried_id(thread_id, i): i for i in by_id}
    stored: list[StoredMessage] = yield call(storage, "get_messages_by_id", [*by_id, *derived])
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
