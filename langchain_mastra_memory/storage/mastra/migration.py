"""Moving memory between a Mastra store and our own layout, in either direction.

`copy_memory` reads every thread of a source storage (its messages with their times, title,
metadata, thread-scoped working memory), each owner's working memory and each scope's
observation log, and writes them to a target storage: the threads and messages in one
transaction (`save_import`, which keeps each message's time and id), then the working memory,
then each log as one observation covering the messages the source's log covers (what Mastra
keeps of a log: one text; a scope the target already observes keeps its own). Should the
working memory fail, what the copy made is taken back (the threads it created deleted, the
working memory it changed restored), so a copy lands whole or not at all. With `MastraStorage`
as the source it is ``import-mastra``; as the target, ``export-mastra``.

Examples:
    >>> import os, tempfile
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_mastra_memory import SQLiteStorage
    >>> folder = tempfile.mkdtemp()
    >>> ours = SQLiteStorage(os.path.join(folder, "memory.db"))
    >>> _ = ours.create_thread(thread_id="t1", resource_id="alice")
    >>> _ = ours.save_messages([HumanMessage("hi")], thread_id="t1", resource_id="alice")
    >>> from langchain_mastra_memory.storage.mastra import MastraStorage
    >>> copy_memory(ours, MastraStorage(os.path.join(folder, "mastra.db")))
    Copied(threads=1, messages=1, working_memories=0, observation_logs=0)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ...errors import MastraMemoryError
from ..base import MemoryStorage
from ..records import ImportedThread


@dataclass(frozen=True)
class Copied:
    """What a copy wrote."""

    threads: int
    messages: int
    working_memories: int
    observation_logs: int = 0


def copy_memory(
    source: MemoryStorage,
    target: MemoryStorage,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Copied:
    """Copy every thread, message and working memory of `source` to `target`, whole or not at
    all (`progress(done, total)` after each thread read)."""
    threads = source.list_threads(order_by="created_at", descending=False, archived=None)
    imported: list[ImportedThread] = []
    memories: dict[tuple[str, str | None], str] = {}
    for done, thread in enumerate(threads, 1):
        stored = source.list_messages(thread.id)
        imported.append(
            ImportedThread(
                thread.id,
                thread.resource_id,
                [s.message for s in stored],
                [s.created_at for s in stored],
                title=thread.title,
                metadata=thread.metadata,
                thread_created_at=thread.created_at,
                thread_updated_at=thread.updated_at,
            )
        )
        text = source.get_working_memory(resource_id=thread.resource_id, thread_id=thread.id)
        if text is not None:
            memories[(thread.resource_id, thread.id)] = text
        if progress is not None:
            progress(done, len(threads))
    for resource_id in sorted({t.resource_id for t in threads}):
        text = source.get_working_memory(resource_id=resource_id)
        if text is not None:
            memories[(resource_id, None)] = text
    existing = set(target.get_threads([t.thread_id for t in imported]))
    target.save_import(imported)
    before: dict[tuple[str, str | None], str | None] = {}
    try:
        for thread in threads:  # (Mastra has no archive: ours, in the tables beside Mastra's)
            if thread.archived and thread.id not in existing:
                target.set_archived(thread.id, archived=True, resource_id=thread.resource_id)
        for (resource_id, thread_id), text in memories.items():
            before[(resource_id, thread_id)] = target.get_working_memory(
                resource_id=resource_id, thread_id=thread_id
            )
            target.modify_working_memory(
                _replace_with(text), resource_id=resource_id, thread_id=thread_id
            )
    except MastraMemoryError:
        for (resource_id, thread_id), old in before.items():
            if thread_id is None and old is not None:
                target.modify_working_memory(_replace_with(old), resource_id=resource_id)
        for made in imported:
            if made.thread_id not in existing:
                target.delete_thread(made.thread_id)
        raise
    scopes = [(f"thread:{t.id}", t.resource_id) for t in threads] + [
        (f"resource:{r}", r) for r in sorted({t.resource_id for t in threads})
    ]
    logs = sum(_copy_log(source, target, key, resource_id) for key, resource_id in scopes)
    return Copied(len(imported), sum(len(t.messages) for t in imported), len(memories), logs)


def _copy_log(source: MemoryStorage, target: MemoryStorage, key: str, resource_id: str) -> bool:
    """A scope's observation log into a target that has none: one observation, the source's
    log as one text, covering what it covers; whether one was written."""
    log = source.observation_log(key)
    if not log or target.observation_log(key, buffered=True):
        return False
    owner = f"copy-{uuid.uuid4()}"
    if not target.claim_observation(key, owner=owner, seconds=300):
        return False
    written = target.commit_observation(
        key,
        owner=owner,
        resource_id=resource_id,
        text="\n".join(g.text for g in log),
        current_task=next((g.current_task for g in reversed(log) if g.current_task), None),
        message_ids=list(dict.fromkeys(m for g in log for m in g.message_ids)),
        token_count=sum(g.token_count for g in log),
    )
    return written is not None


def _replace_with(text: str) -> Callable[[str | None], str]:
    """A working-memory update that writes `text` whatever was there."""
    return lambda _old: text
