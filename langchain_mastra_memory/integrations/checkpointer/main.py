"""`MemoryCheckpointer`: any LangGraph saver, with each thread's conversation kept in memory.

Checkpoints are stored by the wrapped saver (``InMemorySaver``, ``SqliteSaver``,
``PostgresSaver``, ...); every method delegates to it. On ``put`` the root graph's ``messages``
channel is mirrored into `Memory` (`conversation.mirroring`): the thread is created on first
sight for the owner the config names (the package's rule, `ids`: ``resource_id``, ``user_id``,
the default, else the thread itself), and the state's new turns are appended once. Memory keeps
the conversation, the state is a view of it: compaction, ``RemoveMessage`` and trimming delete
nothing (unless ``mirror_deletes=True``), an edit by id updates the stored message, and a fork
or replay from an earlier checkpoint moves the abandoned messages to a branch thread.
``delete_thread`` deletes the memory thread too.

Each message is stored once, the saver keeping a reference (`refs`; ``reference_messages=False``
keeps the saver's own format, and `write_back` rewrites a thread in it).

Isolation holds both ways: a put, and a read (``get_tuple``, ``list`` with a thread, so
``get_state``, ``invoke`` and ``stream`` too), of a thread owned by another resource raises
`ResourceMismatchError` before any checkpoint is written or returned (listings: `list`).
Checkpoints whose memory thread was deleted elsewhere are nobody's: reads see none, and the
next owner's first put purges them.

Checks happen before anything is written (a missing ``thread_id``, a thread of another
resource, a ``messages`` channel holding non-messages or unstorable ones), and the wrapped saver
writes first: if it raises, memory is untouched; if memory fails after it, a warning says so
and the next checkpoint catches up (a graph run never dies for bookkeeping). A checkpoint
without a ``messages`` channel, and subgraph checkpoints (a non-empty ``checkpoint_ns``), are
not mirrored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from ...config import call_options
from ...conversation.mirroring import MirrorPlan, ThreadMirror, fork_diff
from ...errors import ConfigurationError, ResourceMismatchError, ThreadNotFoundError
from ...lifecycle import default_saver, warn_if_volatile
from ...pools import in_io_pool
from ...threads.ids import verify_owner
from ...twins import Steps, both, call, run_async, run_sync
from .channel import CheckpointMessages, MessageRefs
from .maintenance import CheckpointMaintenance
from .owners import ThreadOwners
from .saver_io import (
    Messages,
    OneFileWrites,
    SaverIO,
    ids_of,
    on_saver,
    owned_config,
    stamped,
    thread_of,
)

if TYPE_CHECKING:
    from ...memory import Memory

T = TypeVar("T")
Ids = list[str]  # aliases (with Messages): inside the class, `list` is the checkpointer method


class MemoryCheckpointer(BaseCheckpointSaver[Any]):
    """A LangGraph checkpointer that also keeps the conversation in `Memory`.

    Examples:
        >>> from langgraph.graph import START, MessagesState, StateGraph
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> graph = StateGraph(MessagesState)
        >>> _ = graph.add_node("reply", lambda state: {"messages": [AIMessage("hello")]})
        >>> _ = graph.add_edge(START, "reply")
        >>> app = graph.compile(checkpointer=memory.checkpointer())
        >>> config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        >>> _ = app.invoke({"messages": [("user", "hi")]}, config)
        >>> [m.content for m in memory.get_messages(thread_id="t1")]
        ['hi', 'hello']
    """

    def __init__(
        self,
        memory: Memory,
        saver: BaseCheckpointSaver[Any] | None = None,
        *,
        messages_key: str = "messages",
        default_resource_id: str | None = None,
        mirror_deletes: bool = False,
        trust_thread_reads: bool = False,
        reference_messages: bool = True,
    ) -> None:
        self.memory = memory
        if saver is None:
            saver = default_saver(memory.storage)
        else:
            warn_if_volatile(memory.storage, saver)
        self.saver: BaseCheckpointSaver[Any] = saver
        super().__init__(serde=self.saver.serde)
        self.messages_key = messages_key
        self.default_resource_id = default_resource_id
        if default_resource_id is not None:  # the hook and the middleware must agree with it
            if memory.default_resource_id not in (None, default_resource_id):
                msg = (
                    f"checkpointer(default_resource_id={default_resource_id!r}) disagrees with "
                    f"Memory(default_resource_id={memory.default_resource_id!r})"
                )
                raise ConfigurationError(msg)
            memory.default_resource_id = default_resource_id
        storage, writes = memory.storage, memory.writes
        self.mirror = ThreadMirror(memory, messages_key=messages_key, mirror_deletes=mirror_deletes)
        self._io = SaverIO(self.saver)
        refs = reference_messages and not writes.read_only  # each message once
        self._refs = MessageRefs(self._io, storage, self.saver.serde, messages_key, enabled=refs)
        self._channel = CheckpointMessages(self._io, messages_key, self._refs)  # list or delta
        self.owners = ThreadOwners(  # who owns each thread, checked at every read and write
            storage,
            self.mirror,
            self._channel,
            partial(getattr, memory, "default_resource_id"),  # the checkpointer's, if given
            trust_thread_reads=trust_thread_reads,
        )
        self._one_file = OneFileWrites.of(self.saver, storage, writes)  # a turn: one transaction
        self.maintenance = CheckpointMaintenance(  # copy, rollback, pruning, write-back
            self._io, storage, writes, self._channel, self._refs, self._forget_caches
        )
        memory.checkpointers.add(self)  # memory.delete_thread deletes the checkpoints too

    def __repr__(self) -> str:
        return f"MemoryCheckpointer(saver={type(self.saver).__name__})"

    @property
    def config_specs(self) -> list[Any]:
        return self.saver.config_specs

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)

    # -- mirroring (the algorithms live in `conversation`) ----------------------------------------
    def _root_messages(
        self, config: RunnableConfig, checkpoint: Checkpoint, new_versions: ChannelVersions
    ) -> Steps[Messages | None]:
        """The messages to mirror (None: a subgraph, or no channel), list or delta channel."""
        if (config.get("configurable") or {}).get("checkpoint_ns"):
            return None
        messages: Messages | None = yield from self._channel.at_put(
            config, checkpoint, new_versions
        )
        return messages

    def _fork_from(self, thread_id: str, config: RunnableConfig, latest: str | None) -> str | None:
        """The checkpoint a put continues from when it is not the thread's latest (a fork;
        "" for a put with no parent on a thread that has checkpoints); None otherwise."""
        parent = (config.get("configurable") or {}).get("checkpoint_id")
        return None if latest is None or parent == latest else parent or ""

    def _head(self, thread_id: str, config: RunnableConfig) -> str | None:
        """The thread's latest root checkpoint when this process knows it and the put builds
        on it (no read needed); None when the saver must be asked."""
        parent = (config.get("configurable") or {}).get("checkpoint_id")
        head = self.mirror.thread(thread_id).head
        return head if head is not None and head == parent else None

    def _plan(
        self,
        ids: tuple[str, str],
        messages: Messages | None,
        config: RunnableConfig,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        latest: str | None,
        parent_ids: list[str] | None,
    ) -> Steps[MirrorPlan | None]:
        """What the put changes in memory (None: nothing: a subgraph, or messages unchanged)."""
        fork_from = self._fork_from(ids[0], config, latest)
        if messages is None or (self.messages_key not in new_versions and fork_from is None):
            return None
        diff = None
        if fork_from is not None and latest is not None:
            diff = yield from fork_diff(
                self._io, ids[0], head=latest, parent=fork_from, messages_of=self._channel.stored
            )
        plan: MirrorPlan = yield from self.mirror.plan(
            *ids,
            messages,
            fork_from=fork_from,
            source=metadata.get("source"),
            step=int(metadata.get("step") or 0),
            parent_ids=parent_ids,
            fork_diff=diff,
        )
        return plan

    def _parent_ids(self, config: RunnableConfig, messages: Messages | None) -> Steps[Ids | None]:
        """With mirror_deletes: the message ids of the checkpoint this put builds on."""
        if not self.mirror.mirror_deletes or messages is None:
            return None
        cached = self.mirror.state_ids(config)
        if cached is not None:
            return cached
        if not (config.get("configurable") or {}).get("checkpoint_id"):
            return None
        parent = yield from call(self._io.get_tuple, config)
        if parent is None:
            return None
        messages = yield from self._channel.stored(parent)
        return ids_of(messages)

    # -- base capabilities ---------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return run_sync(self._get_tuple(config))

    def _get_tuple(self, config: RunnableConfig) -> Steps[CheckpointTuple | None]:
        """`get_tuple`, once: the saver's checkpoint, then the owner as storage has it now
        (read with the checkpoint's list where memory keeps it); refused when the reader is
        not the owner, None when memory has no such thread (orphaned checkpoints are
        nobody's)."""
        thread_id, resource_id = self.owners.reader(config)
        found = yield from call(self._io.get_tuple, config)
        thread, listed = yield from self._refs.with_thread(thread_id, found)
        owner = self.owners.seen(thread_id, thread)
        if resource_id is not None:
            verify_owner(thread_id, resource_id, owner)
        if owner is None:
            return None
        self._saw(thread_id, config, found)
        if found is not None and resource_id is not None:
            self.owners.check_passed(found.config, resource_id)
        resolved = yield from self._refs.resolved(found, listed=listed)
        checked: CheckpointTuple | None = stamped(resolved, owner)  # (its configs name the owner)
        return checked

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The wrapped saver's history of delta channels (its own fast query where it has
        one), for the thread's owner only."""
        owner = self.owners.check_owner(*self.owners.reader(config))
        if owner is None:  # orphaned checkpoints are nobody's: nothing to replay
            return {channel: {"writes": []} for channel in channels}
        return cast("Mapping[str, DeltaChannelHistory]", self._io.delta_history(config, channels))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        owner = await self.owners.acheck_owner(*self.owners.reader(config))
        if owner is None:
            return {channel: {"writes": []} for channel in channels}
        history: Mapping[str, DeltaChannelHistory] = await self._io.adelta_history(config, channels)
        return history

    def _saw(self, thread_id: str, config: RunnableConfig, found: CheckpointTuple | None) -> None:
        """Remember the thread's latest root checkpoint when a read returned it."""
        configurable = config.get("configurable") or {}
        latest = not configurable.get("checkpoint_id") and not configurable.get("checkpoint_ns")
        if found is not None and latest:
            state = self.mirror.thread(thread_id)
            if state.head != found.checkpoint["id"]:  # another writer moved it (a read-only
                state.warm = False  # one too): the next walk trusts no cache
            state.head = found.checkpoint["id"]

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The owner's checkpoints only. A listing of one thread checks its owner first
        (another resource's thread raises `ResourceMismatchError`; a thread memory no longer
        holds lists nothing: its checkpoints are nobody's). A listing without a thread keeps
        the threads of the resource the config names (all threads when it names none),
        reading each thread's owner once. Every checkpoint comes back whole (its ``messages``
        list put back from memory) and stamped with the owner it was checked against, so its
        config replays (`saver_io.stamped`)."""
        if target := self.owners.read_target(config):
            if (owner := self.owners.check_owner(*target)) is not None:  # else: nobody's
                scratch: dict[str, Any] = {}  # values read for one checkpoint serve the next
                for item in self.saver.list(config, filter=filter, before=before, limit=limit):
                    yield stamped(run_sync(self._refs.resolved(item, scratch)), owner)
            return
        owner = self.owners.list_owner(config)
        count = 0
        everyone = None if owner else config  # the owner's threads: read all, keep theirs
        owners: dict[str, str | None] = {}  # read once per thread for this listing
        for item in self.saver.list(
            everyone, filter=filter, before=before, limit=None if owner else limit
        ):
            if limit is not None and count >= limit:
                return
            thread_id = thread_of(item)
            if thread_id not in owners:
                owners[thread_id] = self.owners.owner(thread_id)
            if (found := owners[thread_id]) == owner or owner is None:
                count += 1
                yield stamped(run_sync(self._refs.resolved(item)), found)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return run_sync(self._owned_put(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        run_sync(self._put_writes(config, writes, task_id, task_path))

    def _owned_put(self, config: RunnableConfig, *args: Any) -> Steps[RunnableConfig]:
        """`_put`, its owner read left out after a check of its parent (`owners`); a thread
        its first write finds gone (deleted meanwhile, elsewhere) is put again as a new one,
        as an unchecked put would."""
        thread_id, resource_id = self.owners.ids(config)
        trusted = self._refs.enabled and self.owners.follows_check(config, resource_id)
        try:
            if trusted:  # its parent was checked a step ago
                result = yield from self._put(config, *args, owner=resource_id)
            else:
                result = yield from self._read_owner_and_put(config, thread_id, args)
        except ThreadNotFoundError:
            self.owners.forget_checks(thread_id)
            if not trusted:
                raise
            result = yield from self._read_owner_and_put(config, thread_id, args)
        except ResourceMismatchError:
            self.owners.forget_checks(thread_id)
            raise
        self.owners.check_passed(result, resource_id)
        return result

    def _read_owner_and_put(
        self, config: RunnableConfig, thread_id: str, args: tuple[Any, ...]
    ) -> Steps[RunnableConfig]:
        """`_put` after reading the owner now; a thread memory does not hold is put by one
        put at a time (`owners.FirstPuts`), which reads the owner again once it holds it."""
        owner = yield from call(self.owners.owner, thread_id)  # now: it may have changed hands
        if owner is not None:
            put: RunnableConfig = yield from self._put(config, *args, owner=owner)
            return put
        first_puts = self.owners.first_puts
        yield from call(first_puts.hold, thread_id)
        try:
            owner = yield from call(self.owners.owner, thread_id)  # made by another put?
            first: RunnableConfig = yield from self._put(config, *args, owner=owner)
            return first
        finally:
            first_puts.release(thread_id)

    def _put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        owner: str | None,
    ) -> Steps[RunnableConfig]:
        """`put`, once, by the thread's `owner` as `_owned_put` read or trusted it (None: not
        held yet): checks, plan (reads only), the owner row, the saver's write, then the mirror
        (whose failure warns and never aborts the graph run)."""
        io = self._io
        thread_id, resource_id = self.owners.ids(config)
        verify_owner(thread_id, resource_id, owner)
        messages = yield from self._root_messages(config, checkpoint, new_versions)
        new_thread = owner is None
        if new_thread:
            yield from call(io.purge_orphans, thread_id)
        latest = self._head(thread_id, config) if messages is not None else None
        if messages is not None and latest is None:  # not known here: ask the saver, and
            latest = yield from call(io.latest, thread_id)  # trust no cache: another writer
            self.mirror.thread(thread_id).warm = False  # (a read-only one too) may have moved it
        parent_ids = yield from self._parent_ids(config, messages)
        plan = yield from self._plan(
            (thread_id, resource_id), messages, config, metadata, new_versions, latest, parent_ids
        )
        if new_thread:  # the owner first, so the checkpoint is never orphaned
            made = yield from call(
                self.memory.storage.ensure_thread, thread_id=thread_id, resource_id=resource_id
            )
            verify_owner(thread_id, resource_id, made.resource_id)  # a racing owner
            self.mirror.observe(thread_id, made)
            state = self.mirror.thread(thread_id)  # made here: everything it will hold
            state.reset()  # passes through the mirror
            state.complete = True
        if self._read_only(config):  # the state is the graph's alone; what it adds now is
            if plan is not None and plan.suffix.ids:  # never a turn, later either
                yield from call(
                    self.memory.storage.withhold_messages,
                    plan.suffix.ids,
                    thread_id=thread_id,
                    resource_id=resource_id,
                )
            self.mirror.thread(thread_id).warm = False  # the next walk reads what was withheld
            plan = None
        beside = plan if plan is not None and plan.appends_only else None  # new turns: saved
        one_file = self._one_file if beside is not None else None
        together = one_file is not None
        encoded = self._refs.encoded(config, checkpoint, new_versions, resource_id)
        if together:  # the list is stored in the saver's transaction too
            args: tuple[Any, ...] = (config, lambda: run_sync(encoded), metadata, new_versions)
        else:
            args = (config, (yield from encoded), metadata, new_versions)
        try:  # while the saver writes, or in its transaction
            if one_file is not None and beside is not None:
                result = yield from call(one_file.put, self.mirror, beside, *args)
            elif beside is not None:
                result, _ = yield from both(
                    call(io.put, *args), self.mirror.safely(self.mirror.apply(beside), thread_id)
                )
            else:
                result = yield from call(io.put, *args)
        except Exception:
            if new_thread:  # the saver refused the thread's first checkpoint: memory as it was
                self.mirror.forget(thread_id)
                yield from call(self.memory.storage.delete_thread, thread_id)
            elif beside is not None and not together:  # turns saved beside a failed write
                yield from self.mirror.safely(self.mirror.undo(beside), thread_id)
            raise
        if messages is not None:
            self.mirror.after_put(thread_id, checkpoint["id"], messages)
            self._channel.after_put(thread_id, checkpoint)
        if plan is not None and beside is None:  # a fork, an edit or deletions: after the write
            yield from self.mirror.safely(self.mirror.apply(plan), thread_id)
        return owned_config(result, resource_id)

    def _put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Steps[None]:
        yield from call(self._io.put_writes, config, writes, task_id, task_path)
        subgraph = (config.get("configurable") or {}).get("checkpoint_ns")  # (not mirrored)
        ids = None if self._read_only(config) or subgraph else self.owners.ids(config)
        if ids is not None and (written := self.mirror.rewritten(ids[0], writes)):
            yield from self.mirror.safely(self.mirror.on_writes(*ids, written), ids[0])

    def _read_only(self, config: RunnableConfig) -> bool:
        """Whether the run saves nothing (a read-only memory, or ``memory_options``)."""
        return self.memory.writes.read_only or bool(call_options.of(config).read_only)

    def forget(self, thread_id: str) -> None:
        """Delete the thread's checkpoints from the wrapped saver (not its memory thread:
        `Memory.delete_thread` calls this for every checkpointer it made)."""
        self.saver.delete_thread(thread_id)
        self._forget_caches(thread_id)
        self.owners.forget_checks(thread_id)

    async def aforget(self, thread_id: str) -> None:
        """Async `forget`."""
        await on_saver(self.saver.delete_thread, thread_id)
        self._forget_caches(thread_id)
        self.owners.forget_checks(thread_id)

    def _forget_caches(self, thread_id: str) -> None:
        """What the parts remember of the thread (its checkpoints were deleted or rewritten)."""
        self.mirror.forget(thread_id)
        self._channel.forget(thread_id)
        self._refs.forget(thread_id)

    # -- maintenance: LangGraph Server's copy, rollback and pruning, and retention ---------
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints, and memory's thread with them (same owner only)."""
        run_sync(self.maintenance.copy(source_thread_id, target_thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await run_async(self.maintenance.copy(source_thread_id, target_thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and writes) of these runs; their new messages leave memory."""
        run_sync(self.maintenance.delete_runs(list(run_ids)))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await run_async(self.maintenance.delete_runs(list(run_ids)))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune the threads' checkpoints (``keep_latest``, or ``delete``: all of them); memory
        keeps their conversations."""
        run_sync(self.maintenance.prune(list(thread_ids), strategy))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await run_async(self.maintenance.prune(list(thread_ids), strategy))

    def prune_checkpoints(
        self, thread_id: str, *, before: datetime | None = None, keep: int | None = None
    ) -> int:
        """Delete the thread's checkpoints written before `before` and not among each
        namespace's newest `keep` (never a namespace's newest, nor an ancestor a kept one
        reads through); memory's lists follow. How many went."""
        return run_sync(self.maintenance.prune_checkpoints(thread_id, before, keep))

    async def aprune_checkpoints(
        self, thread_id: str, *, before: datetime | None = None, keep: int | None = None
    ) -> int:
        """Async `prune_checkpoints`."""
        return await run_async(self.maintenance.prune_checkpoints(thread_id, before, keep))

    def write_back(self, thread_id: str, *, saver: BaseCheckpointSaver[Any] | None = None) -> int:
        """Write a thread's checkpoints in the saver's own format, each ``messages`` list
        whole (memory keeps them once, `refs`): in place, or into another `saver` (leaving
        the package, or a copy for LangGraph alone). Checkpoint ids, parents, metadata and
        pending writes stay; returns how many checkpoints were written.

        Examples:
            >>> from langgraph.checkpoint.memory import InMemorySaver
            >>> from langchain_mastra_memory import Memory, SQLiteStorage
            >>> checkpointer = Memory(storage=SQLiteStorage(":memory:")).checkpointer()
            >>> checkpointer.write_back("no-such-thread", saver=InMemorySaver())
            0
        """
        return run_sync(self.maintenance.write_back(thread_id, saver))

    async def awrite_back(
        self, thread_id: str, *, saver: BaseCheckpointSaver[Any] | None = None
    ) -> int:
        """Async `write_back`."""
        return await run_async(self.maintenance.write_back(thread_id, saver))

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread everywhere, once (`Memory.delete_thread`): memory's thread, and
        its checkpoints in every checkpointer of the memory, this one included (registered
        when made), also when memory holds no such thread."""
        self.memory.delete_thread(thread_id)

    # -- async twins (the wrapped saver's own async methods, or its sync ones: `io.on_saver`) --
    async def _arun(self, steps: Steps[T]) -> T:
        """An algorithm of this checkpointer, awaited. Over a `SqliteSaver` on memory's own file
        (`OneFileWrites`) every step is a blocking SQLite call that would run on memory's I/O
        threads anyway, so the whole algorithm runs there at once: one trip to the pool instead
        of one a step (a turn made about ten, a third of them the checkpointer's). Any other
        saver's own async methods are awaited step by step."""
        if self._one_file is not None:
            return await in_io_pool(run_sync, steps)
        return await run_async(steps)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._arun(self._get_tuple(config))

    async def alist(  # (an async iterator, as BaseCheckpointSaver's)
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async `list`."""
        if target := self.owners.read_target(config):
            if (owner := await self.owners.acheck_owner(*target)) is not None:  # else: nobody's
                scratch: dict[str, Any] = {}
                async for item in self._io.saver_alist(config, filter, before, limit):
                    resolved = await run_async(self._refs.resolved(item, scratch))
                    yield stamped(resolved, owner)
            return
        owner = self.owners.list_owner(config)
        count = 0
        everyone = None if owner else config
        owners: dict[str, str | None] = {}  # read once per thread for this listing
        async for item in self._io.saver_alist(everyone, filter, before, None if owner else limit):
            if limit is not None and count >= limit:
                return
            thread_id = thread_of(item)
            if thread_id not in owners:
                owners[thread_id] = await self.owners.aowner(thread_id)
            if (found := owners[thread_id]) == owner or owner is None:
                count += 1
                yield stamped(await run_async(self._refs.resolved(item)), found)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._arun(self._owned_put(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._arun(self._put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self.memory.adelete_thread(thread_id)
