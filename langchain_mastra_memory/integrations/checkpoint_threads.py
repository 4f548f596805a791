"""A memory's checkpointed threads: the default saver beside memory's own file, deleting a
thread everywhere (memory, its branch threads, every checkpointer's checkpoints, the file's),
and erasing a resource everywhere (`delete_resource_everywhere`)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from langchain_core.runnables.config import run_in_executor
from langgraph.checkpoint.base import BaseCheckpointSaver

from ..conversation.branches import BRANCH_OF
from ..storage.sqlite import SYNCHRONOUS, SQLiteStorage
from ..storage.validation import check_id

if TYPE_CHECKING:
    from ..memory import Memory


ERASE_WAIT = 120.0  # seconds an erasure waits for the resource's queued vectors to be written


def default_saver(memory: Memory) -> BaseCheckpointSaver:
    """A SQLite saver on memory's own database file, or an in-memory saver."""
    storage = memory.storage
    if isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(storage.path, timeout=storage.busy_timeout, check_same_thread=False)
        conn.execute(f"PRAGMA synchronous={SYNCHRONOUS}")  # the file's durability, as memory's
        saver = SqliteSaver(conn)  # (waits for the file's write lock as long as memory does)
        saver.setup()  # its tables now, not under a turn's concurrent reads of the same file
        return saver
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver()


def delete_everywhere(memory: Memory, thread_id: str, resource_id: str | None) -> bool:
    """`Memory.delete_thread`: the thread with everything keyed by it (messages, vectors,
    observation log, thread-scoped working memory), then its checkpoints in every checkpointer
    of this memory and in the default saver's file (what the CLI and a restarted app see), so
    a later owner of the id starts empty; its branch threads (forks' abandoned continuations)
    go with it. False if memory held no such thread."""
    for branch in _branches_below(memory, thread_id, resource_id):
        memory.synced.delete_thread(branch, resource_id=resource_id)
    deleted = memory.synced.delete_thread(thread_id, resource_id=resource_id)
    for checkpointer in list(memory.checkpointers):
        checkpointer.forget(thread_id)
    _forget_in_file(memory.storage, thread_id)
    return deleted


async def adelete_everywhere(memory: Memory, thread_id: str, resource_id: str | None) -> bool:
    """Async `delete_everywhere` (each saver's async twin; the file in a worker thread)."""
    below = await run_in_executor(None, _branches_below, memory, thread_id, resource_id)
    for branch in below:
        await memory.synced.adelete_thread(branch, resource_id=resource_id)
    deleted = await memory.synced.adelete_thread(thread_id, resource_id=resource_id)
    for checkpointer in list(memory.checkpointers):
        await checkpointer.aforget(thread_id)
    await run_in_executor(None, _forget_in_file, memory.storage, thread_id)
    return deleted


def delete_resource_everywhere(memory: Memory, resource_id: str) -> bool:
    """`Memory.delete_resource`: every thread of the resource deleted everywhere (messages,
    vectors in the memory's engine, observation logs, thread working memory, checkpoints in
    every checkpointer of this memory and the file's), then what is keyed by the resource
    itself (its working memory, its observation log, the record of it, withheld ids) and the
    store items whose namespace holds its id as a label. Nothing of another resource is
    touched. False if memory held nothing of it."""
    check_id(resource_id, "resource_id")
    memory.flush(ERASE_WAIT)  # vectors queued for its messages are written, then deleted
    found = False
    for thread in memory.storage.list_threads(resource_id=resource_id, archived=None):
        found = delete_everywhere(memory, thread.id, resource_id) or found
    found = memory.storage.delete_resource(resource_id) or found
    return _delete_items(memory.storage, resource_id) or found


async def adelete_resource_everywhere(memory: Memory, resource_id: str) -> bool:
    """Async `delete_resource_everywhere` (each part's async twin)."""
    check_id(resource_id, "resource_id")
    await memory.aflush(ERASE_WAIT)
    found = False
    threads = await memory.storage.alist_threads(resource_id=resource_id, archived=None)
    for thread in threads:
        found = await adelete_everywhere(memory, thread.id, resource_id) or found
    found = await memory.storage.adelete_resource(resource_id) or found
    return await run_in_executor(None, _delete_items, memory.storage, resource_id) or found


def _delete_items(storage: Any, resource_id: str) -> bool:
    """The store items labelled with the resource's id (none when the storage keeps none)."""
    try:
        return bool(storage.delete_items_labelled(resource_id))
    except NotImplementedError:
        return False


def _branches_below(memory: Memory, thread_id: str, resource_id: str | None) -> list[str]:
    """The ids of the thread's branches, their branches, and so on (another resource's thread
    has none here: the delete itself refuses it)."""
    thread = memory.storage.get_thread(thread_id)
    if thread is None or (resource_id is not None and thread.resource_id != resource_id):
        return []
    found: list[str] = []
    todo = [thread_id]
    while todo:
        parent = todo.pop()
        for branch in memory.storage.list_threads(
            resource_id=thread.resource_id, metadata={BRANCH_OF: parent}, archived=None
        ):
            if branch.id not in found and branch.id != thread_id:
                found.append(branch.id)
                todo.append(branch.id)
    return found


def _forget_in_file(storage: Any, thread_id: str) -> None:
    """The thread's checkpoints in a SQLite memory file, through LangGraph's own saver (whose
    tables are not created there when absent)."""
    if not isinstance(storage, SQLiteStorage) or storage.path == ":memory:":
        return
    conn = sqlite3.connect(storage.path, timeout=30, check_same_thread=False)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        if {"checkpoints", "writes"} <= tables:
            from langgraph.checkpoint.sqlite import SqliteSaver

            SqliteSaver(conn).delete_thread(thread_id)
    finally:
        conn.close()
