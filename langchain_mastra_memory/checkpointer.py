"""`MemoryCheckpointer`: any LangGraph saver, with each thread's messages mirrored into memory.

Checkpoints are stored by the wrapped saver (``InMemorySaver``, ``SqliteSaver``,
``PostgresSaver``, ...); every method delegates to it. On ``put`` the root graph's ``messages``
channel is mirrored into `Memory`: the thread is created on first sight for the
``resource_id`` in ``config["configurable"]``, and each message is saved once, by id, so graph
conversations get history, semantic recall and working memory and show up in the CLI.
``RemoveMessage`` writes delete the mirrored messages; ``delete_thread`` deletes the memory
thread too.

Checks happen before anything is written (a missing ``thread_id`` or ``resource_id``, a thread
of another resource, a ``messages`` channel holding non-messages), and the wrapped saver writes
first: if it raises, memory is untouched. A checkpoint without a ``messages`` channel, and
subgraph checkpoints (a non-empty ``checkpoint_ns``), pass through unmirrored.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from .errors import ConfigurationError, InvalidMessageError, ResourceMismatchError
from .messages import ensure_messages
from .processors.working_memory import is_injected
from .storage.sqlite import SQLiteStorage

if TYPE_CHECKING:
    from .memory import Memory

REMOVE_ALL = "__remove_all__"  # langgraph.graph.message.REMOVE_ALL_MESSAGES
Messages = list[BaseMessage]  # aliases: inside the class, `list` is the checkpointer method
Ids = list[str]


def default_saver(memory: Memory) -> BaseCheckpointSaver:
    """A SQLite saver on memory's own database file, or an in-memory saver."""
    storage = memory.storage
    if isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
        from langgraph.checkpoint.sqlite import SqliteSaver

        return SqliteSaver(sqlite3.connect(storage.path, check_same_thread=False))
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver()


def _overrides(saver: BaseCheckpointSaver, method: str) -> bool:
    return getattr(type(saver), method, None) is not getattr(BaseCheckpointSaver, method, None)


