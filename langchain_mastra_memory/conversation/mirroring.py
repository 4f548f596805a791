"""Which messages a fork abandons and which it takes back: the two lineages since they split.

A thread's conversation is every message that stood in a state along its head's parent chain
(compaction and ``RemoveMessage`` take messages out of the state, not out of the
conversation). When a put continues from an earlier checkpoint than the head, the two chains
(the old head's, the fork's parent's) are walked back together until they meet: messages that
appeared on the old side only are abandoned (they move to a branch thread), messages that
appeared on the fork's side only belong to the thread again (an earlier fork had moved them to
a branch). Checkpoints before the meeting point are common and not read, so a fork costs the
checkpoints since the split, not the thread's whole history.

A message's content is its latest along the fork's side (an edit by id on either side is the
branch's own): the walk keeps, for each message it saw on the fork's side since the split and
in the state where the sides meet, its newest version, so a fork brings back the content its
lineage had even for a message no longer in its state (compacted out after the edit).

`ThreadMirror`: how a checkpointer keeps memory's threads in step with a graph's checkpoints.

Memory keeps the conversation; the graph's state and its checkpoints are views of it. For
each root checkpoint whose ``messages`` changed:

- the state's new turns are its unknown suffix (`suffix`): appended once, in order;
  a compaction's summary (new, but before messages the thread holds) is never a turn;
- nothing the state dropped is deleted (``RemoveMessage``, ``REMOVE_ALL_MESSAGES``, trimming),
  unless the checkpointer was made with ``mirror_deletes=True``: then what left the state since
  the parent checkpoint leaves memory too (a read of the parent's ids per checkpoint);
- a message the state replaced by id (``update_state``, a node returning the same id) is
  updated in place (and re-embedded), not added;
- a checkpoint that continues from an earlier one than the thread's latest (a fork, a
  replay, ``update_state`` on an old checkpoint) moves the thread's messages after the fork
  point to a branch thread (`branches`), so the thread's history is the graph's branch.

The work is planned before the wrapped saver writes (reads only; bad messages are refused
there, before anything is written) and applied after it; a storage failure while applying
warns and is retried at the next checkpoint, it never aborts the graph run. Each step reads
what is new, not the whole state: the walk stops at the first held message.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.messages import BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig

from ..errors import MastraMemoryError, MessageConflictError
from ..messages import carried_id, message_to_json
from ..storage.records import checked_messages, saved_json, stored_ids
from ..twins import Steps, call
from .branches import branch_off, drop_emptied, held_by_branches
from .suffix import StateSuffix, edited, state_suffix

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage
    from ..storage.records import Thread
    from ..turn.writes import MemoryWrites


@dataclass
class ForkDiff:
    """Message ids that appeared since the split: on the abandoned side only, and on the
    fork's side only."""

    abandoned: set[str] = field(default_factory=set)
    returning: set[str] = field(default_factory=set)
    versions: dict[str, Any] = field(default_factory=dict)  # id -> its newest on the fork's side


def _config(thread_id: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        }
    }


def fork_diff(
    reads: Any,
    thread_id: str,
    *,
    head: str,
    parent: str | None,
    messages_of: Callable[[Any], Steps[Sequence[Any] | None]],
) -> Steps[ForkDiff]:
    """Walk the head's and the fork parent's chains back, one checkpoint each in turn, until
    one reaches a checkpoint the other has passed (their last common ancestor); `reads` has
    ``get_tuple`` and ``aget_tuple`` (the checkpointer's `SaverIO`), `messages_of` reads
    a found checkpoint's messages (a list channel's, or a delta channel's rebuilt)."""
    order: dict[str, list[str]] = {"old": [], "new": []}
    ids: dict[str, dict[str, set[str]]] = {"old": {}, "new": {}}
    held: dict[str, Sequence[Any]] = {}  # checkpoint -> its messages
    cursor: dict[str, str | None] = {"old": head, "new": parent or None}
    meet: str | None = None
    while meet is None and (cursor["old"] or cursor["new"]):
        for side, other in (("old", "new"), ("new", "old")):
            checkpoint = cursor[side]
            if checkpoint is None:
                continue
            if checkpoint in ids[other]:
                meet = checkpoint
                break
            found = yield from call(reads.get_tuple, _config(thread_id, checkpoint))
            if found is None:
                cursor[side] = None
                continue
            messages = (yield from messages_of(found)) or []
            held[checkpoint] = messages
            ids[side][checkpoint] = {m.id for m in messages if getattr(m, "id", None)}
            order[side].append(checkpoint)
            parent_config = found.parent_config or {}
            cursor[side] = (parent_config.get("configurable") or {}).get("checkpoint_id")
    since = {side: set() for side in ("old", "new")}  # type: dict[str, set[str]]
    for side in ("old", "new"):
        for checkpoint in order[side]:
            if checkpoint == meet:
                break
            since[side] |= ids[side][checkpoint]
    common = ids["old"].get(meet or "") or ids["new"].get(meet or "") or set()
    versions: dict[str, Any] = {}  # walked newest first: the first version seen is the newest
    for checkpoint in [*order["new"][: _until(order["new"], meet)], *([meet] if meet else [])]:
        for message in held.get(checkpoint) or ():
            if getattr(message, "id", None):
                versions.setdefault(message.id, message)
    return ForkDiff(
        abandoned=since["old"] - since["new"] - common,
        returning=since["new"] - since["old"] - common,
        versions=versions,
    )


