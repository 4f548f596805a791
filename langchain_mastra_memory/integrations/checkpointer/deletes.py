"""Some checkpoints of a thread deleted where they are, for retention.

LangGraph's saver API deletes a whole thread (``delete_thread``) or keeps its latest
(``prune``); retention deletes checkpoints older than an age while turns go on. So, for the
savers LangGraph ships, their own rows are deleted directly, checkpoint by checkpoint, with
their pending writes (``SqliteSaver``: its two tables; ``PostgresSaver``: its three, a blob
going when no remaining checkpoint of the thread names its version; ``InMemorySaver``: its
dicts). A live turn's new checkpoint is never among them. `deletes_in_place` says whether a
saver is one of these; for the others, the caller rewrites the thread (`checkpointer.upkeep`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Doomed = Sequence[tuple[str, str]]  # (checkpoint_ns, checkpoint_id)


def _kind(saver: Any) -> str | None:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    if isinstance(saver, SqliteSaver):
        return "sqlite"
    if isinstance(saver, InMemorySaver):
        return "memory"
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:  # pragma: no cover - the postgres extra is not installed
        return None
    return "postgres" if isinstance(saver, PostgresSaver) else None


def deletes_in_place(saver: Any) -> bool:
    return _kind(saver) is not None


def delete_checkpoints(saver: Any, thread_id: str, doomed: Doomed) -> None:
    """Delete these checkpoints of `thread_id` (and their writes) from `saver`."""
    kind = _kind(saver)
    if not doomed:
        return
    if kind == "sqlite":
        with saver.lock, saver.cursor() as cur:
            for ns, checkpoint_id in doomed:
                for table in ("checkpoints", "writes"):
                    cur.execute(
                        f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? "
                        "AND checkpoint_id = ?",
                        (thread_id, ns, checkpoint_id),
                    )
    elif kind == "memory":
        for ns, checkpoint_id in doomed:
            saver.storage.get(thread_id, {}).get(ns, {}).pop(checkpoint_id, None)
            saver.writes.pop((thread_id, ns, checkpoint_id), None)
    elif kind == "postgres":
        ids = [checkpoint_id for _, checkpoint_id in doomed]
        with saver._cursor(pipeline=False) as cur:
            for table in ("checkpoints", "checkpoint_writes"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = %s AND checkpoint_id = ANY(%s)",
                    (thread_id, ids),
                )
            cur.execute(
                "DELETE FROM checkpoint_blobs b WHERE b.thread_id = %s AND NOT EXISTS ("
                "SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id "
                "AND c.checkpoint_ns = b.checkpoint_ns "
                "AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)",
                (thread_id,),
            )
    else:
        raise NotImplementedError(type(saver).__name__)
