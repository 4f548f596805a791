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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig

from ..twins import Steps, call


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