def _until(order: list[str], meet: str | None) -> int:
    """How many of a side's walked checkpoints came before the meeting point."""
    return order.index(meet) if meet in order else len(order)


class Conversations(Protocol):
    """What the mirror reads and writes through (`Memory`'s parts): its storage, and the
    writes kept in step with recall (`MemoryWrites`: ``save``, ``update``, ``delete``,
    ``move``), never the facade's own methods: a write goes only downward."""

    storage: MemoryStorage
    writes: MemoryWrites


logger = logging.getLogger(__name__)

CACHED_THREADS = 10_000


@dataclass
class MirrorPlan:
    """What one checkpoint changes in a thread, decided before the saver writes."""

    thread_id: str
    resource_id: str
    suffix: StateSuffix
    fork_from: str | None = None  # the checkpoint a fork continues from ("" for the root)
    check_edits: list[BaseMessage] = field(default_factory=list)  # held messages to compare
    removed: list[str] = field(default_factory=list)  # mirror_deletes: ids the state dropped
    fork_diff: ForkDiff | None = None  # a fork: what each side of the split holds alone
    messages: Sequence[BaseMessage] = ()  # the state (to walk again with look-ups)

    @property
    def appends_only(self) -> bool:
        """Whether applying it only saves new turns (no fork, edit or deletion): the common
        checkpoint, which can be applied while the saver writes and undone if that fails."""
        return self.fork_from is None and not self.check_edits and not self.removed


RECENT = 64  # message ids whose stored JSON a thread's state keeps (see `ThreadState.recent`)


@dataclass
class ThreadState:
    """What this process knows of a thread it mirrors (kept for `CACHED_THREADS` threads)."""

    known: set[str] = field(default_factory=set)  # message ids it holds (as found)
    warm: bool = False  # its latest state's newest messages are all in `known`
    complete: bool = False  # created here: every message it holds is in `known`
    head: str | None = None  # its latest root checkpoint
    life: tuple[str, Any] | None = None  # (owner, created_at) of the thread all this is about
    first: str | None = None  # the first message id of that checkpoint's state
    last_ids: tuple[str, list[str]] | None = None  # mirror_deletes: (checkpoint, its ids)
    saved: dict[str, str] = field(default_factory=dict)  # the last save's ids: stored JSON
    # the newest `RECENT` ids this process stored, with their JSON: a step's writes may reach the
    # checkpointer after the next checkpoint's save (LangGraph's durability="async")
    recent: OrderedDict[str, str] = field(default_factory=OrderedDict)

    def reset(self) -> None:
        """Trust nothing cached about the messages (the next walk reads storage)."""
        self.known.clear()
        self.saved.clear()
        self.recent.clear()
        self.warm = self.complete = False

    def stored(self, stored_json: dict[str, str], *, save: bool) -> None:
        """Note what was just stored under these ids (`save`: a new save, else an update)."""
        if save:
            self.saved = dict(stored_json)
        else:
            self.saved.update(stored_json)
        for message_id, text in stored_json.items():
            self.recent.pop(message_id, None)
            self.recent[message_id] = text
        while len(self.recent) > RECENT:
            self.recent.popitem(last=False)


