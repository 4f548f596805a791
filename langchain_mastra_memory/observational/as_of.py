"""The observation log as it stood at a past moment (Mastra's ``getObservationsAsOf``).

Mastra filters the current log's text by the date of the messages each chunk observed. Here
the log keeps its history (groups are never deleted; a reflection marks what it replaced), and
each group records when it joined the log: an observation when it was activated, a reflection
when it was committed. So the answer is the log the model was shown at that moment, reflections
and buffering included, not the current text cut by message dates. Groups written before that
record existed count from their creation.

Examples:
    >>> from datetime import datetime, timezone
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> _ = memory.create_thread(thread_id="t1", resource_id="alice")
    >>> memory.observations_as_of(datetime.now(timezone.utc), thread_id="t1", resource_id="alice")
    []
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Literal

from ..errors import ConfigurationError, ResourceMismatchError, ThreadNotFoundError
from ..storage.base import MemoryStorage
from ..storage.records import ObservationGroup, scope_key
from ..storage.validation import check_id, check_optional_id
from ..twins import Steps, call

Scope = Literal["thread", "resource"]


def observations_as_of(
    storage: MemoryStorage,
    at: datetime,
    default_scope: Scope,
    *,
    resource_id: str,
    thread_id: str | None = None,
    scope: Scope | None = None,
) -> Steps[list[ObservationGroup]]:
    """Steps of the groups of the log (oldest first) that `resource_id` had at `at`, in
    `scope` (`owned_key`); a naive `at` is UTC."""
    if not isinstance(at, datetime):
        raise TypeError(f"at must be a datetime, got {type(at).__name__}")
    key = yield from owned_key(storage, default_scope, resource_id, thread_id, scope)
    moment = at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)
    groups: list[ObservationGroup] = yield from call(storage.observations_as_of, key, moment)
    return groups


def owned_key(
    storage: MemoryStorage,
    default_scope: Scope,
    resource_id: str,
    thread_id: str | None,
    scope: Scope | None,
) -> Steps[str]:
    """Steps of the observation scope key `resource_id` may read, in `scope` (else
    `default_scope`: the memory's); thread scope needs `thread_id`, which must exist
    (`ThreadNotFoundError`) and be the resource's (`ResourceMismatchError`)."""
    scope = default_scope if scope is None else scope
    check_id(resource_id, "resource_id")
    check_optional_id(thread_id, "thread_id")
    if scope not in ("thread", "resource"):
        raise ConfigurationError(f"scope must be 'thread' or 'resource', got {scope!r}")
    if thread_id is None and scope == "thread":
        raise ConfigurationError("a thread-scoped observation log needs thread_id")
    if thread_id is not None:
        thread = yield from call(storage.get_thread, thread_id)
        if thread is None:
            raise ThreadNotFoundError(f"no thread {thread_id!r}")
        if thread.resource_id != resource_id:
            raise ResourceMismatchError.for_thread(thread_id, resource_id)
    return scope_key(scope, resource_id=resource_id, thread_id=thread_id)