class MemoryCheckpointer(BaseCheckpointSaver):
    """A LangGraph checkpointer that also keeps the conversation in `Memory`.

    Example:
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

    def __new__(
        cls, memory: Memory, saver: BaseCheckpointSaver | None = None, **kwargs: Any
    ) -> Any:
        inner = saver if saver is not None else default_saver(memory)
        klass = _class_for(cls, type(inner))
        instance: MemoryCheckpointer = super().__new__(klass)
        instance.__dict__["_pending_inner"] = inner
        return instance

    def __init__(
        self,
        memory: Memory,
        saver: BaseCheckpointSaver | None = None,
        *,
        messages_key: str = "messages",
        default_resource_id: str | None = None,
    ) -> None:
        self.memory = memory
        self.saver: BaseCheckpointSaver = self.__dict__.pop("_pending_inner")
        super().__init__(serde=self.saver.serde)
        self.messages_key = messages_key
        self.default_resource_id = default_resource_id
        self._known: OrderedDict[str, set[str]] = OrderedDict()
        self._owners: dict[str, str] = {}  # threads whose owner was checked in storage

    def __repr__(self) -> str:
        return f"MemoryCheckpointer(saver={type(self.saver).__name__})"

    @property
    def config_specs(self) -> list:
        return self.saver.config_specs

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.saver.get_next_version(current, channel)

    # -- mirroring -----------------------------------------------------------------------------
    def _target(self, config: RunnableConfig) -> tuple[str, str] | None:
        configurable = config.get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if not thread_id:
            raise ConfigurationError('a checkpointer needs config["configurable"]["thread_id"]')
        if configurable.get("checkpoint_ns"):
            return None  # a subgraph: its messages are not the conversation
        resource_id = configurable.get("resource_id") or self.default_resource_id
        if not resource_id:
            msg = (
                'memory needs config["configurable"]["resource_id"] (the owner of the thread), '
                "or MemoryCheckpointer(default_resource_id=...)"
            )
            raise ConfigurationError(msg)
        return str(thread_id), str(resource_id)

    def _messages(self, checkpoint: Checkpoint) -> Messages | None:
        values = checkpoint.get("channel_values") or {}
        if self.messages_key not in values:
            return None
        raw = values[self.messages_key]
        if not isinstance(raw, (list, tuple)):
            msg = (
                f"the {self.messages_key!r} channel holds a {type(raw).__name__}, not a list of "
                "messages; pass messages_key= to mirror another channel"
            )
            raise InvalidMessageError(msg)
        return ensure_messages(raw, where=f"the {self.messages_key!r} channel")

    def _check_owner(self, thread_id: str, resource_id: str) -> None:
        if self._owners.get(thread_id) == resource_id:
            return
        thread = self.memory.storage.get_thread(thread_id)
        if thread is not None and thread.resource_id != resource_id:
            raise ResourceMismatchError(f"thread {thread_id!r} belongs to another resource")
        if thread is not None:
            self._owners[thread_id] = resource_id

    def _prepare_put(
        self, config: RunnableConfig, checkpoint: Checkpoint
    ) -> tuple[str, str, Messages] | None:
        target = self._target(config)
        if target is None:
            return None
        messages = self._messages(checkpoint)
        if messages is None:
            return None
        self._check_owner(*target)
        return target[0], target[1], messages

    def _unsaved(self, thread_id: str, resource_id: str, messages: Messages) -> Messages:
        known = self._known.get(thread_id)
        if known is None:
            ids = [m.id for m in messages if m.id]
            stored = (
                self.memory.storage.get_messages_by_id(ids, resource_id=resource_id) if ids else []
            )
            known = {s.message.id for s in stored if s.message.id}
            self._known[thread_id] = known
            if len(self._known) > 10_000:
                self._known.popitem(last=False)
        self._known.move_to_end(thread_id)
        return [m for m in messages if m.id not in known and not is_injected(m)]

    def _remember(self, thread_id: str, saved: Sequence[BaseMessage]) -> None:
        self._known.setdefault(thread_id, set()).update(m.id for m in saved if m.id)

    def _removals(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]]
    ) -> tuple[str, str, Ids] | None:
        removed: Ids = []
        for channel, value in writes:
            if channel != self.messages_key:
                continue
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(item, RemoveMessage) and item.id:
                    removed.append(item.id)
        if not removed:
            return None
        target = self._target(config)
        if target is None:
            return None
        return target[0], target[1], removed

    # -- base capabilities ---------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.saver.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        return self.saver.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        mirror = self._prepare_put(config, checkpoint)
        result = self.saver.put(config, checkpoint, metadata, new_versions)
        if mirror is not None:
            thread_id, resource_id, messages = mirror
            if new := self._unsaved(thread_id, resource_id, messages):
                if thread_id in self._owners:
                    saved = self.memory.save_messages(
                        new, thread_id=thread_id, resource_id=resource_id
                    )
                else:
                    saved = self.memory.save_turn(new, thread_id=thread_id, resource_id=resource_id)
                    self._owners[thread_id] = resource_id
                self._remember(thread_id, saved)
        return result

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        removals = self._removals(config, writes)
        self.saver.put_writes(config, writes, task_id, task_path)
        if removals is not None:
            self._apply_removals(*removals)

    def _apply_removals(self, thread_id: str, resource_id: str, ids: Ids) -> None:
        if self.memory.storage.get_thread(thread_id) is None:
            return
        if REMOVE_ALL in ids:
            ids = [
                m.id
                for m in self.memory.get_messages(thread_id=thread_id, resource_id=resource_id)
                if m.id
            ]
        self.memory.delete_messages(ids, resource_id=resource_id)
        self._known.get(thread_id, set()).difference_update(ids)

    def delete_thread(self, thread_id: str) -> None:
        self.saver.delete_thread(thread_id)
        self.memory.delete_thread(thread_id)
        self._known.pop(thread_id, None)
        self._owners.pop(thread_id, None)

    # -- async twins: the inner saver's own async methods, or its sync ones in a worker thread ---
    async def _inner(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if _overrides(self.saver, "a" + method):
            try:
                return await getattr(self.saver, "a" + method)(*args, **kwargs)
            except NotImplementedError:  # e.g. SqliteSaver: sync only
                pass
        return await run_in_executor(None, lambda: getattr(self.saver, method)(*args, **kwargs))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._inner("get_tuple", config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        if _overrides(self.saver, "alist"):
            try:
                async for item in self.saver.alist(
                    config, filter=filter, before=before, limit=limit
                ):
                    yield item
                return
            except NotImplementedError:  # raised before the first item by sync-only savers
                pass
        items = await run_in_executor(
            None, lambda: [*self.saver.list(config, filter=filter, before=before, limit=limit)]
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        mirror = await run_in_executor(None, self._prepare_put, config, checkpoint)
        result = await self._inner("put", config, checkpoint, metadata, new_versions)
        if mirror is not None:
            thread_id, resource_id, messages = mirror
            new = await run_in_executor(None, self._unsaved, thread_id, resource_id, messages)
            if new:
                saved = await self.memory.asave_turn(
                    new, thread_id=thread_id, resource_id=resource_id
                )
                self._remember(thread_id, saved)
        return result

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        removals = self._removals(config, writes)
        await self._inner("put_writes", config, writes, task_id, task_path)
        if removals is not None:
            await run_in_executor(None, self._apply_removals, *removals)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._inner("delete_thread", thread_id)
        await self.memory.adelete_thread(thread_id)
        self._known.pop(thread_id, None)
        self._owners.pop(thread_id, None)


class _CopyThread:
    saver: BaseCheckpointSaver
    memory: Memory

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.saver.copy_thread(source_thread_id, target_thread_id)
        if self.memory.storage.get_thread(source_thread_id) and not self.memory.storage.get_thread(
            target_thread_id
        ):
            self.memory.clone_thread(source_thread_id, new_thread_id=target_thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._inner("copy_thread", source_thread_id, target_thread_id)  # type: ignore[attr-defined]
        if await self.memory.storage.aget_thread(
            source_thread_id
        ) and not await self.memory.storage.aget_thread(target_thread_id):
            await self.memory.aclone_thread(source_thread_id, new_thread_id=target_thread_id)


class _DeleteForRuns:
    saver: BaseCheckpointSaver

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.saver.delete_for_runs(run_ids)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._inner("delete_for_runs", run_ids)  # type: ignore[attr-defined]


class _Prune:
    saver: BaseCheckpointSaver

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.saver.prune(thread_ids, strategy=strategy)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._inner("prune", thread_ids, strategy=strategy)  # type: ignore[attr-defined]


_EXTENSIONS = {"copy_thread": _CopyThread, "delete_for_runs": _DeleteForRuns, "prune": _Prune}
_classes: dict[tuple[type, type], type] = {}


def _class_for(base: type, inner: type) -> type:
    """`base` plus the optional capabilities (copy_thread, delete_for_runs, prune) `inner` has."""
    key = (base, inner)
    if key not in _classes:
        mixins = tuple(
            mixin
            for method, mixin in _EXTENSIONS.items()
            if getattr(inner, method, None) is not getattr(BaseCheckpointSaver, method)
            or getattr(inner, "a" + method, None) is not getattr(BaseCheckpointSaver, "a" + method)
        )
        _classes[key] = (
            type(base.__name__, (*mixins, base), {"__module__": base.__module__})
            if mixins
            else base
        )
    return _classes[key]
