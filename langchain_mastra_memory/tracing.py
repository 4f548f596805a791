"""What memory did, in the traces people already read.

Each step memory takes for a turn (the whole assembly, the working-memory read, recall, and the
user's processors inside it) runs as a child run of the run it happens in, so LangSmith and any
LangChain tracer show it under the hook's, middleware's or chain's run; recall is a
``retriever`` run whose output is the recalled messages as Documents (score, thread, time).
When an OpenTelemetry tracer provider is configured, the same steps are spans. With neither,
a step costs one config lookup. Nothing in a run is another resource's: a run holds what the
step read for its own resource, as the context does.

`traced`: a `twins` step run as a child run (LangChain callbacks) and an OpenTelemetry span.

A step wrapped by `traced` is performed inside a child run of the current run (the run whose
config `ensure_config` finds: a hook's, a middleware's model call, a chain's). Runnables the
step invokes without a config (the user's processors) become children of that run in turn,
as LangChain nests a sequence's steps. A tracer that raises is logged and ignored: tracing
never breaks a turn.

Examples:
    >>> from langchain_mastra_memory.twins import call, run_sync
    >>> def answer():
    ...     return (yield from traced(call("hi".upper), "shout", inputs={"text": "hi"}))
    >>> run_sync(answer())  # no tracer: the step alone
    'HI'
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast

from langchain_core.callbacks.base import BaseCallbackManager
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import (
    ensure_config,
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    patch_config,
    set_config_context,
)
from langchain_core.runnables.utils import coro_with_context

if TYPE_CHECKING:
    from .twins import Both, Call, Steps


# its old submodules (a package until 0.2) still import, with a warning (`MOVED`)
__path__: list[str] = []

logger = logging.getLogger(__name__)

T = TypeVar("T")

RunType = Literal["chain", "retriever"]


@dataclass(frozen=True)
class Traced(Generic[T]):
    """A step (a `twins` call, `both`, or sub-algorithm) run as a named child run; its result
    (``yield from traced(...)``) is the inner step's."""

    inner: Any
    name: str
    run_type: RunType = "chain"
    inputs: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    outputs: Callable[[Any], Any] = lambda result: {"output": result}
    attributes: dict[str, Any] = field(default_factory=dict)  # OpenTelemetry's

    def __iter__(self) -> Generator[Traced[T], Any, T]:
        result: T = yield self
        return result

    def perform(self, perform: Callable[[Any], Any]) -> Any:
        """Run the inner step with `perform` (`twins`' sync runner) inside the run."""
        config = ensure_config()
        with _span(self) as span:
            run = None
            if _listened(config.get("callbacks")):
                manager = self._labelled(get_callback_manager_for_config(config))
                run = _quietly(partial(self._event, manager, "start", *self._start_args()))
            if run is None:
                return _recorded(span, self.outputs, perform(self.inner))
            child = patch_config(config, callbacks=run.get_child())
            try:
                with set_config_context(child) as context:
                    result = context.run(perform, self.inner)
            except BaseException as error:
                _quietly(partial(self._event, run, "error", error))
                raise
            output = _quietly(partial(self.outputs, result))
            _quietly(partial(self._event, run, "end", output))
            return _recorded(span, lambda _: output, result)

    async def aperform(self, aperform: Callable[[Any], Any]) -> Any:
        """Async `perform` (with `twins`' async runner)."""
        config = ensure_config()
        with _span(self) as span:
            run = None
            if _listened(config.get("callbacks")):
                manager = self._labelled(get_async_callback_manager_for_config(config))
                run = await _aquietly(self._event(manager, "start", *self._start_args()))
            if run is None:
                return _recorded(span, self.outputs, await aperform(self.inner))
            child = patch_config(config, callbacks=run.get_child())
            try:
                with set_config_context(child) as context:
                    result = await coro_with_context(aperform(self.inner), context)
            except BaseException as error:
                await _aquietly(self._event(run, "error", error))
                raise
            output = _quietly(partial(self.outputs, result))
            await _aquietly(self._event(run, "end", output))
            return _recorded(span, lambda _: output, result)

    # -- the callbacks (a coroutine from an async manager, awaited by `aperform`) ---------------
    def _labelled(self, manager: Any) -> Any:
        manager.add_tags(["langchain-mastra-memory"], inherit=False)
        manager.add_metadata(self.metadata, inherit=False)
        return manager

    def _start_args(self) -> tuple[Any, ...]:
        """``on_<type>_start``'s arguments: a retriever run takes its query, a chain its inputs."""
        if self.run_type == "retriever":
            return None, str(self.inputs.get("query", ""))
        return None, self.inputs

    def _event(self, target: Any, event: str, *args: Any) -> Any:
        """``target.on_<run type>_<event>(*args)``: ``on_chain_start``, ``on_retriever_end``..."""
        extra = {"name": self.name} if event == "start" else {}
        return getattr(target, f"on_{self.run_type}_{event}")(*args, **extra)


def _listened(callbacks: Any) -> bool:
    """Whether a handler listens to the run a step is in: LangChain configured the run's
    manager at its start (a tracer the environment turns on, LangSmith's, a debug handler all
    join it then), so a manager with no handler means no one listens, and a child run would
    cost its setup for nothing (about a tenth of memory's CPU a turn)."""
    if not callbacks:
        return False
    if isinstance(callbacks, list):
        return True
    return bool(
        getattr(callbacks, "handlers", True) or getattr(callbacks, "inheritable_handlers", None)
    )


