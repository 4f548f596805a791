"""Branch threads: a conversation's abandoned continuation, kept beside it, never lost.

When a graph forks (LangGraph's time travel, a replay, ``update_state`` on an old checkpoint)
the thread follows the graph's branch: the messages after the fork point move to a new thread
of the same resource, whose metadata names the parent thread and the point. Nothing is lost,
and nothing abandoned reads as the thread's current history. `Memory.branch_thread` does the
same by hand, `Memory.list_branches` lists a thread's branches.

Examples:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> _ = memory.save_turn([HumanMessage("q1", id="q1"), AIMessage("a1", id="a1"),
    ...                       HumanMessage("q2", id="q2"), AIMessage("a2", id="a2")],
    ...                      thread_id="t", resource_id="alice")
    >>> branch = memory.branch_thread("t", after_message_id="a1", new_thread_id="t-b")
    >>> [m.content for m in memory.get_messages(thread_id="t")]
    ['q1', 'a1']
    >>> [m.content for m in memory.get_messages(thread_id="t-b")], branch.metadata["branch_of"]
    (['q2', 'a2'], 't')
    >>> [b.id for b in memory.list_branches("t")]
    ['t-b']
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import MessageNotFoundError
from ..storage.base import owned_thread
from ..storage.records import StoredMessage, Thread, now_utc
from ..twins import Steps, call

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage


class SyncedWrites(Protocol):
    """The writes a branch makes, kept in step with recall's index (`MemoryWrites`'s
    ``move`` and ``delete_thread`` and their twins, reached through `call`), over `storage`.
    Typed here so branches do not import the recall layer that uses them."""

    storage: MemoryStorage

    def move(self, message_ids: Sequence[str], *, thread_id: str, resource_id: str) -> Any: ...

    async def amove(
        self, message_ids: Sequence[str], *, thread_id: str, resource_id: str
    ) -> Any: ...

    def delete_thread(self, thread_id: str, *, resource_id: str | None) -> bool: ...

    async def adelete_thread(self, thread_id: str, *, resource_id: str | None) -> bool: ...


BRANCH_OF = "branch_of"  # thread metadata: the thread a branch left


def branch_metadata(
    thread_id: str, after_message_id: str | None, checkpoint_id: str | None = None
) -> dict[str, Any]:
    """What a branch thread's metadata says of where it left its parent."""
    point: dict[str, Any] = {"after_message_id": after_message_id, "at": now_utc().isoformat()}
    if checkpoint_id is not None:
        point["checkpoint_id"] = checkpoint_id
    return {BRANCH_OF: thread_id, "branch_point": point}


def branch_off(
    writes: SyncedWrites,
    thread_id: str,
    *,
    resource_id: str | None,
    after_message_id: str | None,
    new_thread_id: str | None = None,
    title: str | None = None,
    checkpoint_id: str | None = None,
    only_if_any: bool = False,
    message_ids: Collection[str] | None = None,
) -> Steps[Thread | None]:
    """Move the thread's messages after `after_message_id` (all of them for None; with
    `message_ids`, those of them instead) into a new branch thread; the branch (None when
    `only_if_any` and nothing would move)."""
    storage = writes.storage
    thread = yield from _owned(storage, thread_id, resource_id)
    stored: list[StoredMessage] = yield from call(
        storage.list_messages, thread_id, resource_id=thread.resource_id
    )
    ids = [s.message.id or "" for s in stored]
    if message_ids is not None:
        moving = [i for i in ids if i in message_ids]
    elif after_message_id is not None and after_message_id not in ids:
        raise MessageNotFoundError(f"thread {thread_id!r} holds no message {after_message_id!r}")
    else:
        moving = ids[ids.index(after_message_id) + 1 :] if after_message_id is not None else ids
    if not moving and only_if_any:
        return None
    branch: Thread = yield from call(
        storage.create_thread,
        thread_id=new_thread_id or f"{thread_id}~{uuid.uuid4().hex[:12]}",
        resource_id=thread.resource_id,
        title=title if title is not None else thread.title,
        metadata=branch_metadata(thread_id, after_message_id, checkpoint_id),
    )
    if moving:
        yield from call(writes.move, moving, thread_id=branch.id, resource_id=thread.resource_id)
    return branch


def new_branch(writes: SyncedWrites, thread_id: str, **options: Any) -> Steps[Thread]:
    """`branch_off` for `Memory.branch_thread`: the branch, even when nothing moves."""
    branch = yield from branch_off(writes, thread_id, **options)
    assert branch is not None
    return branch


def _owned(storage: Any, thread_id: str, resource_id: str | None) -> Steps[Thread]:
    """The thread, if `resource_id` owns it (None: whoever does)."""
    found = yield from call(storage.get_thread, thread_id)
    owner = found.resource_id if found is not None and resource_id is None else resource_id
    return owned_thread(found, thread_id=thread_id, resource_id=owner or "")


def held_by_branches(
    storage: Any, thread_id: str, holders: dict[str, str]
) -> Steps[dict[str, str]]:
    """Those of `holders` (message id -> the thread holding it) whose thread is a branch of
    `thread_id`."""
    if not holders:
        return {}
    threads = yield from call(storage.get_threads, sorted(set(holders.values())))
    return {
        i: t
        for i, t in holders.items()
        if t in threads and threads[t].metadata.get(BRANCH_OF) == thread_id
    }


def drop_emptied(
    writes: SyncedWrites, branch_ids: Collection[str], *, resource_id: str
) -> Steps[list[str]]:
    """Delete those of `branch_ids` (branch threads whose messages just went home) that hold
    no message any more; the ids deleted."""
    if not branch_ids:
        return []
    stats = yield from call(writes.storage.thread_stats, sorted(set(branch_ids)))
    emptied = [t for t, (count, _tokens) in stats.items() if count == 0]
    for branch_id in emptied:
        yield from call(writes.delete_thread, branch_id, resource_id=resource_id)
    return emptied


def branches_of(storage: Any, thread_id: str, *, resource_id: str | None) -> Steps[list[Thread]]:
    """The branches of a thread that hold messages, oldest first (another resource's thread:
    refused)."""
    thread = yield from _owned(storage, thread_id, resource_id)
    branches: list[Thread] = yield from call(
        storage.list_threads,
        resource_id=thread.resource_id,
        metadata={BRANCH_OF: thread_id},
        order_by="created_at",
    )
    if not branches:
        return branches
    stats = yield from call(storage.thread_stats, [b.id for b in branches])
    return [b for b in branches if stats[b.id][0] > 0]
