"""The keyword arguments `Memory` and its integration shapes share, as typed dictionaries.

`Memory`'s methods take them with ``**kwargs: Unpack[...]`` (PEP 692), so every call is still
checked by type checkers and the sync and async twins stay one line each.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import BaseMessage
from typing_extensions import Required, TypedDict


class NewThread(TypedDict, total=False):
    """`Memory.create_thread`: the owner; optionally an id (else a new UUID), title, metadata."""

    resource_id: Required[str]
    thread_id: str | None
    title: str | None
    metadata: dict[str, Any] | None


class ThreadQuery(TypedDict, total=False):
    """`Memory.list_threads`: filter by owner and metadata equality, order and page."""

    resource_id: str | None
    metadata: dict[str, Any] | None
    order_by: str  # "updated_at" (default) or "created_at"
    descending: bool  # default True
    limit: int | None
    offset: int


class ThreadUpdate(TypedDict, total=False):
    """`Memory.update_thread`: a new title, metadata keys to merge, the caller's resource."""

    title: str | None
    metadata: dict[str, Any] | None
    resource_id: str | None


class CloneOptions(TypedDict, total=False):
    """`Memory.clone_thread`: the clone's id (else a new UUID), title and extra metadata."""

    new_thread_id: str | None
    resource_id: str | None
    title: str | None
    metadata: dict[str, Any] | None


class BranchOptions(TypedDict, total=False):
    """`Memory.branch_thread`: where the branch starts (after this message; None: the whole
    thread), the caller's resource, and the branch's id (else a new one) and title."""

    after_message_id: str | None
    resource_id: str | None
    new_thread_id: str | None
    title: str | None


class ThreadRef(TypedDict):
    """The thread a call writes to, and its owner."""

    thread_id: str
    resource_id: str


class MemoryRef(TypedDict, total=False):
    """Whose working memory: the owner, and the thread when its scope is ``"thread"``."""

    resource_id: Required[str]
    thread_id: str | None


class MessageQuery(TypedDict, total=False):
    """`Memory.get_messages`: the thread, how many of the newest (all when None), the caller."""

    thread_id: Required[str]
    last_messages: int | None
    resource_id: str | None


class Mirroring(TypedDict, total=False):
    """`Memory.checkpointer`: the state channel to mirror, the owner of threads whose config
    names none (it becomes the memory's `default_resource_id`, so every shape agrees), and
    whether messages removed from the state are deleted from memory too (default False)."""

    messages_key: str
    default_resource_id: str | None
    mirror_deletes: bool


class ToolIds(TypedDict, total=False):
    """`Memory.working_memory_tool`: fixed ids (else each call's config gives them)."""

    thread_id: str | None
    resource_id: str | None


class SaveOptions(ThreadRef, total=False):
    """`Memory.save_messages`: the thread, its owner, and optionally one time per message."""

    created_at: Sequence[datetime | None] | None


class TurnRef(ThreadRef, total=False):
    """`Memory.context`: the thread and owner, and the history a graph state already holds."""

    history: Sequence[BaseMessage] | None


class RecallOptions(TypedDict, total=False):
    """`Memory.recall`: the thread (its owner is looked up when not given), the current turn
    (never changed or returned), and a history to use instead of the stored one."""

    thread_id: Required[str]
    resource_id: str | None
    new_messages: Sequence[BaseMessage]
    history: Sequence[BaseMessage] | None


__all__ = [
    "BranchOptions",
    "CloneOptions",
    "MemoryRef",
    "MessageQuery",
    "Mirroring",
    "NewThread",
    "RecallOptions",
    "SaveOptions",
    "ThreadQuery",
    "ThreadRef",
    "ThreadUpdate",
    "ToolIds",
    "TurnRef",
]