def unheard(config: RunnableConfig) -> bool:
    """Whether `config` is a run's that nobody listens to: its callbacks are a manager LangChain
    configured (so the environment's tracers would have joined it) with no handler. A runnable
    of memory's called inside such a run skips LangChain's child-run setup; called on its own
    (no manager yet) it goes through LangChain, which may add the environment's tracers."""
    callbacks = config.get("callbacks")
    return isinstance(callbacks, BaseCallbackManager) and not _listened(callbacks)


def traced(
    step: Call[T] | Both[Any, Any] | Steps[T],
    name: str,
    *,
    run_type: RunType = "chain",
    inputs: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    outputs: Callable[[Any], Any] | None = None,
    attributes: dict[str, Any] | None = None,
) -> Traced[T]:
    """The step `step` run as a child run called `name` (``yield from traced(...)`` in a `twins`
    algorithm): `inputs` and `metadata` as the run shows them, `outputs` turns the step's result
    into the run's output (Documents for a ``retriever`` run), `attributes` are added to the
    OpenTelemetry span."""
    return Traced(
        step,
        name,
        run_type,
        inputs or {},
        metadata or {},
        outputs or (lambda result: {"output": result}),
        attributes or {},
    )


def _quietly(start: Callable[[], Any]) -> Any:
    try:
        return start()
    except Exception:  # a tracer that raises (raise_error=True) never breaks the turn
        logger.warning("a tracer failed; the memory step runs on untraced", exc_info=True)
        return None


async def _aquietly(awaitable: Any) -> Any:
    try:
        return await awaitable
    except Exception:
        logger.warning("a tracer failed; the memory step runs on untraced", exc_info=True)
        return None


# -- OpenTelemetry ---------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _tracer() -> Any:
    """Memory's OpenTelemetry tracer when the API is installed (else None): a proxy that
    reaches whichever provider is configured, now or later (a provider named by
    ``OTEL_PYTHON_TRACER_PROVIDER`` is loaded here, as `get_tracer_provider` loads it)."""
    try:
        from opentelemetry import trace
    except ImportError:  # the optional extra is not installed
        return None
    trace.get_tracer_provider()
    return trace.get_tracer("langchain_mastra_memory")


@contextmanager
def _span(step: Traced[Any]) -> Iterator[Any]:
    """The step's span, current while it runs, when a provider records it (else None: with
    no provider configured the proxy's span is a no-op one, and nothing is attached)."""
    tracer = _tracer()
    span = None if tracer is None else tracer.start_span(f"memory.{step.name}")
    if span is None or not span.is_recording():
        yield None
        return
    from opentelemetry import trace

    span.set_attributes(
        {
            **{k: v for k, v in step.attributes.items() if v is not None},
            **{f"langchain_mastra_memory.{k}": v for k, v in step.metadata.items() if _scalar(v)},
        }
    )
    with trace.use_span(span, end_on_exit=True):
        yield span


def _recorded(span: Any, output_of: Callable[[Any], Any], result: Any) -> Any:
    if span is not None:
        with suppress(Exception):
            output = output_of(result)
            if isinstance(output, list):
                span.set_attribute("langchain_mastra_memory.documents", len(output))
    return result


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def recall_run(
    windows: Any, query: str, *, mode: str, top_k: int, resource_id: str, thread_id: str | None
) -> Traced[Any]:
    """Recall's step as a ``retriever`` run: `windows` yields ``(found, hits)``; the run's output
    is the found messages as Documents (a hit's score, or a neighbour's ``hit: False``)."""
    return traced(
        windows,
        "recall",
        run_type="retriever",
        inputs={"query": query},
        metadata={"mode": mode, "top_k": top_k, "thread_id": thread_id, "resource_id": resource_id},
        outputs=lambda result: recalled_documents(*result),
        attributes={
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.top_k": top_k,
            "gen_ai.conversation.id": thread_id,
        },
    )


def recalled_documents(found: Any, hits: Any) -> list[Any]:
    """The recalled messages as LangChain Documents, as a retriever run shows them."""
    from langchain_core.documents import Document

    from .messages import mastra_role, message_text

    scores = {hit.message_id: hit.score for hit in hits}
    return [
        Document(
            page_content=message_text(s.message),
            id=s.message.id,
            metadata={
                "thread_id": s.thread_id,
                "created_at": s.created_at.isoformat(),
                "role": mastra_role(s.message),
                "hit": s.message.id in scores,
                **({"score": scores[s.message.id]} if s.message.id in scores else {}),
            },
        )
        for s in found
    ]


def stage(steps: Any, name: str) -> Traced[Any]:
    """One stage of a search (``vector``, ``keyword``, ``context``) as a child run: its
    duration is the stage's, its output how many hits it ranked and the best score."""
    return traced(
        steps,
        f"{name}_stage",
        outputs=lambda hits: {
            "hits": len(hits),
            "best_score": max((h.score for h in hits), default=None),
        },
    )


def detached_context() -> Any:
    """A copy of the caller's context for work a worker thread does later (a title, an
    Observer run): the caller's tracers and config, but no parent run, so that work is traced
    as a root run of its own (by the time it runs the turn's run has ended, and a tracer that
    keeps runs under their parents would drop a child of an ended run)."""
    import contextvars

    from langchain_core.runnables.config import var_child_runnable_config

    config = ensure_config()
    callbacks: Any = config.get("callbacks")
    handlers = list(getattr(callbacks, "inheritable_handlers", callbacks) or [])
    context = contextvars.copy_context()
    detached = cast("RunnableConfig", {**config, "callbacks": handlers})
    context.run(var_child_runnable_config.set, detached)
    return context


__all__ = ["Traced", "traced"]
