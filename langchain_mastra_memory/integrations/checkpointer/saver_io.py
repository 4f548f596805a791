"""The wrapped saver's I/O, as sync/async twins for the checkpointer's algorithms written once.

- `SaverIO`: a saver's reads and writes (its own async methods, else its sync ones on memory's
  I/O threads: `on_saver`), its checkpoints nobody owns purged, and some of its checkpoints
  deleted where they are (`delete_checkpoints`, for retention: LangGraph's API deletes only a
  whole thread, or keeps its latest, so for the savers LangGraph ships their own rows go,
  ``SqliteSaver``'s two tables, ``PostgresSaver``'s three, ``InMemorySaver``'s dicts);
- `OneFileWrites`: a turn's checkpoint and its new messages in one SQLite transaction, when the
  saver is LangGraph's `SqliteSaver` on memory's own file (what `memory.checkpointer()` makes
  there). Two connections writing one file take turns at its write lock, one waiting in
  SQLite's busy handler on most puts and each paying its own commit; here the saver's
  connection writes both: ``BEGIN IMMEDIATE``, the messages (memory's own SQL on that
  connection), then the saver's own ``put``, whose commit commits both. A memory failure is
  rolled back and warned about, and the checkpoint is written alone (the next one catches up);
  a saver failure rolls back both. What follows a save (embedding, titles, observations) starts
  once the transaction has committed;
- the configs the parts pass around: a thread's root config, and the owner a checkpoint was
  checked against stamped into its configs (`stamped`).

Example:
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> SaverIO(InMemorySaver()).latest("no-such-thread") is None
    True
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointTuple

from ...conversation.mirroring import MirrorPlan, ThreadMirror
from ...errors import MastraMemoryError
from ...pools import in_io_pool
from ...storage.records import StoredMessage
from ...storage.sqlite.backend import SQLiteStorage
from ...twins import run_sync

if TYPE_CHECKING:
    from ...turn.writes import MemoryWrites


Messages = list[BaseMessage]
P = ParamSpec("P")
T = TypeVar("T")


def ids_of(messages: Messages | None) -> list[str]:
    return [m.id for m in messages or () if m.id]


def root_config(thread_id: str) -> RunnableConfig:
    """The config reading a thread's latest root checkpoint."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def thread_of(item: CheckpointTuple) -> str:
    return str(item.config["configurable"]["thread_id"])


def owned_config(config: RunnableConfig, owner: str) -> RunnableConfig:
    return {**config, "configurable": {**config.get("configurable", {}), "resource_id": owner}}


def stamped(item: CheckpointTuple | None, owner: str | None) -> Any:
    """`item` with the owner it was checked against in its configs: replaying one (LangGraph's
    time travel, ``get_state_history`` configs) names the right resource."""
    if item is None or owner is None:
        return item
    return item._replace(
        config=owned_config(item.config, owner),
        parent_config=item.parent_config and owned_config(item.parent_config, owner),
    )


def overrides(saver: BaseCheckpointSaver[Any], method: str) -> bool:
    """Whether `saver` has its own `method` (not `BaseCheckpointSaver`'s default)."""
    return getattr(type(saver), method, None) is not getattr(BaseCheckpointSaver, method, None)


