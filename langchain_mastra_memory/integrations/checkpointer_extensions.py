"""The optional capabilities of a wrapped saver (``copy_thread``, ``delete_for_runs``,
``prune``): a `MemoryCheckpointer` has each one its saver has, and no other."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from ..errors import ResourceMismatchError

if TYPE_CHECKING:
    from ..memory import Memory


class _CopyThread:
    saver: BaseCheckpointSaver
    memory: Memory

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source = self.memory.storage.get_thread(source_thread_id)
        _copyable(source, self.memory.storage.get_thread(target_thread_id), target_thread_id)
        self.saver.copy_thread(source_thread_id, target_thread_id)
        if source and not self.memory.storage.get_thread(target_thread_id):
            self.memory.clone_thread(source_thread_id, new_thread_id=target_thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source = await self.memory.storage.aget_thread(source_thread_id)
        target = await self.memory.storage.aget_thread(target_thread_id)
        _copyable(source, target, target_thread_id)
        await self._inner("copy_thread", source_thread_id, target_thread_id)  # type: ignore[attr-defined]
        if source and not target:
            await self.memory.aclone_thread(source_thread_id, new_thread_id=target_thread_id)


def _copyable(source: Any, target: Any, target_thread_id: str) -> None:
    """A copy stays with its owner: checkpoints never land in another resource's thread."""
    if source is not None and target is not None and target.resource_id != source.resource_id:
        raise ResourceMismatchError.for_thread(target_thread_id, source.resource_id)


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


def class_for(base: type, inner: type) -> type:
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


def overrides(saver: BaseCheckpointSaver, method: str) -> bool:
    """Whether `saver` has its own `method` (not `BaseCheckpointSaver`'s default)."""
    return getattr(type(saver), method, None) is not getattr(BaseCheckpointSaver, method, None)
