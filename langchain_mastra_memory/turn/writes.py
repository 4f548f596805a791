"""`MemoryWrites`: storage writes that keep the recall index's vectors in step (a part of
`Memory`; it holds the index's `VectorUpkeep`, never its search).

Messages are stored first; their vectors follow (a vector-store failure warns and leaves the
backlog to catch up, it never fails the save). Deleting messages or a thread removes their
vectors. With semantic recall off it is storage alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from typing_extensions import Unpack

from ..config.call_options import NONE, CallOptions
from ..config.options import EXIT_DRAIN
from ..config.params import SaveOptions, ThreadRef
from ..conversation.suffix import state_suffix, with_stable_ids
from ..errors import ConfigurationError
from ..messages import ensure_messages, is_injected
from ..pools import in_io_pool
from ..recall.upkeep import VectorUpkeep
from ..recall.writer import VectorBacklog
from ..storage.base import MemoryStorage
from ..storage.records import ImportedThread, StoredMessage, stored_ids
from ..threads.ids import verify_owner
from ..twins import Steps, call, run_async, run_sync

if TYPE_CHECKING:
    from ..observational.service import ObservationalMemory
    from ..storage.records import Thread
    from ..titles import TitleWriter

Msgs = Sequence[BaseMessage]
Saved = list[BaseMessage]


def to_save(messages: Msgs) -> Saved:
    """The messages of a turn worth saving: never those memory injected itself."""
    return [m for m in messages if not is_injected(m)]


class MemoryWrites:
    """Saves, updates and deletes on `storage`, followed by the vectors' `upkeep` (when there
    is one: `RecallIndex.upkeep`).

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_mastra_memory import SQLiteStorage
        >>> storage = SQLiteStorage(":memory:")
        >>> _ = storage.create_thread(thread_id="t1", resource_id="alice")
        >>> writes = MemoryWrites(storage, None)
        >>> saved = writes.save([HumanMessage("hi")], thread_id="t1", resource_id="alice")
        >>> [m.content for m in saved]
        ['hi']
    """

    def __init__(
        self,
        storage: MemoryStorage,
        upkeep: VectorUpkeep | None,
        titles: TitleWriter | None = None,
        observations: ObservationalMemory | None = None,
        *,
        read_only: bool = False,
        exit_drain: float = EXIT_DRAIN,
    ) -> None:
        self.storage = storage
        self.upkeep = upkeep  # the recall index's vectors (None: no semantic recall)
        self.titles = titles
        self.observations = observations
        self.read_only = read_only  # turns are not saved (a call may ask for it too)
        self._local = threading.local()  # per thread: saves whose follow-up is held (`holding`)
        if upkeep is not None and self._writes_vectors:  # what earlier processes left
            upkeep.writer.start(exit_drain=exit_drain)  # unembedded is written now

    @property
    def _writes_vectors(self) -> bool:
        """Whether this memory writes vectors behind the turn (a read-only one writes none:
        its caller may hold a read-only role, or a replica)."""
        return not self.read_only and self.upkeep is not None and self.upkeep.vector is not None

    def saves_turns(self, memory_options: CallOptions = NONE) -> bool:
        """Whether a call's turn is saved: not when the memory is read-only, nor when the call's
        options (`memory_options`, read where the call entered memory) say so."""
        return not (self.read_only or memory_options.read_only)

    def save(self, messages: Msgs, **target: Unpack[SaveOptions]) -> Saved:
        """Store messages in a thread, then embed them (and title the thread, when asked)."""
        return run_sync(self._save(messages, target))

    async def asave(self, messages: Msgs, **target: Unpack[SaveOptions]) -> Saved:
        """Async `save` (inside `holding`, as `save`: what follows is the caller's)."""
        return await run_async(self._save(messages, target))

    def _save(self, messages: Msgs, target: SaveOptions) -> Steps[Saved]:
        stored = yield from call(self.storage.save_messages, messages, **target)
        held = getattr(self._local, "held", None)
        if held is not None:
            held.append(stored)
            return [s.message for s in stored]
        return (yield from self._after_save(stored))

    @contextmanager
    def holding(self, held: list[list[StoredMessage]]) -> Iterator[None]:
        """While active, this thread's saves leave what follows a save (embedding, titles,
        observations) to the caller: each save's messages are appended to `held`, for
        `after_save` once the transaction they were written in has committed."""
        previous = getattr(self._local, "held", None)
        self._local.held = held
        try:
            yield
        finally:
            self._local.held = previous

    def after_save(self, stored: list[StoredMessage]) -> Saved:
        """What follows storing messages: titling, observing, embedding (each started here,
        run behind); the messages with their ids."""
        return run_sync(self._after_save(stored))

    def _after_save(self, stored: list[StoredMessage]) -> Steps[Saved]:
        if self.titles is not None:
            yield from call(self.titles.after_save, stored)
        if self.observations is not None:
            yield from call(self.observations.after_save, stored)
        return (yield from self._indexed(stored))

    def save_import(self, threads: Sequence[ImportedThread]) -> Saved:
        """Store an import (all or nothing, one transaction), then embed it behind."""
        return run_sync(self._save_import(threads))

    async def asave_import(self, threads: Sequence[ImportedThread]) -> Saved:
        """Async `save_import`."""
        return await run_async(self._save_import(threads))

    def _save_import(self, threads: Sequence[ImportedThread]) -> Steps[Saved]:
        return (yield from self._indexed((yield from call(self.storage.save_import, threads))))

    def update(self, messages: Msgs, *, resource_id: str | None) -> Saved:
        """Replace stored messages by id, then re-embed them."""
        return run_sync(self._update(messages, resource_id))

    async def aupdate(self, messages: Msgs, *, resource_id: str | None) -> Saved:
        """Async `update`."""
        return await run_async(self._update(messages, resource_id))

    def _update(self, messages: Msgs, resource_id: str | None) -> Steps[Saved]:
        stored = yield from call(self.storage.update_messages, messages, resource_id=resource_id)
        return (yield from self._indexed(stored, replace=True))

    def clone(self, thread_id: str, **clone: Any) -> Thread:
        """Copy a thread (messages under new ids, its working memory and observation log);
        the copies' vectors are written before it returns, copied from the originals' (nothing
        is embedded again, even after a restart)."""
        return run_sync(self._clone(thread_id, clone))

    async def aclone(self, thread_id: str, **clone: Any) -> Thread:
        """Async `clone`."""
        return await run_async(self._clone(thread_id, clone))

    def _clone(self, thread_id: str, clone: dict[str, Any]) -> Steps[Thread]:
        thread, stored = yield from call(self.storage.clone_thread, thread_id, **clone)
        if self.upkeep and stored:
            yield from call(self.upkeep.after_copy, stored, thread.resource_id)
        return thread

    def transfer(
        self, thread_id: str, *, to_resource_id: str, resource_id: str | None = None
    ) -> Thread:
        """Give a thread to another resource; its vectors move to the new owner's partition
        before it returns."""
        return run_sync(self._transfer(thread_id, to_resource_id, resource_id))

    async def atransfer(
        self, thread_id: str, *, to_resource_id: str, resource_id: str | None = None
    ) -> Thread:
        """Async `transfer`."""
        return await run_async(self._transfer(thread_id, to_resource_id, resource_id))

    def _transfer(
        self, thread_id: str, to_resource_id: str, resource_id: str | None
    ) -> Steps[Thread]:
        owner = yield from call(self.storage.get_thread, thread_id)
        thread, stored = yield from call(
            self.storage.transfer_thread,
            thread_id,
            to_resource_id=to_resource_id,
            resource_id=resource_id,
        )
        if self.upkeep and owner is not None and owner.resource_id != thread.resource_id:
            moved = stored_ids(stored)
            yield from call(
                self.upkeep.after_delete,
                message_ids=moved if self.upkeep.deletes_by_id else (),
                thread_id=thread_id,
                resource_id=owner.resource_id,
            )
            yield from call(self.upkeep.after_save, stored)
        return thread

    def delete(self, message_ids: Sequence[str], *, resource_id: str | None) -> int:
        """Delete messages by id, then their vectors (in their owners' partitions)."""
        return run_sync(self._delete(message_ids, resource_id))

    async def adelete(self, message_ids: Sequence[str], *, resource_id: str | None) -> int:
        """Async `delete`."""
        return await run_async(self._delete(message_ids, resource_id))

    def _delete(self, message_ids: Sequence[str], resource_id: str | None) -> Steps[int]:
        owners: dict[str, list[str]] = {}  # message ids by owner (none needed without an index)
        if self.upkeep and resource_id is not None:
            owners = {resource_id: list(message_ids)}
        elif self.upkeep:
            owners = _by_owner((yield from call(self.storage.get_messages_by_id, message_ids)))
        count = yield from call(self.storage.delete_messages, message_ids, resource_id=resource_id)
        for owner, ids in owners.items():
            yield from call(self.upkeep.after_delete, message_ids=ids, resource_id=owner)  # type: ignore[union-attr]
        return count

    def delete_thread(self, thread_id: str, *, resource_id: str | None) -> bool:
        """Delete a thread with its messages, then their vectors."""
        return run_sync(self._delete_thread(thread_id, resource_id))

    async def adelete_thread(self, thread_id: str, *, resource_id: str | None) -> bool:
        """Async `delete_thread`."""
        return await run_async(self._delete_thread(thread_id, resource_id))

    def _delete_thread(self, thread_id: str, resource_id: str | None) -> Steps[bool]:
        thread = (yield from call(self.storage.get_thread, thread_id)) if self.upkeep else None
        held: list[str] = []
        if thread and self.upkeep and self.upkeep.deletes_by_id:
            listed = yield from call(self.storage.list_messages, thread_id, resource_id=resource_id)
            held = stored_ids(listed)
        deleted = yield from call(self.storage.delete_thread, thread_id, resource_id=resource_id)
        if deleted and self.upkeep and thread:
            yield from call(
                self.upkeep.after_delete,
                message_ids=held,
                thread_id=thread_id,
                resource_id=thread.resource_id,
            )
        return deleted

    def save_turn(
        self, messages: Msgs, memory_options: CallOptions = NONE, **ref: Unpack[ThreadRef]
    ) -> Saved:
        """Save a turn, creating the thread on first use; never what memory injected (nothing
        when read-only)."""
        return run_sync(self._save_turn(messages, memory_options, ref))

    async def asave_turn(
        self, messages: Msgs, memory_options: CallOptions = NONE, **ref: Unpack[ThreadRef]
    ) -> Saved:
        """Async `save_turn`."""
        return await run_async(self._save_turn(messages, memory_options, ref))

    def _save_turn(
        self, messages: Msgs, memory_options: CallOptions, ref: ThreadRef
    ) -> Steps[Saved]:
        if not self.saves_turns(memory_options):
            return []
        yield from call(self.storage.ensure_thread, **ref)
        return (
            yield from self._save(
                to_save(messages),
                SaveOptions(thread_id=ref["thread_id"], resource_id=ref["resource_id"]),
            )
        )

    def save_new(
        self, messages: Msgs, memory_options: CallOptions = NONE, **ref: Unpack[ThreadRef]
    ) -> Saved:
        """Save the new turns of a graph state: its unknown suffix (`conversation.suffix`), never a
        compaction's summary, never deleting what the state dropped. Read-only: nothing is
        saved, and the new turns' ids are withheld, so no later turn saves them."""
        return run_sync(self._save_new(messages, memory_options, ref))

    async def asave_new(
        self, messages: Msgs, memory_options: CallOptions = NONE, **ref: Unpack[ThreadRef]
    ) -> Saved:
        """Async `save_new`."""
        return await run_async(self._save_new(messages, memory_options, ref))

    def _save_new(
        self, messages: Msgs, memory_options: CallOptions, ref: ThreadRef
    ) -> Steps[Saved]:
        messages = with_stable_ids(ensure_messages(messages), ref["thread_id"])
        if not self.saves_turns(memory_options):
            self._verify_owner((yield from call(self.storage.get_thread, ref["thread_id"])), **ref)
            found = yield from state_suffix(self.storage, messages, **ref)
            yield from call(self.storage.withhold_messages, found.ids, **ref)
            return []
        yield from call(self.storage.ensure_thread, **ref)
        found = yield from state_suffix(self.storage, messages, **ref)
        if not found.new:
            return []
        return (yield from self._save(found.new, {**ref, "created_at": found.times}))

    @staticmethod
    def _verify_owner(thread: Thread | None, *, thread_id: str, resource_id: str) -> None:
        verify_owner(thread_id, resource_id, None if thread is None else thread.resource_id)

    def move(self, message_ids: Sequence[str], **to: Unpack[ThreadRef]) -> Saved:
        """Move messages into another thread of their resource, their vectors following."""
        return run_sync(self._move(message_ids, to))

    async def amove(self, message_ids: Sequence[str], **to: Unpack[ThreadRef]) -> Saved:
        """Async `move`."""
        return await run_async(self._move(message_ids, to))

    def _move(self, message_ids: Sequence[str], to: ThreadRef) -> Steps[Saved]:
        moved = yield from call(self.storage.move_messages, message_ids, **to)
        return (yield from self._indexed(moved, replace=True))

    def backfill(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every stored message whose vector is missing from the vector store (checked
        there, not only by the backlog flag); returns how many were written."""
        if self.upkeep is None:
            raise ConfigurationError("semantic recall is not enabled")
        written = self.upkeep.reindex(progress=progress)
        self.upkeep.writer.recovered()  # the store takes writes again
        return written

    def backlog(self) -> VectorBacklog:
        """The messages waiting for vectors, and why the last write failed."""
        return run_sync(self._backlog())

    async def abacklog(self) -> VectorBacklog:
        """Async `backlog`."""
        return await run_async(self._backlog())

    def _backlog(self) -> Steps[VectorBacklog]:
        if self.upkeep is None:
            return VectorBacklog(0)
        pending = yield from call(self.storage.count_unembedded)
        return VectorBacklog(pending, self.upkeep.writer.last_error)

    def _indexed(self, stored: list[StoredMessage], *, replace: bool = False) -> Steps[Saved]:
        if self.upkeep and replace:  # an update rewrites its pieces now (updates are rare)
            yield from call(self.upkeep.after_save, stored, replace=True)
        elif self.upkeep and self.upkeep.vector is not None:
            self.upkeep.writer.notify(stored=stored)  # new messages: embedded behind the turn
        return [s.message for s in stored]

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until this process's titles and observations are written, and every message
        stored so far is embedded, whichever process stored it (a read-only memory: those this
        process queued)."""
        return run_sync(self._flush(timeout))

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async `flush` (awaited: no thread is held while the writers work)."""
        return await run_async(self._flush(timeout))

    def _flush(self, timeout: float | None) -> Steps[bool]:
        titled = (yield from call(self.titles.flush, timeout)) if self.titles else True
        observed = True
        if self.observations:
            observed = yield from call(self.observations.flush, timeout)
        embedded = True
        if self.upkeep:
            everyone = self._writes_vectors
            embedded = yield from call(self.upkeep.writer.flush, timeout, everyone=everyone)
        return embedded and titled and observed

    def close(self, timeout: float | None = 30.0) -> bool:
        """Drain what runs behind the turn (`flush`), stop the vector writer and the titles'
        thread, then close the vector store and the storage; whether all was drained in
        `timeout` (what was not stays in the durable backlog for the next process)."""
        drained = self.flush(timeout)
        self._close(timeout)
        return drained

    async def aclose(self, timeout: float | None = 30.0) -> bool:
        """Async `close`: drained awaiting (no thread held meanwhile), then closed in the I/O
        pool (stopping threads and closing files block, and have no async form)."""
        drained = await self.aflush(timeout)
        await in_io_pool(self._close, timeout)
        return drained

    def _close(self, timeout: float | None) -> None:
        if self.titles:
            self.titles.close(timeout)
        if self.observations:
            self.observations.close()
        if self.upkeep:
            self.upkeep.writer.close(timeout)
            if callable(close := getattr(self.upkeep.vector, "close", None)):
                close()
        self.storage.close()


def _by_owner(stored: Sequence[StoredMessage]) -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for s in stored:
        owners.setdefault(s.resource_id, []).append(s.message.id or "")
    return owners


SyncedStorage = MemoryWrites  # its name before issue 95 (``recall.synced``), for one release