async def on_saver(method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """A saver's sync method (``saver.put``), awaited: its own async twin (``saver.aput``)
    when its class has one, else the sync method on memory's I/O threads (a sync-only saver,
    or one whose twin raises NotImplementedError, as `SqliteSaver`'s do)."""
    saver, twin = getattr(method, "__self__", None), "a" + method.__name__
    if isinstance(saver, BaseCheckpointSaver) and overrides(saver, twin):
        try:
            result: T = await getattr(saver, twin)(*args, **kwargs)
            return result
        except NotImplementedError:
            pass
    return await in_io_pool(partial(method, *args, **kwargs))


class SaverIO:
    """A saver's I/O as sync/async twins, for the algorithms written once (`twins`): its reads
    and writes (its async methods, or its sync ones in a worker thread)."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.saver = saver

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.saver.get_tuple(config)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await on_saver(self.saver.get_tuple, config)

    def put(self, *args: Any) -> RunnableConfig:
        return self.saver.put(*args)

    async def aput(self, *args: Any) -> RunnableConfig:
        return await on_saver(self.saver.put, *args)

    def put_writes(self, *args: Any) -> None:
        self.saver.put_writes(*args)

    async def aput_writes(self, *args: Any) -> None:
        await on_saver(self.saver.put_writes, *args)

    def list_all(self, config: RunnableConfig | None, **kwargs: Any) -> list[CheckpointTuple]:
        """Every checkpoint the saver lists for `config` (no owner filter: upkeep's reads)."""
        return list(self.saver.list(config, **kwargs))

    async def alist_all(
        self, config: RunnableConfig | None, **kwargs: Any
    ) -> list[CheckpointTuple]:
        items = self.saver_alist(config, kwargs.get("filter"), None, None)
        return [item async for item in items]

    def saver_call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One of the saver's own methods (``saver.delete_thread``, ``saver.prune``, ...)."""
        return method(*args, **kwargs)

    async def asaver_call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await on_saver(method, *args, **kwargs)

    def delete_checkpoints(self, thread_id: str, doomed: Any) -> None:
        """Some checkpoints of a thread, deleted in the saver's own rows (`delete_checkpoints`)."""
        delete_checkpoints(self.saver, thread_id, doomed)

    async def adelete_checkpoints(self, thread_id: str, doomed: Any) -> None:
        await in_io_pool(delete_checkpoints, self.saver, thread_id, doomed)

    def delta_history(self, config: RunnableConfig, channels: Sequence[str]) -> Any:
        """The saver's `get_delta_channel_history` (its own fast query where it has one)."""
        return self.saver.get_delta_channel_history(config=config, channels=channels)

    async def adelta_history(self, config: RunnableConfig, channels: Sequence[str]) -> Any:
        saver = self.saver
        if overrides(saver, "aget_delta_channel_history") or not overrides(
            saver, "get_delta_channel_history"
        ):  # its own async query, or the default walk over its own aget_tuple
            try:
                return await saver.aget_delta_channel_history(config=config, channels=channels)
            except NotImplementedError:  # a sync-only saver's aget_tuple
                pass
        return await in_io_pool(self.delta_history, config, channels)

    def purge_orphans(self, thread_id: str) -> None:
        """Before a thread memory does not hold gets its first checkpoint: delete checkpoints
        left under that id (its memory thread was deleted elsewhere, by another process or the
        CLI), so the new owner starts empty and never reads the old one's state."""
        if self.saver.get_tuple(root_config(thread_id)):
            self.saver.delete_thread(thread_id)

    async def apurge_orphans(self, thread_id: str) -> None:
        if await on_saver(self.saver.get_tuple, root_config(thread_id)):
            await on_saver(self.saver.delete_thread, thread_id)

    def latest(self, thread_id: str) -> str | None:
        """The thread's latest root checkpoint id, as the saver has it now."""
        found = self.saver.get_tuple(root_config(thread_id))
        return None if found is None else str(found.checkpoint["id"])

    async def alatest(self, thread_id: str) -> str | None:
        found = await on_saver(self.saver.get_tuple, root_config(thread_id))
        return None if found is None else str(found.checkpoint["id"])

    async def saver_alist(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The saver's `alist`, or its `list` read whole on memory's I/O threads (a sync-only
        saver, whose `alist` raises NotImplementedError before its first item)."""
        saver = self.saver
        if overrides(saver, "alist"):
            try:
                async for item in saver.alist(config, filter=filter, before=before, limit=limit):
                    yield item
                return
            except NotImplementedError:
                pass
        items = await in_io_pool(
            lambda: [*saver.list(config, filter=filter, before=before, limit=limit)]
        )
        for item in items:
            yield item


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


class OneFileWrites:
    """Writes a put's checkpoint and the new turns it mirrors in one transaction of the
    saver's connection (`of` says whether the saver and memory share a file)."""

    def __init__(self, saver: Any, storage: SQLiteStorage, writes: MemoryWrites) -> None:
        self.saver = saver
        self.storage = storage
        self.writes = writes
        if not isinstance(saver.lock, type(threading.RLock())):  # its put runs inside ours
            saver.lock = threading.RLock()

    @classmethod
    def of(
        cls, saver: BaseCheckpointSaver[Any], storage: Any, writes: MemoryWrites
    ) -> OneFileWrites | None:
        """The writer for a `SqliteSaver` (its own ``put``) on memory's SQLite file; None for
        any other saver or file (their writes stay two, run side by side)."""
        from langgraph.checkpoint.sqlite import SqliteSaver

        if not isinstance(storage, SQLiteStorage) or storage.path == ":memory:":
            return None
        if not isinstance(saver, SqliteSaver) or type(saver).put is not SqliteSaver.put:
            return None
        conn = getattr(saver, "conn", None)
        if not isinstance(conn, sqlite3.Connection):
            return None
        legacy = getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)  # (Python 3.12+)
        if getattr(conn, "autocommit", legacy) != legacy:  # its commit() would not end ours
            return None
        try:
            with saver.lock:
                files = conn.execute("PRAGMA database_list").fetchall()
            main = next((row[2] for row in files if row[1] == "main"), "")
            same = bool(main) and os.path.samefile(main, storage.path)
        except (sqlite3.Error, OSError):  # another thread's connection, a file gone, ...
            return None
        return cls(saver, storage, writes) if same else None

    def put(
        self,
        mirror: ThreadMirror,
        plan: MirrorPlan,
        config: RunnableConfig,
        encode: Callable[[], Checkpoint],
        *args: Any,
    ) -> RunnableConfig:
        """``saver.put(config, encode(), *args)`` with `plan`'s new turns saved, and the
        checkpoint's list stored (`encode`: `checkpointer.channel`), in the same transaction."""
        saver, conn = self.saver, self.saver.conn
        held: list[list[StoredMessage]] = []
        with saver.lock:
            saver.setup()  # (creating its tables would commit the transaction below)
            try:
                if not conn.in_transaction:
                    conn.execute("BEGIN IMMEDIATE")  # the file's write lock: reads stay current
                try:
                    with self.storage.borrowing(conn), self.writes.holding(held):
                        run_sync(mirror.apply(plan))
                except MastraMemoryError as exc:  # the checkpoint is written without them
                    conn.rollback()
                    held.clear()
                    mirror.failed(exc, plan.thread_id)
                with self.storage.borrowing(conn):
                    checkpoint = encode()  # the list (its failure keeps the list whole)
                result = saver.put(config, checkpoint, *args)  # its INSERT, its commit: all
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                mirror.thread(plan.thread_id).reset()  # what it learnt was rolled back
                raise
        for stored in held:
            self.writes.after_save(stored)
        return cast("RunnableConfig", result)

    async def aput(self, mirror: ThreadMirror, plan: MirrorPlan, *args: Any) -> RunnableConfig:
        """Async `put` (`SqliteSaver` is sync: in a worker thread)."""
        return await in_io_pool(self.put, mirror, plan, *args)
