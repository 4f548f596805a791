"""Erasing a thread or a resource everywhere memory can reach (a part of `Memory`).

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> _ = memory.create_thread(thread_id="t1", resource_id="alice")
    >>> _ = memory.save_messages([HumanMessage("hi")], thread_id="t1", resource_id="alice")
    >>> memory.erasure.delete_resource("alice"), memory.get_thread("t1")
    (True, None)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..conversation.branches import BRANCH_OF
from ..storage.base import MemoryStorage
from ..storage.validation import check_id
from ..turn.writes import MemoryWrites
from ..twins import Steps, call, run_async, run_sync
from .checkpoint_store import forget_in_file

ERASE_WAIT = 120.0  # seconds an erasure waits for the resource's queued vectors to be written


class Forgets(Protocol):
    """What an erasure asks of a checkpointer over this memory: drop a thread's checkpoints
    (`MemoryCheckpointer.forget` / ``aforget``)."""

    def forget(self, thread_id: str) -> None: ...

    async def aforget(self, thread_id: str) -> None: ...


class Erasure:
    """A thread or a resource deleted everywhere: memory's rows, vectors and observation log
    (`MemoryWrites`), branch threads, the checkpoints of every checkpointer over this memory
    (`checkpointers`, read at each call) and of memory's own file. Nothing of another resource
    is touched. Every method has an ``a``-prefixed async twin."""

    def __init__(
        self, storage: MemoryStorage, writes: MemoryWrites, checkpointers: Iterable[Forgets]
    ) -> None:
        self.storage, self.writes, self.checkpointers = storage, writes, checkpointers

    def delete_thread(self, thread_id: str, resource_id: str | None = None) -> bool:
        """The thread with everything keyed by it (messages, vectors, observation log,
        thread-scoped working memory), then its checkpoints in every checkpointer of this
        memory and in the file's (what the CLI and a restarted app see), so a later owner of
        the id starts empty; its branch threads (forks' abandoned continuations) go with it.
        False if memory held no such thread."""
        return run_sync(self._delete_thread(thread_id, resource_id))

    async def adelete_thread(self, thread_id: str, resource_id: str | None = None) -> bool:
        """Async `delete_thread` (each saver's async twin; the file on memory's I/O threads)."""
        return await run_async(self._delete_thread(thread_id, resource_id))

    def _delete_thread(self, thread_id: str, resource_id: str | None) -> Steps[bool]:
        for branch in (yield from self._branches_below(thread_id, resource_id)):
            yield from call(self.writes.delete_thread, branch, resource_id=resource_id)
        deleted = yield from call(self.writes.delete_thread, thread_id, resource_id=resource_id)
        for checkpointer in list(self.checkpointers):
            yield from call(checkpointer.forget, thread_id)
        yield from call(forget_in_file, self.storage, thread_id)  # (no twin: I/O threads)
        return deleted

    def delete_resource(self, resource_id: str) -> bool:
        """Every thread of the resource deleted everywhere (`delete_thread`), then what is
        keyed by the resource itself (its working memory, its observation log, the record of
        it, withheld ids) and the store items whose namespace holds its id as a label. False
        if memory held nothing of it."""
        return run_sync(self._delete_resource(resource_id))

    async def adelete_resource(self, resource_id: str) -> bool:
        """Async `delete_resource` (each part's async twin)."""
        return await run_async(self._delete_resource(resource_id))

    def _delete_resource(self, resource_id: str) -> Steps[bool]:
        check_id(resource_id, "resource_id")
        yield from call(self.writes.flush, ERASE_WAIT)  # its queued vectors written, then deleted
        found = False
        threads = yield from call(self.storage.list_threads, resource_id=resource_id, archived=None)
        for thread in threads:
            found = (yield from self._delete_thread(thread.id, resource_id)) or found
        found = (yield from call(self.storage.delete_resource, resource_id)) or found
        return (yield from call(_delete_items, self.storage, resource_id)) or found

    def _branches_below(self, thread_id: str, resource_id: str | None) -> Steps[list[str]]:
        """The ids of the thread's branches, their branches, and so on (another resource's
        thread has none here: the delete itself refuses it)."""
        thread = yield from call(self.storage.get_thread, thread_id)
        if thread is None or (resource_id is not None and thread.resource_id != resource_id):
            return []
        found: list[str] = []
        todo = [thread_id]
        while todo:
            parent = todo.pop()
            branches = yield from call(
                self.storage.list_threads,
                resource_id=thread.resource_id,
                metadata={BRANCH_OF: parent},
                archived=None,
            )
            for branch in branches:
                if branch.id not in found and branch.id != thread_id:
                    found.append(branch.id)
                    todo.append(branch.id)
        return found


def _delete_items(storage: Any, resource_id: str) -> bool:
    """The store items labelled with the resource's id (none when the storage keeps none)."""
    try:
        return bool(storage.delete_items_labelled(resource_id))
    except NotImplementedError:
        return False
