"""Each message once: a checkpoint's ``messages`` list kept in memory's storage, the wrapped
saver holding a small reference to it.

A list channel (``add_messages``) is stored whole in every checkpoint by LangGraph's savers,
so a thread's bytes grow with the square of its length. Here, on ``put``, the list is stored in
memory's storage (`storage.sql.checkpoint_lists`): each distinct value once, serialized by the
saver's own serde and keyed by a digest of those bytes (an edited message is a new value), and
the list as its parent checkpoint's first ``keep`` keys plus a tail (a whole list every
`SNAPSHOT_EVERY` rows). The checkpoint the saver writes holds `reference(at)` instead, where
``at`` is the checkpoint whose list row holds the value (a checkpoint that left the channel
unchanged points at its parent's). Reads (`MessageRefs.resolved`) put the list back, value by
value, so ``get_state``, history, forks and time travel see what the bare saver would return.

A put's cost follows what changed, not the list's length: the list this process last read or
wrote for the thread (`Held`) maps each message object to its key, so only new objects are
serialized. Anything else is left as the saver has it: a ``DeltaChannel`` (already stored by
its writes), a value that is not a list, an empty list, and checkpoints written by earlier
releases or with ``reference_messages=False`` (whole lists, which still read). A message
object changed in place after it was checkpointed is not seen (as with ``DeltaChannel``):
return a new message with the same id to edit one.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections import OrderedDict
from dataclasses import dataclass
from operator import is_
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple

from ...errors import MastraMemoryError, StorageError
from ...storage.records import CheckpointList, CheckpointValue
from ...storage.sql.checkpoint_lists import SNAPSHOT_EVERY
from ...twins import Steps, call

if TYPE_CHECKING:
    from ...storage.thread import Thread

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
    read (`resolved`); `io` is the checkpointer's `CheckpointerIO` (the saver's raw reads)."""

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
