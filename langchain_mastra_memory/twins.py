"""Write an algorithm once, run it sync or async: the I/O steps are yielded, not called.

An algorithm with I/O is a generator that yields `Call`s (``call(storage.get_thread, id)``: the
bound sync method and its arguments, which the type checker checks against it) and receives
their results, typed as the method's (``thread = yield from call(storage.get_thread, id)``).
`run_sync` performs each call as is; `run_async` awaits the ``a``-prefixed twin
of the same method on the same object (``storage.aget_thread``), the naming LangChain and this
package use everywhere. An exception raised by a step is thrown into the generator where it yielded,
so the algorithm handles errors once too. A sync method and its async twin are then one-line
shells over the same logic, and the async one cannot block the event loop by accident.
`both(a, b)` yields two independent steps (calls or whole sub-algorithms) that run at the
same time: on a worker thread beside the caller's when sync, gathered when async. A step with
``perform``/``aperform`` methods (`tracing.traced`) wraps another step: it is given the runner
to perform its inner step with, sync or async.

Examples:
    >>> import asyncio
    >>> class Store:
    ...     def get(self, key): return key.upper()
    ...     async def aget(self, key): return key.upper()
    >>> def greet(store):
    ...     name = yield from call(store.get, "ada")
    ...     return f"hello {name}"
    >>> run_sync(greet(Store())), asyncio.run(run_async(greet(Store())))
    ('hello ADA', 'hello ADA')
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from types import ModuleType
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, Union, cast

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
P = ParamSpec("P")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One I/O step: ``target.name(*args, **kwargs)``, or awaited ``target.aname(...)``; or,
    with `function`, that function called (awaited when it is a coroutine function, else run
    on memory's I/O threads). An algorithm takes its result with ``yield from``, typed as the
    method's: ``name: str = yield from call(store.get, "ada")``."""

    target: Any
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    function: Callable[..., Any] | None = None

    def __iter__(self) -> Generator[Call[T], Any, T]:
        result: T = yield self
        return result


def call(method: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Call[T]:
    """The step calling `method`, a bound method (``storage.get_thread``), with these arguments;
    run async, its ``a``-twin on the same object (``storage.aget_thread``). A plain function
    (one put on an object in place of its method, say) has no object to find a twin on: it is
    its own, run on memory's I/O threads when async."""
    target = getattr(method, "__self__", None)
    if isinstance(target, ModuleType):  # a builtin function: no twin, and no reason to wrap it
        raise TypeError(f"call() takes a bound method (obj.method), not {method!r}")
    if target is None or not hasattr(target, method.__name__):
        return Call(None, getattr(method, "__name__", ""), args, kwargs, function=method)
    return Call(target, method.__name__, args, kwargs)


def call_by_name(target: Any, name: str, *args: Any, **kwargs: Any) -> Call[Any]:
    """The step calling `target`'s method `name` (its ``a``-twin when run async), for a name
    chosen at run time; `call` everywhere else, so the type checker sees the method."""
    return Call(target, name, args, kwargs)


class Around(Protocol):
    """A step around another step (`tracing.traced`): given the runner, it performs its own."""

    def perform(self, perform: Callable[[Any], Any]) -> Any: ...

    async def aperform(self, aperform: Callable[[Any], Awaitable[Any]]) -> Any: ...


@dataclass(frozen=True)
class Both(Generic[A, B]):
    """Two independent steps run at the same time; the algorithm receives both results."""

    first: Call[A] | Around | Generator[Any, Any, A]
    second: Call[B] | Around | Generator[Any, Any, B]

    def __iter__(self) -> Generator[Both[A, B], Any, tuple[A, B]]:
        result: tuple[A, B] = yield self
        return result


def both(first: Call[A] | Around | Steps[A], second: Call[B] | Around | Steps[B]) -> Both[A, B]:
    """The step running `first` and `second` concurrently: ``a, b = yield from both(x, y)``. If
    either fails, its exception is thrown into the algorithm (after both have finished)."""
    return Both(first, second)


Step = Union[Call[Any], "Both[Any, Any]", Around]  # (a Union: evaluated at import time)
Steps = Generator[Step, Any, T]


@lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="langchain-mastra-memory")


def _perform(step: Any) -> Any:
    if isinstance(step, Call):
        method = step.function or getattr(step.target, step.name)
        return method(*step.args, **step.kwargs)
    if isinstance(step, Both):
        # in a copy of this thread's context: a traced step there reaches the same run
        context = contextvars.copy_context()
        second = _pool().submit(context.run, _perform, step.second)
        try:
            first = _perform(step.first)
        except Exception:
            if not second.cancel():
                second.exception()  # wait, so nothing runs on after the failure is reported
            raise
        if second.cancel():  # still queued (the pool is busy, maybe with this very caller's
            return first, context.run(_perform, step.second)  # parent): run it here instead
        return first, second.result()
    if hasattr(step, "perform"):  # a step around a step (tracing.traced)
        return step.perform(_perform)
    return run_sync(step)


async def _aperform(step: Any) -> Any:
    if isinstance(step, Call):
        if step.function is None:
            return await getattr(step.target, "a" + step.name)(*step.args, **step.kwargs)
        if inspect.iscoroutinefunction(step.function):
            return await step.function(*step.args, **step.kwargs)
        from .pools import in_io_pool  # (imported here: the pools build on LangChain)

        return await in_io_pool(step.function, *step.args, **step.kwargs)
    if isinstance(step, Both):
        results = await asyncio.gather(
            _aperform(step.first), _aperform(step.second), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return tuple(results)
    if hasattr(step, "aperform"):
        return await step.aperform(_aperform)
    return await run_async(step)


def run_sync(steps: Steps[T]) -> T:
    """Run the algorithm, calling each step's sync method."""
    try:
        step = next(steps)
        while True:
            try:
                result = _perform(step)
            except Exception as exc:  # the algorithm may handle it where it yielded
                step = steps.throw(exc)
            else:
                step = steps.send(result)
    except StopIteration as done:
        return cast("T", done.value)


async def run_async(steps: Steps[T]) -> T:
    """Run the algorithm, awaiting each step's ``a``-prefixed twin."""
    try:
        step = next(steps)
        while True:
            try:
                result = await _aperform(step)
            except Exception as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(result)
    except StopIteration as done:
        return cast("T", done.value)
