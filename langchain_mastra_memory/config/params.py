"""The keyword arguments `Memory` and its integration shapes share, as typed dictionaries.

`Memory`'s methods take them with ``**kwargs: Unpack[...]`` (PEP 692), so every call is still
checked by type checkers and the sync and async twins stay one line each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable
from typing_extensions import Required, TypedDict

from .call_options import CallOptions

# the shapes of `Memory`'s positional parameters and results
Messages = list[BaseMessage]
In = Sequence[BaseMessage]  # messages given to a method
Ids = Sequence[str]
Opt = str | None
Node = Runnable[Any, dict[str, Any]]


class NewThread(TypedDict, total=False):
    """`Memory.create_thread`: the owner; optionally an id (else a new UUID), title, metadata."""

    resource_id: Required[str]
    thread_id: str | None
    title: str | None
    metadata: dict[str, Any] | None


class ThreadQuery(TypedDict, total=False):
    """`Memory.list_threads`: filter by owner, metadata equality and archived state (default
    False: archived threads are left out; None: all), order and page."""

    resource_id: str | None
    metadata: dict[str, Any] | None
    archived: bool | None
    order_by: str  # "updated_at" (default) or "created_at"
    descending: bool  # default True
    limit: int | None
    offset: int


class ThreadPageQuery(TypedDict, total=False):
    """`Memory.page_threads`: `ThreadQuery`'s filters and order, by page (from 0) of
    `per_page` threads (default 20; None: all)."""

    resource_id: str | None
    metadata: dict[str, Any] | None
    archived: bool | None
    order_by: str
    descending: bool
    page: int
    per_page: int | None


class MessagePageQuery(TypedDict, total=False):
    """`Memory.page_messages`: the caller's resource (the thread's owner when not given), the
    page (from 0) of `per_page` messages (default 40; None: all), newest first or not, a
    ``[since, until)`` time range, message ids to include with `include_window` neighbours
    each side, and a `query` whose recalled messages are included (instead of the last user
    message's)."""

    resource_id: str | None
    page: int
    per_page: int | None
    descending: bool
    since: datetime | None
    until: datetime | None
    include: Sequence[str]
    include_window: int
    query: str | None


class SearchQuery(TypedDict, total=False):
    """`Memory.search_messages`: whose memory, optionally one thread, the mode for this call,
    a ``[since, until)`` time range, archived threads too, and the page (from 0) of
    `per_page` hits (default 10)."""

    resource_id: Required[str]
    thread_id: str | None
    mode: Literal["vector", "keyword", "hybrid"] | None
    since: datetime | None
    until: datetime | None
    include_archived: bool
    page: int
    per_page: int | None


class ThreadUpdate(TypedDict, total=False):
    """`Memory.update_thread`: a new title, metadata keys to merge, the caller's resource."""

    title: str | None
    metadata: dict[str, Any] | None
    resource_id: str | None


class CloneOptions(TypedDict, total=False):
    """`Memory.clone_thread`: the clone's id (else a new UUID), title and extra metadata, and
    which messages it copies: those `message_filter` keeps (``{"since", "until",
    "message_ids"}``), the newest `message_limit` of them."""

    new_thread_id: str | None
    resource_id: str | None
    title: str | None
    metadata: dict[str, Any] | None
    message_limit: int | None
    message_filter: dict[str, Any] | None
    carry_ids: bool


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


class ObservationsAsOf(TypedDict, total=False):
    """Whose observation log: the owner, the thread (thread scope), and the scope (the
    memory's observational scope unless given; ``"thread"`` when it is off)."""

    resource_id: Required[str]
    thread_id: str | None
    scope: Literal["thread", "resource"]


class MessageQuery(TypedDict, total=False):
    """`Memory.get_messages`: the thread, how many of the newest (all when None), the caller."""

    thread_id: Required[str]
    last_messages: int | None
    resource_id: str | None


class Mirroring(TypedDict, total=False):
    """`Memory.checkpointer`: the state channel to mirror, the owner of threads whose config
    names none (it becomes the memory's `default_resource_id`, so every shape agrees),
    whether messages removed from the state are deleted from memory too (default False), and
    whether a read naming no owner is the stored owner's (LangGraph Server; default False),
    and whether checkpoints refer to memory's stored messages instead of repeating the list
    (default True; False: the saver's own format)."""

    messages_key: str
    default_resource_id: str | None
    mirror_deletes: bool
    trust_thread_reads: bool
    reference_messages: bool


class ToolIds(TypedDict, total=False):
    """`Memory.working_memory_tool`: fixed ids (else each call's config gives them)."""

    thread_id: str | None
    resource_id: str | None


class RecallToolOptions(ToolIds, total=False):
    """`Memory.recall_tool`: fixed ids (else each call's config gives them), the tool's name,
    and how many hits a call returns (default 5)."""

    name: str
    per_page: int


class Transfer(TypedDict, total=False):
    """`Memory.transfer_thread`: the new owner, and the caller (who must own the thread)."""

    to_resource_id: Required[str]
    resource_id: str | None


class SaveOptions(ThreadRef, total=False):
    """`Memory.save_messages`: the thread, its owner, and optionally one time per message."""

    created_at: Sequence[datetime | None] | None


class TurnSave(ThreadRef, total=False):
    """`Memory.save_turn` / `save_new`: the thread, its owner, and this call's own options
    (``memory_options``: ``{"read_only": True}`` saves nothing; default: the run's config's)."""

    memory_options: CallOptions | Mapping[str, Any] | None


class TurnRef(TurnSave, total=False):
    """`Memory.context`: the thread and owner, the history a graph state already holds,
    ``read_only`` (assemble without changing the thread: a sub-agent's context) and this call's
    own options (``memory_options``, as in a config; default: the run's config's)."""

    history: Sequence[BaseMessage] | None
    read_only: bool


class RecallRequest(TypedDict, total=False):
    """`Memory.recall`: the thread (its owner is looked up when not given), the current turn
    (never changed or returned), and a history to use instead of the stored one."""

    thread_id: Required[str]
    resource_id: str | None
    new_messages: Sequence[BaseMessage]
    history: Sequence[BaseMessage] | None
    memory_options: CallOptions | Mapping[str, Any] | None


class SummaryOptions(TypedDict, total=False):
    """`Memory.summarize_thread`: the model (required), the owner to check, extra
    instructions, and the newest messages to read (a count, a token bound)."""

    model: Required[Any]
    resource_id: str | None
    instructions: str | None
    last_messages: int | None
    max_input_tokens: int


def branching(branch: BranchOptions) -> dict[str, Any]:
    """`branch_off`'s keywords for `Memory.branch_thread`."""
    return {"resource_id": None, "after_message_id": None, **branch}


def unarchived(query: ThreadQuery) -> dict[str, Any]:
    """A thread listing's keywords: archived threads left out unless asked for."""
    return {"archived": False, **query}


def listing(query: MessageQuery) -> dict[str, Any]:
    """`Memory.get_messages`' query in storage's names."""
    last, resource_id = query.get("last_messages"), query.get("resource_id")
    return {"thread_id": query["thread_id"], "last": last, "resource_id": resource_id}


__all__ = [
    "BranchOptions",
    "CloneOptions",
    "MemoryRef",
    "MessagePageQuery",
    "MessageQuery",
    "Mirroring",
    "NewThread",
    "RecallRequest",
    "RecallToolOptions",
    "SaveOptions",
    "SearchQuery",
    "SummaryOptions",
    "ThreadPageQuery",
    "ThreadQuery",
    "ThreadRef",
    "ThreadUpdate",
    "ToolIds",
    "TurnRef",
]
