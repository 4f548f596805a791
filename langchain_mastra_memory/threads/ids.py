"""Which thread and which owner a call is about: one resolution rule for every shape.

``thread_id`` is ``config["configurable"]["thread_id"]`` (LangGraph's convention). Behind
LangGraph Server with an auth handler, the owner is the caller's identity (the server's
``config["configurable"]["langgraph_auth_user_id"]``, or the run's
``runtime.server_info.user.identity``), and a config naming another owner is refused: a caller
cannot claim another user's memory by passing ``resource_id``. Otherwise the owner
(``resource_id``) is the first of:

1. ``config["configurable"]["resource_id"]``,
2. ``config["configurable"]["user_id"]``,
3. the run's LangGraph runtime context (``create_agent(..., context_schema=...)`` invoked with
   ``context=``): its ``resource_id`` or ``user_id`` attribute or key,
4. ``Memory(default_resource_id=...)`` (or ``memory.checkpointer(default_resource_id=...)``),
5. the thread id itself: the thread is its own owner, so a ``thread_id``-only config works, but
   cross-thread recall and resource-scoped working memory then have nothing to share.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from ..errors import ConfigurationError, ResourceMismatchError
from ..storage.records import Thread
from ..storage.validation import check_id

OWNER_KEYS = ("resource_id", "user_id")
IDENTITY_KEY = "langgraph_auth_user_id"  # LangGraph Server's authenticated caller


def _runtime() -> Any:
    """The LangGraph runtime of the run this is called in, as ``get_runtime`` reads it (from
    the run's config), or None: outside a run, or a run without one (read without raising:
    this is asked a few times a turn)."""
    if not var_child_runnable_config.get():  # outside a run: what get_runtime raises for
        return None
    try:
        return _get_runtime()()
    except Exception:  # no runtime in this run
        return None


@lru_cache(maxsize=1)
def _get_runtime() -> Callable[[], Any]:
    from langgraph.runtime import get_runtime  # (imported once, when first asked)

    return get_runtime


def runtime_context() -> Any:
    """The LangGraph runtime context of the current run (None outside a graph)."""
    return getattr(_runtime(), "context", None)


def caller_identity(config: RunnableConfig | None) -> str | None:
    """The identity LangGraph Server's auth gave the caller of this run (None without one)."""
    configurable = (config or {}).get("configurable") or {}
    identity = configurable.get(IDENTITY_KEY)
    if not identity:
        user = getattr(getattr(_runtime(), "server_info", None), "user", None)
        identity = _field(user, "identity") if user is not None else None
    return check_id(identity, IDENTITY_KEY) if identity else None


def _field(source: Any, key: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(key)
    return getattr(source, key, None)


def explicit_resource_id(
    config: RunnableConfig | None,
    *,
    default_resource_id: str | None = None,
    context: Any = None,
) -> str | None:
    """The owner named by the caller's identity or steps 1-4 of the rule, or None when nothing
    names one."""
    configurable = (config or {}).get("configurable") or {}
    if context is None:
        context = runtime_context()
    identity = caller_identity(config)
    for source in (configurable, context):
        if source is None:
            continue
        for key in OWNER_KEYS:
            value = _field(source, key)
            if value:
                named = check_id(value, key)  # an owner is a string: 42 and "42" are not one
                if identity is not None and named != identity:
                    msg = (
                        f"the caller is {identity!r} (LangGraph Server's auth), but the config "
                        f"names {key}={named!r}: a caller reaches its own memory only"
                    )
                    raise ResourceMismatchError(msg)
                return named
    return identity or default_resource_id


def resolve_ids(
    config: RunnableConfig | None,
    *,
    default_resource_id: str | None = None,
    context: Any = None,
) -> tuple[str, str]:
    """``(thread_id, resource_id)`` by the rule above; `ConfigurationError` without a thread.

    Examples:
        >>> resolve_ids({"configurable": {"thread_id": "t1", "user_id": "alice"}})
        ('t1', 'alice')
        >>> resolve_ids({"configurable": {"thread_id": "t1"}})
        ('t1', 't1')
    """
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if not thread_id:
        msg = (
            'memory needs config={"configurable": {"thread_id": ...}} (and optionally '
            '"resource_id" or "user_id"): thread_id is missing'
        )
        raise ConfigurationError(msg)
    resource_id = explicit_resource_id(
        config, default_resource_id=default_resource_id, context=context
    )
    return str(thread_id), resource_id or str(thread_id)


def ids_from_options(opts: Mapping[str, Any], *, processor: str) -> tuple[str | None, str]:
    """``(thread_id or None, resource_id)`` for a processor called with ``thread_id=`` /
    ``resource_id=`` options or a ``config``: the same rule, and an error naming `processor`
    when neither a thread nor an owner is known."""
    config = opts.get("config")
    configurable = (config or {}).get("configurable") or {}
    thread_id = opts.get("thread_id") or configurable.get("thread_id")
    given = opts.get("resource_id")
    resource_id = check_id(given, "resource_id") if given is not None else None
    resource_id = resource_id or explicit_resource_id(config) or thread_id
    if not resource_id:
        msg = (
            f'{processor} needs config={{"configurable": {{"thread_id": ...}}}} '
            '(and optionally "resource_id" or "user_id")'
        )
        raise ConfigurationError(msg)
    return (str(thread_id) if thread_id else None), str(resource_id)


def with_new_id(kwargs: Any, key: str) -> dict[str, Any]:
    """`kwargs` with a new UUID under `key` when it gives none."""
    given = kwargs.get(key)
    return {**kwargs, key: given if given is not None else str(uuid.uuid4())}


def verify_owner(thread_id: str, resource_id: str, owner: str | None) -> None:
    """Refuse a thread owned by another resource (a thread memory does not hold is free)."""
    if owner is not None and owner != resource_id:
        raise ResourceMismatchError.for_thread(thread_id, resource_id)


def visible_to(thread: Thread | None, resource_id: str | None) -> Thread | None:
    """`thread` if `resource_id` may see it (None for no owner given), else None."""
    return None if thread is None or resource_id not in (None, thread.resource_id) else thread


def tool_ids(
    run_config: RunnableConfig | None,
    *,
    thread_id: str | None = None,
    resource_id: str | None = None,
    default_resource_id: str | None = None,
) -> tuple[str | None, str | None]:
    """``(resource_id, thread_id)`` of a tool call: the tool's own fixed ids over the call's
    config (LangGraph passes the graph's config to tools), by the rule above; either may be
    None when nothing names it (a tool decides what it can do without)."""
    configurable = dict((run_config or {}).get("configurable") or {})
    configurable.update(
        {k: v for k, v in (("thread_id", thread_id), ("resource_id", resource_id)) if v}
    )
    if configurable.get("thread_id"):
        thread, owner = resolve_ids(
            {"configurable": configurable}, default_resource_id=default_resource_id
        )
        return owner, thread
    named = explicit_resource_id(
        {"configurable": configurable}, default_resource_id=default_resource_id
    )
    return named, None
