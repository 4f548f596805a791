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
from ..injected import is_injected
from ..messages import ensure_messages
from ..pools import in_io_pool
from ..recall.upkeep import VectorUpkeep
from ..recall.writer import VectorBacklog
from ..storage.base import MemoryStorage
from ..storage.records import ImportedThread, StoredMessage, stored_ids
from ..threads.ids import verify_owner
from ..twins import run_async, run_sync

if TYPE_CHECKING:
    from ..observational.service import ObservationalMemory
    from ..storage.thread import Thread
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
        stored = self.storage.save_messages(messages, **target)
        held = getattr(self._local, "held", None)
        if held is not None:
            held.append(stored)
            return [s.message for s in stored]
        return self.after_save(stored)

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
        if self.titles is not None:
            self.titles.after_save(stored)
        if self.observations is not None:
            self.observations.after_save(stored)
        return self._indexed(stored)

    async def asave(self, messages: Msgs, **target: Unpack[SaveOptions]) -> Saved:
        """Async `save` (inside `holding`, as `save`: what follows is the caller's)."""
        stored = await self.storage.asave_messages(messages, **target)
        held = getattr(self._local, "held", None)
        if held is not None:
            held.append(stored)
            return [s.message for s in stored]
        if self.titles is not None:
            await self.titles.aafter_save(stored)
        if self.observations is not None:
            await self.observations.aafter_save(stored)
        return await self._aindexed(stored)

    def save_import(self, threads: Sequence[ImportedThread]) -> Saved:
        """Store an import (all or nothing, one transaction), then embed it behind."""
        return self._indexed(self.storage.save_import(threads))

    async def asave_import(self, threads: Sequence[ImportedThread]) -> Saved:
        """Async `save_import`."""
        return await self._aindexed(await self.storage.asave_import(threads))

    def update(self, messages: Msgs, *, resource_id: str | None) -> Saved:
        """Replace stored messages by id, then re-embed them."""
        return self._indexed(
            self.storage.update_messages(messages, resource_id=resource_id), replace=True
        )

    async def aupdate(self, messages: Msgs, *, resource_id: str | None) -> Saved:
        """Async `update`."""
        stored = await self.storage.aupdate_messages(messages, resource_id=resource_id)
        return await self._aindexed(stored, replace=True)

    def clone(self, thread_id: str, **clone: Any) -> Thread:
        """Copy a thread (messages under new ids, its working memory and observation log);
        the copies' vectors are written before it returns, copied from the originals' (nothing
        is embedded again, even after a restart)."""
        thread, stored = self.storage.clone_thread(thread_id, **clone)
        if self.upkeep and stored:
            self.upkeep.after_copy(stored, thread.resource_id)
        return thread

    async def aclone(self, thread_id: str, **clone: Any) -> Thread:
        """Async `clone`."""
        thread, stored = await self.storage.aclone_thread(thread_id, **clone)
        if self.upkeep and stored:
            await self.upkeep.aafter_copy(stored, thread.resource_id)
        return thread

    def transfer(
        self, thread_id: str, *, to_resource_id: str, resource_id: str | None = None
    ) -> Thread:
        """Give a thread to another resource; its vectors move to the new owner's partition
        before it returns."""
        owner = self.storage.get_thread(thread_id)
        thread, stored = self.storage.transfer_thread(
            thread_id, to_resource_id=to_resource_id, resource_id=resource_id
        )
        if self.upkeep and owner is not None and owner.resource_id != thread.resource_id:
            moved = stored_ids(stored)
            self.upkeep.after_delete(
                message_ids=moved if self.upkeep.deletes_by_id else (),
                thread_id=thread_id,
                resource_id=owner.resource_id,
            )
            self.upkeep.after_save(stored)
        return thread

    async def atransfer(
        self, thread_id: str, *, to_resource_id: str, resource_id: str | None = None
    ) -> Thread:
        """Async `transfer`."""
        owner = await self.storage.aget_thread(thread_id)
        thread, stored = await self.storage.atransfer_thread(
            thread_id, to_resource_id=to_resource_id, resource_id=resource_id
        )
        if self.upkeep and owner is not None and owner.resource_id != thread.resource_id:
            moved = stored_ids(stored)
            await self.upkeep.aafter_delete(
                message_ids=moved if self.upkeep.deletes_by_id else (),
                thread_id=thread_id,
                resource_id=owner.resource_id,
            )
            await self.upkeep.aafter_save(stored)
        return thread

    def delete(self, message_ids: Sequence[str], *, resource_id: str | None) -> int:
        """Delete messages by id, then their vectors (in their owners' partitions)."""
        owners = self._owners(message_ids, resource_id)
        count = self.storage.delete_messages(message_ids, resource_id=resource_id)
        for owner, ids in owners.items():
            self.upkeep.after_delete(message_ids=ids, resource_id=owner)  # type: ignore[union-attr]
        return count

    async def adelete(self, message_ids: Sequence[str], *, resource_id: str | None) -> int:
        """Async `delete`."""
        owners = await self._aowners(message_ids, resource_id)
        count = await self.storage.adelete_messages(message_ids, resource_id=resource_id)
        for owner, ids in owners.items():
            await self.upkeep.aafter_delete(message_ids=ids, resource_id=owner)  # type: ignore[union-attr]
        return count

    def _owners(self, ids: Sequence[str], resource_id: str | None) -> dict[str, list[str]]:
        """Message ids by owner (nothing to do without an index)."""
        if not self.upkeep:
            return {}
        if resource_id is not None:
            return {resource_id: list(ids)}
        return _by_owner(self.storage.get_messages_by_id(ids))

    async def _aowners(self, ids: Sequence[str], resource_id: str | None) -> dict[str, list[str]]:
        if not self.upkeep:
            return {}
        if resource_id is not None:
            return {resource_id: list(ids)}
        return _by_owner(await self.storage.aget_messages_by_id(ids))

    def delete_thread(self, thread_id: str, *, resource_id: str | None) -> bool:
        """Delete a thread with its messages, then their vectors."""
        thread = self.storage.get_thread(thread_id) if self.upkeep else None
        held = []
        if thread and self.upkeep and self.upkeep.deletes_by_id:
            held = stored_ids(self.storage.list_messages(thread_id, resource_id=resource_id))
        deleted = self.storage.delete_thread(thread_id, resource_id=resource_id)
        if deleted and self.upkeep and thread:
            self.upkeep.after_delete(
                message_ids=held, thread_id=thread_id, resource_id=thread.resource_id
            )
        return deleted

    async def adelete_thread(self, thread_id: str, *, resource_id: str | None) -> bool:
        """Async `delete_thread`."""
        thread = await self.storage.aget_thread(thread_id) if self.upkeep else None
        held = []
        if thread and self.upkeep and self.upkeep.deletes_by_id:
            held = stored_ids(await self.storage.alist_messages(thread_id, resource_id=resource_id))
        deleted = await self.storage.adelete_thread(thread_id, resource_id=resource_id)
        if deleted and self.upkeep and thread:
            await self.upkeep.aafter_delete(
                message_ids=held, thread_id=thread_id, resource_id=thread.resource_id
            )
        return deleted

    def save_turn(
        self, messages: Msgs, memory_options: CallOptions = NONE, **ref: Unpack[ThreadRef]
    ) -> Saved:
        """Save a turn, creating the thread on first use; never what memory injected (nothing
        when read-only)."""
        if not self.saves_turns(memory_options):
            return []
        self.storage.ensure_thread(**ref)
        return self.save(to_save(messages), **ref)

    async def asave_turn(
        self, messages: Msgs, memory_options: CallOptions = NONE, **ref: Unpack[ThreadRef]
    ) -> Saved:
        """Async `save_turn`."""
        if not self.saves_turns(memory_options):
            return []
        await self.storage.aensure_thread(**ref)
        return await self.asave(to_save(messages), **ref)

    def save_new(
        self, messages: Msgs, memory_options: CallOptions = NONE, **ref: Unpack[ThreadRef]
    ) -> Saved:
        """Save the new turns of a graph state: its unknown suffix (`conversation.suffix`), never a
        compaction's summary, never deleting what the state dropped. Read-only: nothing is
        saved, and the new turns' ids are withheld, so no later turn saves them."""
        messages = with_stable_ids(ensure_messages(messages), ref["thread_id"])
        if not self.saves_turns(memory_options):
            self._verify_owner(self.storage.get_thread(ref["thread_id"]), **ref)
            found = run_sync(state_suffix(self.storage, messages, **ref))
            self.storage.withhold_messages(found.ids, **ref)
            return []
        self.storage.ensure_thread(**ref)
        found = run_sync(state_suffix(self.storage, messages, **ref))
        return self.save(found.new, **ref, created_at=found.times) if found.new else []

    async def asave_new(
        self, messages: Msgs, memory_options: CallOptions = NONE, **ref: Unpack[ThreadRef]
    ) -> Saved:
        """Async `save_new`."""
        messages = with_stable_ids(ensure_messages(messages), ref["thread_id"])
        if not self.saves_turns(memory_options):
            self._verify_owner(await self.storage.aget_thread(ref["thread_id"]), **ref)
            found = await run_async(state_suffix(self.storage, messages, **ref))
            await self.storage.awithhold_messages(found.ids, **ref)
            return []
        await self.storage.aensure_thread(**ref)
        found = await run_async(state_suffix(self.storage, messages, **ref))
        return await self.asave(found.new, **ref, created_at=found.times) if found.new else []

    @staticmethod
    def _verify_owner(thread: Thread | None, *, thread_id: str, resource_id: str) -> None:
        verify_owner(thread_id, resource_id, None if thread is None else thread.resource_id)

    def move(self, message_ids: Sequence[str], **to: Unpack[ThreadRef]) -> Saved:
        """Move messages into another thread of their resource, their vectors following."""
        return self._indexed(self.storage.move_messages(message_ids, **to), replace=True)

    async def amove(self, message_ids: Sequence[str], **to: Unpack[ThreadRef]) -> Saved:
        """Async `move`."""
        moved = await self.storage.amove_messages(message_ids, **to)
        return await self._aindexed(moved, replace=True)

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
        if self.upkeep is None:
            return VectorBacklog(0)
        return VectorBacklog(self.storage.count_unembedded(), self.upkeep.writer.last_error)

    async def abacklog(self) -> VectorBacklog:
        """Async `backlog`."""
        if self.upkeep is None:
            return VectorBacklog(0)
        pending = await self.storage.acount_unembedded()
        return VectorBacklog(pending, self.upkeep.writer.last_error)

    def _indexed(self, stored: list[StoredMessage], *, replace: bool = False) -> Saved:
        if self.upkeep and replace:  # an update rewrites its pieces now (updates are rare)
            self.upkeep.after_save(stored, replace=True)
        elif self.upkeep and self.upkeep.vector is not None:
            self.upkeep.writer.notify(stored=stored)  # new messages: embedded behind the turn
        return [s.message for s in stored]

    async def _aindexed(self, stored: list[StoredMessage], *, replace: bool = False) -> Saved:
        if self.upkeep and replace:
            await self.upkeep.aafter_save(stored, replace=True)
        elif self.upkeep and self.upkeep.vector is not None:
            self.upkeep.writer.notify(stored=stored)
        return [s.message for s in stored]

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until this process's titles and observations are written, and every message
        stored so far is embedded, whichever process stored it (a read-only memory: those this
        process queued)."""
        titled = self.titles.flush(timeout) if self.titles else True
        observed = self.observations.flush(timeout) if self.observations else True
        everyone = self._writes_vectors
        embedded = self.upkeep.writer.flush(timeout, everyone=everyone) if self.upkeep else True
        return embedded and titled and observed

    def close(self, timeout: float | None = 30.0) -> bool:
        """Drain what runs behind the turn (`flush`), stop the vector writer and the titles'
        thread, then close the vector store and the storage; whether all was drained in
        `timeout` (what was not stays in the durable backlog for the next process)."""
        drained = self.flush(timeout)
        if self.titles:
            self.titles.close(timeout)
        if self.observations:
            self.observations.close()
        if self.upkeep:
            self.upkeep.writer.close(timeout)
            if callable(close := getattr(self.upkeep.vector, "close", None)):
                close()
        self.storage.close()
        return drained

    async def aclose(self, timeout: float | None = 30.0) -> bool:
        """Async `close`: drained awaiting (no thread held meanwhile), then closed in the I/O
        pool (stopping threads and closing files block)."""
        drained = await self.aflush(timeout)
        await in_io_pool(self.close, timeout)
        return drained

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async `flush`."""
        titled = await self.titles.aflush(timeout) if self.titles else True
        observed = await self.observations.aflush(timeout) if self.observations else True
        everyone = self._writes_vectors
        embedded = (
            await self.upkeep.writer.aflush(timeout, everyone=everyone) if self.upkeep else True
        )
        return embedded and titled and observed


def _by_owner(stored: Sequence[StoredMessage]) -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for s in stored:
        owners.setdefault(s.resource_id, []).append(s.message.id or "")
    return owners


SyncedStorage = MemoryWrites  # its name before issue 95 (``recall.synced``), for one release
