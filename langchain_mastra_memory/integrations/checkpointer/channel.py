"""The ``messages`` channel of a checkpoint: what it holds, whichever LangGraph channel keeps
it, and each message stored once in memory, the wrapped saver holding a small reference.

**What a checkpoint holds.** A list channel (``MessagesState``'s ``add_messages``) stores the
whole list in every checkpoint. LangGraph's ``DeltaChannel`` (deep agents' ``messages``, any
schema annotated with one) stores it only every ``snapshot_frequency`` updates, as a
``_DeltaSnapshot``; a checkpoint in between holds nothing for it, and its value is the nearest
snapshot with the writes since replayed on top, which the saver's
``get_delta_channel_history`` returns. So:

- a stored checkpoint's messages: its own value (a list, or a snapshot's), else the saver's
  history of the channel replayed (`CheckpointMessages.stored`);
- a checkpoint being put: its own value, else its parent's value with the parent's writes to
  the channel applied (`CheckpointMessages.at_put`). LangGraph makes a delta channel's writes
  durable before the checkpoint they produce, so the saver holds them by then. The parent's
  value comes from a small per-thread cache of the last value this process computed.

Replaying needs the channel's reducer, which a checkpoint does not name: `replay_messages` is
the rule LangGraph's and deepagents' message reducers share (append by id, replace by id,
``RemoveMessage`` and ``REMOVE_ALL_MESSAGES``, an ``Overwrite`` resets), so it rebuilds what
the graph holds for any messages channel.

**Each message once** (`MessageRefs`). A list channel is stored whole in every checkpoint by
LangGraph's savers, so a thread's bytes grow with the square of its length. Here, on ``put``,
the list is stored in memory's storage (`storage.sql.checkpoint_lists`): each distinct value
once, serialized by the saver's own serde and keyed by a digest of those bytes (an edited
message is a new value), and the list as its parent checkpoint's first ``keep`` keys plus a
tail (a whole list every `SNAPSHOT_EVERY` rows). The checkpoint the saver writes holds
`reference(at)` instead, where ``at`` is the checkpoint whose list row holds the value (a
checkpoint that left the channel unchanged points at its parent's). Reads
(`MessageRefs.resolved`) put the list back, value by value, so ``get_state``, history, forks
and time travel see what the bare saver would return.

A put's cost follows what changed, not the list's length: the list this process last read or
wrote for the thread (`Held`) maps each message object to its key, so only new objects are
serialized. Anything else is left as the saver has it: a ``DeltaChannel`` (already stored by
its writes), a value that is not a list, an empty list, and checkpoints written by earlier
releases or with ``reference_messages=False`` (whole lists, which still read). A message
object changed in place after it was checkpointed is not seen (as with ``DeltaChannel``):
return a new message with the same id to edit one.

Example:
    >>> reference("1f0a")
    {'__langchain_mastra_memory__': 'messages', 'at': '1f0a'}
    >>> referenced_at(reference("1f0a")), referenced_at([])
    ('1f0a', None)
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import is_
from typing import TYPE_CHECKING, Any, cast

from langchain_core.messages import BaseMessage, RemoveMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from ...conversation.suffix import with_stable_ids
from ...errors import InvalidMessageError, MastraMemoryError, StorageError
from ...messages import ensure_messages
from ...storage.records import CheckpointList, CheckpointValue
from ...storage.sql.checkpoint_lists import SNAPSHOT_EVERY
from ...twins import Steps, call
from .saver_io import Messages

try:  # langgraph-checkpoint 4.1+ (older releases have no delta channels)
    from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot
except ImportError:  # pragma: no cover - depends on the installed release
    DeltaSnapshot = None  # type: ignore[assignment,misc]
try:
    from langgraph.types import Overwrite
except ImportError:  # pragma: no cover - depends on the installed release
    Overwrite = None  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    from ...storage.records import Thread


logger = logging.getLogger(__name__)

MARKER = "__langchain_mastra_memory__"
HELD_VALUES = 200_000  # message objects the per-thread lists below keep alive, at most
HELD_THREADS = 1_000
UNREAD = object()  # `resolved`'s list not read yet


def reference(at: str) -> dict[str, str]:
    """What the saver stores for a list kept in memory: the checkpoint whose row holds it."""
    return {MARKER: "messages", "at": at}


def referenced_at(value: Any) -> str | None:
    """The checkpoint a stored reference names (None: not a reference)."""
    if isinstance(value, dict) and value.get(MARKER) == "messages":
        return str(value["at"])
    return None


@dataclass
class Held:
    """The list at a checkpoint as this process last read or wrote it: its keys, and the
    objects the graph holds (an object seen here has its key without serializing it)."""

    checkpoint_id: str
    at: str  # the checkpoint whose list row holds it
    depth: int
    keys: list[str]
    values: list[Any]

    def key_of(self) -> dict[int, str]:
        if not self.values:  # keys read from storage alone
            return {}
        return {id(value): key for value, key in zip(self.values, self.keys, strict=True)}

    def extended_by(self, messages: list[Any]) -> bool:
        """Whether `messages` starts with this list's very objects (checked in C)."""
        n = len(self.values)
        return bool(self.values) and len(messages) >= n and all(map(is_, messages[:n], self.values))


