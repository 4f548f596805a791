"""Storage never blocks an event loop: the test mode that catches a sync call on a loop's
thread, and the worker-thread hop the ``a``-prefixed defaults take.

Examples:
    >>> with forbid_blocking_calls():
    ...     pass  # here a storage method called on a loop's thread raises BlockingCallError
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import BlockingCallError
from ..pools import in_io_pool

T = TypeVar("T")

_forbid_blocking = False


@contextmanager
def forbid_blocking_calls() -> Iterator[None]:
    """While active, a storage method called on a thread that runs an event loop raises
    `BlockingCallError` (a test mode: async code must use the ``a``-prefixed twins)."""
    global _forbid_blocking
    previous, _forbid_blocking = _forbid_blocking, True
    try:
        yield
    finally:
        _forbid_blocking = previous


def _check_not_on_loop(name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return  # no loop runs on this thread: blocking is fine here
    raise BlockingCallError(
        f"storage.{name}() blocked the event loop's thread; await storage.a{name}() instead"
    )


def _guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _forbid_blocking:
            _check_not_on_loop(method.__name__)
        return method(self, *args, **kwargs)

    guarded.__wrapped_storage__ = True  # type: ignore[attr-defined]
    return guarded


_SYNC_IO = (
    "setup",
    "close",
    "create_thread",
    "get_thread",
    "get_threads",
    "list_threads",
    "update_thread",
    "count_threads",
    "set_archived",
    "page_messages",
    "transfer_thread",
    "thread_stats",
    "delete_thread",
    "clone_thread",
    "save_messages",
    "list_messages",
    "get_messages_by_id",
    "update_messages",
    "delete_messages",
    "move_messages",
    "search_text",
    "message_windows",
    "message_neighbours",
    "unembedded",
    "mark_embedded",
    "embedded_ids",
    "get_working_memory",
    "modify_working_memory",
    "ensure_thread",
    "put_items",
    "get_items",
    "search_items",
    "item_namespaces",
    "nearest_items",
    "working_memories",
    "observation_log",
    "observations_as_of",
    "extracted_values",
    "save_extracted_values",
    "unobserved_messages",
    "unobserved_tokens",
    "claim_observation",
    "release_observation",
    "commit_observation",
    "activate_observations",
    "commit_reflection",
    "commit_archive",
    "observation_archives",
    "observation_archive",
    "save_checkpoint_list",
    "read_checkpoint_list",
    "copy_checkpoint_lists",
    "read_thread_and_checkpoint_list",
    "blank_checkpoint_values",
    "sweep_checkpoint_lists",
    "aged_messages",
    "idle_threads",
    "delete_aged_observations",
    "aged_items",
    "drop_observation_sources",
)


def guard_subclass(cls: type) -> None:
    for name in _SYNC_IO:
        method = cls.__dict__.get(name)
        if callable(method) and not getattr(method, "__wrapped_storage__", False):
            setattr(cls, name, _guarded(method))


async def off_loop(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a sync storage call on memory's I/O threads (`pools.io_pool`), never on the event
    loop's default executor."""
    return await in_io_pool(func, *args, **kwargs)
