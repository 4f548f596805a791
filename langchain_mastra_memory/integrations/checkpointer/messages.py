"""The messages a checkpoint's state holds, whichever LangGraph channel keeps them.

A list channel (``MessagesState``'s ``add_messages``) stores the whole list in every
checkpoint. LangGraph's ``DeltaChannel`` (deep agents' ``messages``, any ``create_agent`` or
``StateGraph`` schema annotated with one) stores it only every ``snapshot_frequency`` updates,
as a ``_DeltaSnapshot``; a checkpoint in between holds nothing for it, and its value is the
nearest snapshot with the writes since replayed on top, which the saver's
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
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage, RemoveMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from ...conversation.suffix import with_stable_ids
from ...errors import InvalidMessageError
from ...messages import ensure_messages
from ...twins import Steps, call
from .configs import Messages
from .refs import MessageRefs, referenced_at

try:  # langgraph-checkpoint 4.1+ (older releases have no delta channels)
    from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot
except ImportError:  # pragma: no cover - depends on the installed release
    DeltaSnapshot = None  # type: ignore[assignment,misc]

try:
    from langgraph.types import Overwrite
except ImportError:  # pragma: no cover - depends on the installed release
    Overwrite = None  # type: ignore[assignment,misc]

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
    ``get_tuple`` and ``delta_history`` with their async twins: `CheckpointerIO`)."""

    def __init__(self, io: Any, key: str, refs: MessageRefs | None = None) -> None:
        self.io = io
        self.key = key
        self.refs = refs  # lists memory keeps for the saver (`checkpointer.refs`)
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