def checkpoint_at(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a config (no id: the latest)."""
    configurable = config.get("configurable") or {}
    return (
        str(configurable["thread_id"]),
        str(configurable.get("checkpoint_ns") or ""),
        configurable.get("checkpoint_id"),
    )


class MessageRefs:
    """Stores a checkpointer's ``messages`` lists in memory (`encoded`) and puts them back on
    read (`resolved`); `io` is the checkpointer's `SaverIO` (the saver's raw reads)."""

    def __init__(self, io: Any, storage: Any, serde: Any, key: str, *, enabled: bool) -> None:
        self.io = io
        self.storage = storage
        self.serde = serde
        self.key = key
        self.enabled = enabled
        self._held: OrderedDict[tuple[str, str], Held] = OrderedDict()
        self._held_values = 0

    # -- put ------------------------------------------------------------------------------------
    def encoded(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        new_versions: Any,
        resource_id: str | None = None,
    ) -> Steps[Checkpoint]:
        """`checkpoint` as the saver should store it: its list stored in memory (in a thread
        `resource_id` owns: checked in the same statement), a reference in its place
        (unchanged when the list cannot or need not be referenced)."""
        values = checkpoint.get("channel_values") or {}
        messages = values.get(self.key)
        if not self.enabled or not isinstance(messages, list) or not messages:
            return checkpoint
        thread_id, ns, parent_id = checkpoint_at(config)
        held = self._held.get((thread_id, ns))
        if held is not None and held.checkpoint_id != parent_id:
            held = None
        if held is None and parent_id:  # not read here: the parent's list from storage
            held = yield from self._parent(config, thread_id, ns, parent_id)
        try:
            at, depth, keys = yield from self._store(
                checkpoint["id"], thread_id, ns, messages, held, resource_id
            )
        except (StorageError, NotImplementedError) as exc:  # the saver keeps it whole
            if isinstance(exc, NotImplementedError):
                self.enabled = False  # a storage without lists: never again
            else:
                logger.warning("thread %r: the checkpoint keeps its whole list: %s", thread_id, exc)
            return checkpoint
        self._hold(thread_id, ns, Held(checkpoint["id"], at, depth, keys, list(messages)))
        return {**checkpoint, "channel_values": {**values, self.key: reference(at)}}

    def _parent(
        self, config: RunnableConfig, thread_id: str, ns: str, parent_id: str
    ) -> Steps[Held | None]:
        """The parent checkpoint's list keys, when memory stores them (no objects: every
        message of the put is serialized once to find its key)."""
        parent_config = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": parent_id,
            }
        }
        try:
            found = yield from call(self.io.get_tuple, parent_config)
        except MastraMemoryError:
            return None
        at = (
            None
            if found is None
            else referenced_at(found.checkpoint["channel_values"].get(self.key))
        )
        if at is None:
            return None
        read = yield from call(self.storage.read_checkpoint_list, thread_id, ns, at)
        if read is None:
            return None
        keys, depth, _ = read
        return Held(parent_id, at, depth, keys, [])

    def _store(
        self,
        checkpoint_id: str,
        thread_id: str,
        ns: str,
        messages: list[Any],
        held: Held | None,
        resource_id: str | None = None,
    ) -> Steps[tuple[str, int, list[str]]]:
        """Store `messages` as a list building on `held` (the parent's); returns the
        checkpoint whose row holds it, that row's depth, and the keys."""
        new: dict[str, CheckpointValue] = {}

        def key_of(message: Any) -> str:
            kind, data = self.serde.dumps_typed(message)
            key = digest(kind, data)
            if key not in new:  # (a value stored before is left as it is: ON CONFLICT)
                new[key] = CheckpointValue(key, getattr(message, "id", None), kind, data)
            return key

        if held is not None and held.extended_by(messages):  # appends only: the usual turn
            keep = len(held.keys)
            keys = [*held.keys, *map(key_of, messages[keep:])]
        else:
            known = held.key_of() if held is not None else {}
            keys = [known.get(id(m)) or key_of(m) for m in messages]
            keep = 0
            if held is not None:
                limit = min(len(keys), len(held.keys))
                while keep < limit and keys[keep] == held.keys[keep]:
                    keep += 1
        if held is not None and keep == len(keys) == len(held.keys):  # unchanged
            return held.at, held.depth, keys
        if held is None or held.depth + 1 >= SNAPSHOT_EVERY:
            keep = 0  # a whole list: reads follow at most SNAPSHOT_EVERY rows
        base = held.at if keep and held is not None else None
        depth = held.depth + 1 if base is not None and held is not None else 0
        entry = CheckpointList(thread_id, ns, checkpoint_id, base, keep, keys[keep:], depth)
        yield from call(
            self.storage.save_checkpoint_list, entry, list(new.values()), resource_id=resource_id
        )
        return checkpoint_id, depth, keys

    # -- read ------------------------------------------------------------------------------------
    def with_thread(
        self, thread_id: str, found: CheckpointTuple | None
    ) -> Steps[tuple[Thread | None, Any]]:
        """The thread as storage has it now, and the list `found` refers to, read together
        (one trip); ``(thread, UNREAD)`` when `found` holds no reference."""
        at = None if found is None else referenced_at(_channel_values(found).get(self.key))
        if at is None or found is None:  # (found: narrowed for the type checker)
            thread = yield from call(self.storage.get_thread, thread_id)
            return thread, UNREAD
        _, ns, _ = checkpoint_at(found.config)
        read = yield from call(self.storage.read_thread_and_checkpoint_list, thread_id, ns, at)
        return cast("tuple[Thread | None, Any]", read)

    def resolved(
        self,
        found: CheckpointTuple | None,
        scratch: dict[str, CheckpointValue] | None = None,
        listed: Any = UNREAD,
    ) -> Steps[CheckpointTuple | None]:
        """`found` with a referenced list put back (as it was put); `scratch` shares the
        values read across the checkpoints of one listing; `listed`: the list, already read
        (`with_thread`)."""
        if found is None:
            return None
        values = _channel_values(found)
        at = referenced_at(values.get(self.key))
        if at is None:
            return found
        thread_id, ns, _ = checkpoint_at(found.config)
        messages = yield from self.messages(
            thread_id, ns, at, found.checkpoint["id"], scratch, listed
        )
        checkpoint = {**found.checkpoint, "channel_values": {**values, self.key: messages}}
        return found._replace(checkpoint=cast(Checkpoint, checkpoint))

    def messages(
        self,
        thread_id: str,
        ns: str,
        at: str,
        checkpoint_id: str,
        scratch: dict[str, CheckpointValue] | None = None,
        listed: Any = UNREAD,
    ) -> Steps[list[Any]]:
        """The list a reference names, each value deserialized (blanked ones left out)."""
        scratch = {} if scratch is None else scratch
        read = listed
        if read is UNREAD:
            read = yield from call(
                self.storage.read_checkpoint_list, thread_id, ns, at, known=scratch
            )
        if read is None:
            msg = (
                f"checkpoint {checkpoint_id!r} of thread {thread_id!r} refers to messages "
                f"memory no longer holds (list {at!r} in {self.storage!r} is gone)"
            )
            raise StorageError(msg)
        keys, depth, found = read
        scratch.update(found)
        messages: list[Any] = []
        kept: list[str] = []
        for key in keys:
            value = scratch.get(key)
            if value is None:
                msg = f"thread {thread_id!r}: the stored value {key!r} of list {at!r} is missing"
                raise StorageError(msg)
            if value.data is None:  # pruned by retention
                continue
            messages.append(self.serde.loads_typed((value.type, value.data)))
            kept.append(key)
        if len(kept) == len(keys):
            self._hold(thread_id, ns, Held(checkpoint_id, at, depth, keys, messages))
        return messages

    # -- the per-thread lists -------------------------------------------------------------------
    def _hold(self, thread_id: str, ns: str, held: Held) -> None:
        previous = self._held.pop((thread_id, ns), None)
        if previous is not None:
            self._held_values -= len(previous.values)
        self._held[(thread_id, ns)] = held
        self._held_values += len(held.values)
        while self._held and (self._held_values > HELD_VALUES or len(self._held) > HELD_THREADS):
            _, dropped = self._held.popitem(last=False)
            self._held_values -= len(dropped.values)

    def forget(self, thread_id: str) -> None:
        for where in [w for w in self._held if w[0] == thread_id]:
            self._held_values -= len(self._held.pop(where).values)


def _channel_values(found: CheckpointTuple) -> dict[str, Any]:
    return found.checkpoint.get("channel_values") or {}


def digest(kind: str, data: bytes) -> str:
    """A value's key: 120 bits of BLAKE2b over its serialization, in URL-safe base64."""
    raw = hashlib.blake2b(kind.encode() + b"\0" + data, digest_size=15).digest()
    return base64.urlsafe_b64encode(raw).decode()


CACHED_VALUES = 1_000  # threads whose latest rebuilt delta value this process keeps
DELTA = "a DeltaChannel"


def is_snapshot(value: Any) -> bool:
    return DeltaSnapshot is not None and isinstance(value, DeltaSnapshot)


def _overwritten(value: Any) -> tuple[bool, Any]:
    """LangGraph's three forms of an ``Overwrite`` write (the typed one, and its two dicts)."""
    if Overwrite is not None and isinstance(value, Overwrite):
        return True, value.value
    if isinstance(value, dict):
        if len(value) == 1 and "__overwrite__" in value:
            return True, value["__overwrite__"]
        if value.get("type") == "__overwrite__" and "value" in value:
            return True, value["value"]
    return False, None


def replay_messages(base: Sequence[BaseMessage], writes: Iterable[Any], *, where: str) -> Messages:
    """`base` with a messages channel's `writes` applied in order, as LangGraph's message
    reducers do (batched or one by one: the same result)."""
    messages: list[Any] = list(base)
    flat: list[Any] = []
    for value in writes:
        reset, replacement = _overwritten(value)
        if reset:
            messages, flat = list(replacement or []), []
        elif isinstance(value, (list, tuple)) and not _is_message_tuple(value):
            flat.extend(value)
        else:
            flat.append(value)
    try:
        written = convert_to_messages(flat)
        messages = convert_to_messages(messages)
    except (ValueError, TypeError, NotImplementedError) as exc:
        msg = f"{where} holds a write that is not a message: {exc}"
        raise InvalidMessageError(msg) from exc
    for i in range(len(written) - 1, -1, -1):
        if isinstance(written[i], RemoveMessage) and written[i].id == REMOVE_ALL_MESSAGES:
            messages, written = [], written[i + 1 :]
            break
    result: list[BaseMessage | None] = list(messages)
    index = {m.id: i for i, m in enumerate(messages) if m.id is not None}
    for message in written:
        position = index.get(message.id) if message.id is not None else None
        if isinstance(message, RemoveMessage):
            if position is not None:
                result[position] = None
                del index[message.id]
        elif position is not None:
            result[position] = message
        else:
            if message.id is not None:
                index[message.id] = len(result)
            result.append(message)
    return [m for m in result if m is not None]


def _is_message_tuple(value: Any) -> bool:
    """``("user", "hi")``: one message-like, not a list of them."""
    return isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)


