"""Transform hooks around the Observer and the Reflector (Mastra's ``observationalMemory.hooks``
``beforeObservation``, ``afterObservation``, ``beforeReflection``, ``afterReflection``).

Each hook is called with keyword arguments and returns None (pass the input through) or a
replacement: the messages the Observer reads, the observations it wrote before they are kept,
the log the Reflector condenses, or its reflection before it is kept. Use them to redact what
reaches the Observer or what is stored. A hook may be a coroutine function. A hook that raises,
or returns the wrong kind of value, fails that pass before anything is committed: the messages
stay unobserved (or the log unreflected), a ``failed`` event says why, and the next save tries
again. Hooks run in memory's worker thread, never on the event loop.

Examples:
    >>> def redact(*, observations, **_):
    ...     return observations.replace("4111 1111 1111 1111", "[card]")
    >>> ObservationHooks(after_observation=redact).after_observation is redact
    True
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict


class ObservationHooks(BaseModel):
    """``observational_memory={"hooks": {...}}``: each a callable taking keyword arguments.

    - ``before_observation(messages=, thread_id=, resource_id=)``: the messages the Observer
      reads (a list of messages, or None). An empty list skips the Observer: the messages
      count as observed and nothing is written of them.
    - ``after_observation(observations=, thread_id=, resource_id=)``: the observations kept.
    - ``before_reflection(observations=, resource_id=)``: the log the Reflector condenses.
    - ``after_reflection(observations=, resource_id=)``: the reflection kept.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    before_observation: Callable[..., Any] | None = None
    after_observation: Callable[..., Any] | None = None
    before_reflection: Callable[..., Any] | None = None
    after_reflection: Callable[..., Any] | None = None


def _called(hook: Callable[..., Any], **inputs: Any) -> Any:
    result = hook(**inputs)
    if inspect.isawaitable(result):  # (the worker thread runs no event loop)
        result = asyncio.run(_awaited(result))
    return result


async def _awaited(result: Any) -> Any:
    return await result


def messages_hook(
    hooks: ObservationHooks | None, messages: Sequence[BaseMessage], **ids: Any
) -> list[BaseMessage]:
    """The messages the Observer reads: `before_observation`'s, or `messages`."""
    if hooks is None or hooks.before_observation is None:
        return list(messages)
    found = _called(hooks.before_observation, messages=list(messages), **ids)
    if found is None:
        return list(messages)
    if not isinstance(found, list) or not all(isinstance(m, BaseMessage) for m in found):
        raise TypeError(
            "observational_memory hooks.before_observation must return a list of LangChain "
            f"messages or None, got {type(found).__name__}"
        )
    return found


def text_hook(hooks: ObservationHooks | None, name: str, text: str, **ids: Any) -> str:
    """`text` through the hook `name` (``after_observation``, ``before_reflection``,
    ``after_reflection``): its replacement, or `text` when there is none or it returns None."""
    hook = getattr(hooks, name, None) if hooks is not None else None
    if hook is None:
        return text
    found = _called(hook, observations=text, **ids)
    if found is None:
        return text
    if not isinstance(found, str):
        raise TypeError(
            f"observational_memory hooks.{name} must return a string or None, got "
            f"{type(found).__name__}"
        )
    return found