class ThreadMirror:
    """A checkpointer's mirroring: a `ThreadState` per thread (a bounded cache) and the
    algorithms, written once as steps (`twins`); the checkpointer runs them sync or async."""

    def __init__(self, memory: Conversations, *, messages_key: str, mirror_deletes: bool) -> None:
        self.memory = memory
        self.messages_key = messages_key
        self.mirror_deletes = mirror_deletes
        self._threads: OrderedDict[str, ThreadState] = OrderedDict()
        # turns an `undo` could not take back (memory was unreachable too): thread id ->
        # (resource id, message ids), taken back at the thread's next applied checkpoint
        self._undone: OrderedDict[str, tuple[str, set[str]]] = OrderedDict()

    def thread(self, thread_id: str) -> ThreadState:
        """The thread's state (a fresh one, knowing nothing, on first use or after eviction)."""
        state = self._threads.get(thread_id)
        if state is None:
            state = self._threads[thread_id] = ThreadState()
            if len(self._threads) > CACHED_THREADS:
                self._threads.popitem(last=False)
        self._threads.move_to_end(thread_id)
        return state

    def known(self, thread_id: str) -> set[str]:
        """The ids `thread_id` is known to hold (filled as walks and saves find them)."""
        return self.thread(thread_id).known

    def forget(self, thread_id: str) -> None:
        self._threads.pop(thread_id, None)
        self._undone.pop(thread_id, None)

    def observe(self, thread_id: str, thread: Thread | None) -> bool:
        """Storage shows `thread` under `thread_id` now (None: no thread): what is known of
        another life of the id (before a transfer, or before another process deleted it and
        someone made it again) is dropped; True when something was."""
        life = None if thread is None else (thread.resource_id, thread.created_at)
        state = self._threads.get(thread_id)
        dropped = state is not None and state.life != life
        if dropped:
            del self._threads[thread_id]
        if life is not None:
            self.thread(thread_id).life = life
        return dropped

    def _replaced(
        self, state: ThreadState, messages: Sequence[BaseMessage], fork_from: str | None, step: int
    ) -> bool:
        """Whether a node (not the input: step 0 applies it) rewrote the state from its first
        message while continuing the thread's latest checkpoint."""
        return (
            fork_from is None
            and step >= 1
            and state.first is not None
            and bool(messages)
            and messages[0].id != state.first
        )

    def after_put(
        self, thread_id: str, checkpoint_id: str, messages: Sequence[BaseMessage]
    ) -> None:
        """The thread's latest root checkpoint is now `checkpoint_id` (with mirror_deletes,
        its message ids are kept for the next put's comparison)."""
        state = self.thread(thread_id)
        state.head = checkpoint_id
        if messages and messages[0].id:
            state.first = messages[0].id
        if self.mirror_deletes:
            state.last_ids = (checkpoint_id, [m.id for m in messages if m.id])

    def state_ids(self, config: Any) -> list[str] | None:
        """The message ids of the checkpoint `config` names, when this process put it last."""
        configurable = config.get("configurable") or {}
        state = self._threads.get(str(configurable.get("thread_id")))
        last = state.last_ids if state is not None else None
        parent = configurable.get("checkpoint_id")
        return last[1] if last is not None and last[0] == parent else None

    # -- a checkpoint ----------------------------------------------------------------------------
    def plan(
        self,
        thread_id: str,
        resource_id: str,
        messages: Sequence[BaseMessage],
        *,
        fork_from: str | None,
        source: str | None,
        step: int = 0,
        parent_ids: Collection[str] | None = None,
        fork_diff: ForkDiff | None = None,
    ) -> Steps[MirrorPlan]:
        """Read what the checkpoint adds, edits and (with mirror_deletes) drops."""
        state = self.thread(thread_id)
        known = state.known
        trusted = state.warm and fork_from is None
        suffix = yield from state_suffix(
            self.memory.storage,
            messages,
            thread_id=thread_id,
            resource_id=resource_id,
            known=known,
            look_up=not trusted,
        )
        if suffix.anchor is None and self._replaced(state, messages, fork_from, step):
            # a node replaced the whole state (a compaction keeping nothing): what it put
            # there stands for older turns, it is not one; the walks stop at it from now on
            known.update(suffix.state_ids)
            suffix = StateSuffix()
        suffix.new = checked_messages(suffix.new)  # an unstorable one is refused before any write
        plan = MirrorPlan(thread_id, resource_id, suffix, fork_from, messages=messages)
        if fork_from is not None or source == "update":  # a held message may differ by id:
            plan.check_edits = [m for m in messages if m.id]  # the branch's version, an edit
            plan.fork_diff = fork_diff
            if fork_diff is not None:  # and what its lineage holds out of the state (compacted)
                present = {m.id for m in plan.check_edits}
                plan.check_edits += [m for i, m in fork_diff.versions.items() if i not in present]
        else:  # a node's rewrite by id whose writes reached us before the checkpoint it edits
            plan.check_edits = _rewrites_of_saved(state, messages, len(suffix.new))
        if self.mirror_deletes and parent_ids is not None and fork_from is None:
            kept = {m.id for m in messages}
            plan.removed = [i for i in parent_ids if i not in kept]
        return plan

    def apply(self, plan: MirrorPlan) -> Steps[None]:
        """Branch off (a fork), update edits, delete (opted in), then save the new turns."""
        memory, ref = self.memory, {"resource_id": plan.resource_id}
        state = self.thread(plan.thread_id)
        known = state.known
        yield from self._finish_undo(plan)
        if plan.fork_from is not None:
            yield from self._follow_fork(plan)
            if self.mirror_deletes:
                yield from self._drop_outside(plan)
            state.reset()  # messages moved both ways: the next walk reads storage
        if plan.check_edits:
            changes = yield from edited(memory.storage, plan.check_edits, thread_id=plan.thread_id)
            if changes:
                yield from call(memory.writes.update, changes, **ref)
                state.stored(saved_json(changes), save=False)
        if plan.removed:  # mirror_deletes: what left the state leaves memory (this thread's)
            held = yield from call(memory.storage.get_messages_by_id, plan.removed, **ref)
            mine = stored_ids(s for s in held if s.thread_id == plan.thread_id)
            if mine:
                yield from call(memory.writes.delete, mine, **ref)
            known.difference_update(plan.removed)
        suffix = plan.suffix
        if suffix.new:
            try:
                saved = yield from _save(memory, suffix, plan)
            except MessageConflictError:  # an id stored elsewhere: walk again, reading storage
                state.warm = False
                suffix = yield from state_suffix(
                    memory.storage,
                    plan.messages,
                    thread_id=plan.thread_id,
                    resource_id=plan.resource_id,
                    known=known,
                )
                saved = yield from _save(memory, suffix, plan)
            known.update(suffix.state_ids)
            known.update(m.id for m in saved if m.id)
            state.stored(saved_json(suffix.new), save=True)
        if plan.fork_from is None:  # the state's newest messages are all in `known` now
            state.warm = True

    def undo(self, plan: MirrorPlan) -> Steps[None]:
        """Take back an applied `appends_only` plan (the saver then failed to write its
        checkpoint): the turns it saved leave memory, so a retried run does not hold them
        twice; the next walk reads storage."""
        new = [m.id for m in plan.suffix.new if m.id]
        self.thread(plan.thread_id).reset()
        if new:  # noted first: if memory fails too, the thread's next checkpoint takes them back
            _, pending = self._undone.setdefault(plan.thread_id, (plan.resource_id, set()))
            pending.update(new)
            while len(self._undone) > CACHED_THREADS:
                self._undone.popitem(last=False)
            yield from call(self.memory.writes.delete, new, resource_id=plan.resource_id)
            self._undone.pop(plan.thread_id, None)

    def _finish_undo(self, plan: MirrorPlan) -> Steps[None]:
        """Take back what an earlier `undo` of the thread could not, unless the state now holds
        it (a retried run that sent the same message)."""
        resource_id, pending = self._undone.get(plan.thread_id, (plan.resource_id, set()))
        left = sorted(pending - {m.id for m in plan.messages})
        if left and resource_id == plan.resource_id:
            held = yield from call(
                self.memory.storage.get_messages_by_id, left, resource_id=resource_id
            )
            mine = stored_ids(s for s in held if s.thread_id == plan.thread_id)
            if mine:
                yield from call(self.memory.writes.delete, mine, resource_id=resource_id)
            self.thread(plan.thread_id).known.difference_update(left)
        self._undone.pop(plan.thread_id, None)

    def _follow_fork(self, plan: MirrorPlan) -> Steps[None]:
        """Make the thread the fork's branch (its lineage): what an earlier fork moved to a branch
        of this thread and the fork's lineage holds comes home (ids, times and order kept);
        what only the abandoned lineage held moves to a new branch."""
        storage, ref = self.memory.storage, {"resource_id": plan.resource_id}
        diff = plan.fork_diff or ForkDiff()
        if diff.returning:
            stored = yield from call(storage.get_messages_by_id, sorted(diff.returning), **ref)
            away = {str(s.message.id): s.thread_id for s in stored if s.thread_id != plan.thread_id}
            home = yield from held_by_branches(storage, plan.thread_id, away)
            if home:
                yield from call(
                    self.memory.writes.move, list(home), thread_id=plan.thread_id, **ref
                )
                yield from drop_emptied(
                    self.memory.writes, set(home.values()), resource_id=plan.resource_id
                )
        if diff.abandoned:
            yield from branch_off(
                self.memory.writes,
                plan.thread_id,
                after_message_id=plan.suffix.anchor,
                checkpoint_id=plan.fork_from or None,
                only_if_any=True,
                message_ids=diff.abandoned,
                **ref,
            )

    def _drop_outside(self, plan: MirrorPlan) -> Steps[None]:
        """With mirror_deletes, after a fork: what the thread holds and the fork's state does
        not (a message both lineages held, removed on the fork's side, or removed once and
        brought back by an earlier fork) leaves memory, so the thread is the state again.
        (A fork is rare: it reads the thread's ids once.)"""
        ref: dict[str, Any] = {"resource_id": plan.resource_id}
        held = yield from call(self.memory.storage.list_messages, plan.thread_id, **ref)
        ids = [m.id for m in plan.messages if m.id]
        kept = {*ids, *(carried_id(plan.thread_id, i) for i in ids)}
        gone = [s.message.id for s in held if s.message.id and s.message.id not in kept]
        if gone:
            yield from call(self.memory.writes.delete, gone, **ref)

    # -- a task's writes -------------------------------------------------------------------------
    def rewritten(self, thread_id: str, writes: Sequence[tuple[str, Any]]) -> list[BaseMessage]:
        """The messages a node's writes to the messages channel may have replaced by id (none
        that a thread created here is known not to hold: no read for a new turn)."""
        written = [
            item
            for channel, value in writes
            if channel == self.messages_key
            for item in (value if isinstance(value, (list, tuple)) else [value])
            if isinstance(item, BaseMessage) and not isinstance(item, RemoveMessage) and item.id
        ]
        state = self.thread(thread_id)
        if state.complete:  # every message it holds is in `known`
            written = [m for m in written if m.id in state.known]
        # a checkpoint put before its step's writes saved them already: nothing replaced
        return [m for m in written if not _same(state.recent.get(m.id or ""), m)]

    def on_writes(
        self, thread_id: str, resource_id: str, written: Sequence[BaseMessage]
    ) -> Steps[None]:
        """Messages a node wrote (`rewritten`) that replace stored ones by id are updated in
        memory. (Removals are read at the next checkpoint, with mirror_deletes: LangGraph may
        save a step's writes and the checkpoint before it in either order.)"""
        changes = yield from edited(self.memory.storage, written, thread_id=thread_id)
        if changes:
            yield from call(self.memory.writes.update, changes, resource_id=resource_id)
            self.thread(thread_id).stored(saved_json(changes), save=False)

    # -- never aborting the graph -----------------------------------------------------------------
    def safely(self, steps: Steps[None], thread_id: str) -> Steps[None]:
        """`steps`, a memory failure in them warned about instead of raised."""
        try:
            yield from steps
        except MastraMemoryError as exc:
            self.failed(exc, thread_id)

    def failed(self, exc: MastraMemoryError, thread_id: str) -> None:
        """A memory failure while mirroring `thread_id`: warned about, and the next
        checkpoint walks storage again."""
        self.thread(thread_id).reset()
        logger.warning(
            "memory could not mirror a checkpoint of thread %r (%s); the graph run goes on, "
            "and the next checkpoint of the thread tries again",
            thread_id,
            exc,
        )


def _rewrites_of_saved(
    state: ThreadState, messages: Sequence[BaseMessage], new: int
) -> list[BaseMessage]:
    """State messages that replace, with other content, one this process saved last (they
    stand among the state's newest: the last save's, then the `new` ones)."""
    if not state.saved:
        return []
    newest = messages[-(len(state.saved) + new) :]
    return [m for m in newest if m.id in state.saved and not _same(state.saved[m.id], m)]


def _same(saved: str | None, written: BaseMessage) -> bool:
    """Whether a written message is, as stored, what this process saved under its id."""
    if saved is None:
        return False
    try:
        return saved == message_to_json(written)
    except MastraMemoryError:  # unstorable: the update refuses it (and warns)
        return False


def _save(memory: Conversations, suffix: StateSuffix, plan: MirrorPlan) -> Steps[list[Any]]:
    """Save a suffix's new turns (an insertion at its time, the rest appended)."""
    return (
        yield from call(
            memory.writes.save,
            suffix.new,
            thread_id=plan.thread_id,
            resource_id=plan.resource_id,
            created_at=suffix.times,
        )
    )