def _root(config: RunnableConfig, checkpoint_id: str) -> RunnableConfig:
    configurable = config.get("configurable") or {}
    return {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        }
    }


class CheckpointMessages:
    """Reads a checkpointer's ``messages`` channel from checkpoints, list or delta (`io` has
    ``get_tuple`` and ``delta_history`` with their async twins: `SaverIO`)."""

    def __init__(self, io: Any, key: str, refs: MessageRefs | None = None) -> None:
        self.io = io
        self.key = key
        self.refs = refs  # lists memory keeps for the saver (`checkpointer.channel`)
        self._latest: OrderedDict[str, tuple[str, Messages]] = OrderedDict()
        self._putting: dict[str, tuple[str, Messages]] = {}  # a put's value, until it is written

    # -- values -------------------------------------------------------------------------------
    def value(self, raw: Any) -> Messages:
        """A stored value of the channel as messages (a list, or a delta snapshot's list)."""
        where = f"the {self.key!r} channel"
        if is_snapshot(raw):
            raw, where = raw.value, f"the {self.key!r} channel ({DELTA}: its snapshot)"
            if raw is None:
                return []
        if not isinstance(raw, (list, tuple)):
            msg = (
                f"{where} holds a {type(raw).__name__}, not a list of messages; pass "
                "messages_key= to mirror another channel"
            )
            raise InvalidMessageError(msg)
        if all(issubclass(kind, BaseMessage) for kind in set(map(type, raw))):
            return list(raw)  # add_messages' channel: as it is (checked per type, not per item)
        return ensure_messages(raw, where=where)

    def _replayed(self, seed: Any, writes: Iterable[Any]) -> Messages:
        where = f"the {self.key!r} channel ({DELTA}, rebuilt from its writes)"
        base = [] if seed is None else self.value(seed)
        return ensure_messages(replay_messages(base, writes, where=where), where=where)

    def held_by_delta(self, checkpoint: Checkpoint) -> bool:
        """Whether a ``DeltaChannel`` holds the checkpoint's messages (a snapshot here, or
        nothing here though the channel was written)."""
        raw = (checkpoint.get("channel_values") or {}).get(self.key)
        return is_snapshot(raw) or self.is_delta(checkpoint)

    def is_delta(self, checkpoint: Checkpoint) -> bool:
        """Whether the checkpoint's channel holds nothing here though it was written: a
        ``DeltaChannel`` between two snapshots."""
        return self.key not in (checkpoint.get("channel_values") or {}) and self.key in (
            checkpoint.get("channel_versions") or {}
        )

    # -- a stored checkpoint ---------------------------------------------------------------------
    def stored(self, found: CheckpointTuple) -> Steps[Messages | None]:
        """The messages of a checkpoint the saver holds (None: it has no such channel)."""
        thread_id = str(found.config["configurable"]["thread_id"])
        raw = yield from self._stored(found, thread_id)
        return cast("list[BaseMessage] | None", self._named(raw, thread_id, found.checkpoint))

    def _stored(self, found: CheckpointTuple, thread_id: str) -> Steps[Messages | None]:
        """`stored`, as the graph holds it (messages LangGraph gave no id still have none)."""
        checkpoint = found.checkpoint
        values = checkpoint.get("channel_values") or {}
        if self.refs is not None and (at := referenced_at(values.get(self.key))) is not None:
            ns = str(found.config["configurable"].get("checkpoint_ns") or "")
            listed = yield from self.refs.messages(thread_id, ns, at, checkpoint["id"])
            return self.value(listed)
        if self.key in values:
            return self.value(values[self.key])
        if not self.is_delta(checkpoint):
            return None
        cached = self._cached(thread_id, checkpoint["id"])
        if cached is not None:
            return cached
        history = yield from call(self.io.delta_history, found.config, [self.key])
        entry = history.get(self.key) or {"writes": []}
        messages = self._replayed(entry.get("seed"), (w[2] for w in entry["writes"]))
        self.remember(thread_id, checkpoint["id"], messages)
        return messages

    def _named(self, raw: Messages | None, thread_id: str, checkpoint: Checkpoint) -> Any:
        """A delta channel's messages with an id for each (`with_stable_ids`); a list
        channel's as they are (``add_messages`` names every message)."""
        return (
            raw
            if raw is None or not self.held_by_delta(checkpoint)
            else with_stable_ids(raw, thread_id)
        )

    # -- a checkpoint being put ------------------------------------------------------------------
    def at_put(
        self, config: RunnableConfig, checkpoint: Checkpoint, new_versions: Any
    ) -> Steps[Messages | None]:
        """The messages of `checkpoint` as `config` puts it (None: no such channel). For a
        delta channel between snapshots: the parent's value with the parent's writes to the
        channel (in LangGraph's order) applied; unwritten, the parent's value."""
        thread_id = str(config["configurable"]["thread_id"])
        raw = yield from self._at_put(config, checkpoint, new_versions, thread_id)
        if raw is not None and self.held_by_delta(checkpoint):  # the next put builds on it
            self._putting[thread_id] = (checkpoint["id"], raw)
        return cast("list[BaseMessage] | None", self._named(raw, thread_id, checkpoint))

    def _at_put(
        self, config: RunnableConfig, checkpoint: Checkpoint, new_versions: Any, thread_id: str
    ) -> Steps[Messages | None]:
        values = checkpoint.get("channel_values") or {}
        if self.key in values:
            return self.value(values[self.key])
        if not self.is_delta(checkpoint):
            return None
        parent_id = (config.get("configurable") or {}).get("checkpoint_id")
        if not parent_id:  # the thread's first checkpoint: nothing to build on
            return []
        unchanged = self.key not in new_versions
        if unchanged and (cached := self._cached(thread_id, parent_id)) is not None:
            return cached
        parent = yield from call(self.io.get_tuple, _root(config, parent_id))
        if parent is None:  # the parent is gone (a pruned or deleted thread): start empty
            return []
        base = yield from self._stored(parent, thread_id)
        if unchanged:
            return base
        writes = [w[2] for w in parent.pending_writes or () if w[1] == self.key]
        where = f"the {self.key!r} channel ({DELTA}, rebuilt from its writes)"
        messages = replay_messages(base or [], writes, where=where) if writes else list(base or [])
        return ensure_messages(messages, where=where)

    # -- the per-thread cache ---------------------------------------------------------------------
    def after_put(self, thread_id: str, checkpoint: Checkpoint) -> None:
        """The put of `checkpoint` went through: a delta channel's value is kept (the next put
        builds on it); a list channel's is stored whole and needs no cache."""
        putting = self._putting.pop(thread_id, None)
        if putting is not None and putting[0] == checkpoint["id"]:
            self.remember(thread_id, *putting)

    def remember(self, thread_id: str, checkpoint_id: str, messages: Messages) -> None:
        """`messages` is the value at `checkpoint_id` (the thread's newest this process saw)."""
        self._latest[thread_id] = (checkpoint_id, list(messages))
        self._latest.move_to_end(thread_id)
        while len(self._latest) > CACHED_VALUES:
            self._latest.popitem(last=False)

    def _cached(self, thread_id: str, checkpoint_id: str) -> Messages | None:
        found = self._latest.get(thread_id)
        return list(found[1]) if found is not None and found[0] == checkpoint_id else None

    def forget(self, thread_id: str) -> None:
        self._latest.pop(thread_id, None)
        self._putting.pop(thread_id, None)
