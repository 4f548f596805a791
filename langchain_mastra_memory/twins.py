"""Write an algorithm once, run it sync or async: the I/O steps are yielded, not called.

An algorithm with I/O is a generator that yields `Call`s (``call(storage, "get_thread", id)``)
and receives their results. `run_sync` performs each call as is; `run_async` awaits the
``a``-prefixed twin of the same method (``aget_thread``), the naming LangChain and this package
use everywhere. An exception raised by a step is thrown into the generator where it yielded,
so the algorithm handles errors once too. A sync method and its async twin are then one-line
shells over the same logic, and the async one cannot block the event loop by accident.

Example:
    >>> import asyncio
    >>> class Store:
    ...     def get(self, key): return key.upper()
    ...     async def aget(self, key): return key.upper()
    >>> def greet(store):
    ...     name = yield call(store, "get", "ada")
    ...     return f"hello {name}"
    >>> run_sync(greet(Store())), asyncio.run(run_async(greet(Store())))
    ('hello ADA', 'hello ADA')
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One I/O step: ``target.name(*args, **kwargs)``, or awaited ``target.aname(...)``."""

    target: Any
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def call(target: Any, name: str, *args: Any, **kwargs: Any) -> Call:
    """The step calling `target`'s method `name` (its ``a``-twin when run async)."""
    return Call(target, name, args, kwargs)


Steps = Generator[Call, Any, T]


def run_sync(steps: Steps[T]) -> T:
    """Run the algorithm, calling each step's sync method."""
    try:
        step = next(steps)
        while True:
            try:
                result = getattr(step.target, step.name)(*step.args, **step.kwargs)
            except Exception as exc:  # the algorithm may handle it where it yielded
                step = steps.throw(exc)
            else:
                step = steps.send(result)
    except StopIteration as done:
        return done.value


async def run_async(steps: Steps[T]) -> T:
    """Run the algorithm, awaiting each step's ``a``-prefixed twin."""
    try:
        step = next(steps)
        while True:
            try:
                result = await getattr(step.target, "a" + step.name)(*step.args, **step.kwargs)
            except Exception as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(result)
    except StopIteration as done:
        return done.value
