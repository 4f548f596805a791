"""`MemoryProcessor`: the base Runnable that every memory processor is."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config

from ..messages import MessageList, ensure_messages, ensure_sequence
from ..pools import in_io_pool
from ..tracing import unheard

Messages = Sequence[BaseMessage]


class MemoryProcessor(Runnable[Sequence[BaseMessage], list[BaseMessage]]):
    """A Runnable that turns a list of messages into a new list (Mastra's ``MemoryProcessor``).

    Subclasses set `name` and implement `process` (and `aprocess` when they do I/O). A
    processor never mutates its input list or the messages in it: it returns a new list and
    copies a message before changing it. ``invoke``/``ainvoke``/``batch``/``stream`` come from
    the Runnable machinery, keyword arguments of ``invoke`` reach `process` as options, and the
    ``config`` is passed too (``opts["config"]``) so that a processor can read
    ``config["configurable"]["thread_id"]``.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
        >>> class ConversationOnlyFilter(MemoryProcessor):
        ...     name = "ConversationOnlyFilter"
        ...     def process(self, messages, **opts):
        ...         return [m for m in messages if m.type in ("human", "ai")]
        >>> history = [SystemMessage("s"), HumanMessage("hi"), AIMessage("yo")]
        >>> ConversationOnlyFilter().invoke(history)
        [HumanMessage(content='hi', ...), AIMessage(content='yo', ...)]
    """

    name: str | None = None
    # True: `process` validates what it reads (not `invoke`) and never changes its input
    checks_each_message = False

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """Return the processed messages (a new list; the input is left untouched)."""
        raise NotImplementedError(f"{type(self).__name__} must implement process()")

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """Async `process`; by default runs `process` in a worker thread."""
        return await in_io_pool(lambda: self.process(messages, **opts))

    @property
    def InputType(self) -> type[Sequence[BaseMessage]]:
        return Sequence[BaseMessage]

    @property
    def OutputType(self) -> type[list[BaseMessage]]:
        return list[BaseMessage]

    def _checked(self, input: Sequence[BaseMessage]) -> list[BaseMessage]:
        where = f"{self.get_name()} input"
        if self.checks_each_message:
            if isinstance(input, MessageList):
                return input  # such a processor only reads its input: no 100k-item copy
            return ensure_sequence(input, where=where)
        return ensure_messages(input, where=where)

    def invoke(
        self, input: Sequence[BaseMessage], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Validate the messages and run `process` with callbacks and tracing (as a child run,
        unless it runs inside a run no handler listens to: `unheard`)."""
        messages = self._checked(input)
        config = ensure_config(config)
        if unheard(config):
            return self.process(messages, config=config, **kwargs)
        return self._call_with_config(
            lambda msgs, config: self.process(msgs, config=config, **kwargs),
            messages,
            config,
        )

    async def ainvoke(
        self, input: Sequence[BaseMessage], config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[BaseMessage]:
        """Async `invoke`."""
        messages = self._checked(input)
        config = ensure_config(config)
        if unheard(config):
            return await self.aprocess(messages, config=config, **kwargs)

        async def run(msgs: list[BaseMessage], config: RunnableConfig) -> list[BaseMessage]:
            return await self.aprocess(msgs, config=config, **kwargs)

        return await self._acall_with_config(run, messages, config)  # type: ignore[arg-type]


ProcessorFunc = Callable[..., list[BaseMessage]]
AsyncProcessorFunc = Callable[..., Awaitable[list[BaseMessage]]]


class FunctionProcessor(MemoryProcessor):
    """A processor made from a plain function (see `processor`)."""

    def __init__(
        self,
        func: ProcessorFunc | None = None,
        *,
        afunc: AsyncProcessorFunc | None = None,
        name: str | None = None,
    ) -> None:
        if func is None and afunc is None:
            raise TypeError("FunctionProcessor needs func or afunc")
        self.func, self.afunc = func, afunc
        base = func or afunc
        self.name = name or getattr(base, "__name__", None) or "FunctionProcessor"
        self._takes_opts = _accepts_kwargs(base)

    def _opts(self, opts: dict[str, Any]) -> dict[str, Any]:
        return opts if self._takes_opts else {}

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        if self.func is None:
            raise NotImplementedError(f"{self.name} is async only; use ainvoke")
        return list(self.func(messages, **self._opts(opts)))

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        if self.afunc is not None:
            return list(await self.afunc(messages, **self._opts(opts)))
        return await super().aprocess(messages, **opts)


def _accepts_kwargs(func: Callable[..., Any] | None) -> bool:
    if func is None:
        return False
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def processor(func: ProcessorFunc | None = None, *, name: str | None = None) -> Any:
    """Turn a function ``(messages) -> messages`` into a `MemoryProcessor` (usable as a decorator).

    An ``async def`` function becomes the async path. A function that accepts ``**opts`` receives
    the options (``config`` among them).

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
        >>> @processor(name="ConversationOnlyFilter")
        ... def conversation_only(messages):
        ...     return [m for m in messages if m.type in ("human", "ai")]
        >>> [m.content for m in conversation_only.invoke([SystemMessage("s"), HumanMessage("hi")])]
        ['hi']
    """

    def wrap(f: Callable[..., Any]) -> FunctionProcessor:
        if inspect.iscoroutinefunction(f):
            return FunctionProcessor(afunc=f, name=name)
        return FunctionProcessor(f, name=name)

    return wrap(func) if func is not None else wrap
