"""A memory's checkpointed threads: the default saver beside memory's own file, and deleting a
thread everywhere (memory, its branch threads, every checkpointer's checkpoints, the file's)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from langchain_core.runnables.config import run_in_executor
from langgraph.checkpoint.base import BaseCheckpointSaver

from ..conversation.branches import BRANCH_OF
from ..storage.sqlite import SYNCHRONOUS, SQLiteStorage

if TYPE_CHECKING:
    from ..memory import Memory


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
