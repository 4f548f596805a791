"""LCEL shapes: memory as a Runnable that builds the context, and memory around a model/chain."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.config import ensure_config

from ..config import call_options
from ..turn.context import input_messages, produced_messages
from ..turn.writes import to_save

if TYPE_CHECKING:
    from ..memory import Memory


def context_runnable(memory: Memory) -> Runnable[Any, list[BaseMessage]]:
    """``{"input": ...}`` -> working memory + recall + history + input (nothing is saved).

    Examples:
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        >>> [m.content for m in memory.as_runnable().invoke({"input": "hi"}, config)]
        ['hi']
    """

    def plan(value: Any, config: RunnableConfig) -> dict[str, Any]:
        thread_id, resource_id = memory.ids(config)
        return {
            "new_messages": input_messages(value),
            "thread_id": thread_id,
            "resource_id": resource_id,
            "memory_options": call_options.of(config),
        }

    def build(value: Any, config: RunnableConfig) -> list[BaseMessage]:
        return memory.context(**plan(value, config))

    async def abuild(value: Any, config: RunnableConfig) -> list[BaseMessage]:
        return await memory.acontext(**plan(value, config))

    return RunnableLambda(build, afunc=abuild, name="MemoryContext")


def observed(config: RunnableConfig) -> bool:
    """Whether anything listens to the runs of this call (a tracer, callbacks,
    ``astream_events``): only then are a turn's stages made child runs, as LangChain's own
    runnables make them. A run nobody receives costs ~0.3 ms of callback plumbing."""
    callbacks = config.get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        return bool(callbacks.handlers or callbacks.inheritable_handlers)
    return bool(callbacks)


class _Turn:
    """One wrapped call: who it is for, what is new, what was sent."""

    def __init__(self, memory: Memory, value: Any, config: RunnableConfig) -> None:
        self.memory = memory
        self.value = value
        self.thread_id, self.resource_id = memory.ids(config)
        self.options = call_options.of(config)  # the call's own (``memory_options``)
        self.saves = memory.writes.saves_turns(self.options)
        self.new = input_messages(value)
        self.sent: list[BaseMessage] = []

    def payload(self, bound: Runnable[Any, Any]) -> Any:
        """What the wrapped runnable receives: the messages, or the caller's dict with
        ``messages`` set (so prompt variables such as ``{language}`` pass through)."""
        if isinstance(self.value, Mapping) and not isinstance(bound, BaseLanguageModel):
            return {**self.value, "messages": self.sent}
        return self.sent

    def to_save(self, output: Any) -> list[BaseMessage]:
        produced = produced_messages(output, self.sent) if output is not None else []
        return to_save([*self.new, *produced])


class MemoryWrapped(Runnable[Any, Any]):
    """A model or chain with memory around it: assemble the context, call, save the turn.

    The input is a string, messages, or a dict with ``input`` (or ``messages``) and any other
    prompt variables. A chat model receives the assembled messages; any other runnable receives
    them too, or, when called with a dict, that dict with ``messages`` set to them. Its output
    is returned unchanged; what it produced (an ``AIMessage``, a string, a list of messages, or
    a state with ``messages``) is saved with the new input, a stream when it ends. The stages
    are named runs in a trace: ``MemoryContext`` (with each processor inside), the wrapped
    runnable, and ``MemorySave`` (made only when something receives runs).

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> from langchain_mastra_memory.testing import strict_model
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> chat = memory.wrap(strict_model(AIMessage("hello!")))
        >>> config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        >>> chat.invoke("hi", config).content
        'hello!'
        >>> [m.content for m in memory.get_messages(thread_id="t1")]
        ['hi', 'hello!']
    """

    def __init__(self, memory: Memory, bound: Runnable[Any, Any]) -> None:
        self.memory = memory
        self.bound = bound
        self.name = f"Memory({bound.get_name()})"
        self._context = context_runnable(memory)
        self._save = RunnableLambda(self._save_turn, afunc=self._asave_turn, name="MemorySave")
        memory.titles.offer_model(bound)  # titles by the wrapped model, unless one is named

    def _save_turn(self, turn: tuple[_Turn, Any]) -> list[BaseMessage]:
        call, output = turn  # the thread was ensured (and its owner checked) by _start
        if not call.saves:  # a read-only memory, or call
            return []
        return self.memory.save_messages(
            call.to_save(output), thread_id=call.thread_id, resource_id=call.resource_id
        )

    async def _asave_turn(self, turn: tuple[_Turn, Any]) -> list[BaseMessage]:
        call, output = turn
        if not call.saves:
            return []
        return await self.memory.asave_messages(
            call.to_save(output), thread_id=call.thread_id, resource_id=call.resource_id
        )

    def _start(self, value: Any, config: RunnableConfig) -> _Turn:
        turn = _Turn(self.memory, value, config)
        thread_id, resource_id = turn.thread_id, turn.resource_id
        if turn.saves:  # read-only: not even an empty thread
            self.memory.ensure_thread(thread_id=thread_id, resource_id=resource_id)
        if observed(config):
            turn.sent = self._context.invoke(turn.new, config)  # parsed once, by _Turn
        else:
            turn.sent = self.memory.context(
                turn.new, thread_id=thread_id, resource_id=resource_id, memory_options=turn.options
            )
        return turn

    async def _astart(self, value: Any, config: RunnableConfig) -> _Turn:
        turn = _Turn(self.memory, value, config)
        thread_id, resource_id = turn.thread_id, turn.resource_id
        if turn.saves:
            await self.memory.aensure_thread(thread_id=thread_id, resource_id=resource_id)
        if observed(config):
            turn.sent = await self._context.ainvoke(turn.new, config)
        else:
            turn.sent = await self.memory.acontext(
                turn.new, thread_id=thread_id, resource_id=resource_id, memory_options=turn.options
            )
        return turn

    def _finish(self, turn: _Turn, output: Any, config: RunnableConfig) -> None:
        if observed(config):
            self._save.invoke((turn, output), config)
        else:
            self._save_turn((turn, output))

    async def _afinish(self, turn: _Turn, output: Any, config: RunnableConfig) -> None:
        if observed(config):
            await self._save.ainvoke((turn, output), config)
        else:
            await self._asave_turn((turn, output))

    def _invoke(self, value: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        turn = self._start(value, config)
        output = self.bound.invoke(turn.payload(self.bound), config, **kwargs)
        self._finish(turn, output, config)
        return output

    async def _ainvoke(self, value: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        turn = await self._astart(value, config)
        output = await self.bound.ainvoke(turn.payload(self.bound), config, **kwargs)
        await self._afinish(turn, output, config)
        return output

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._call_with_config(
            lambda value, config: self._invoke(value, config, **kwargs),
            input,
            ensure_config(config),
        )

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        async def run(value: Any, run_manager: Any, config: RunnableConfig) -> Any:
            return await self._ainvoke(value, config, **kwargs)

        return await self._acall_with_config(run, input, ensure_config(config))

    def _stream(
        self, inputs: Iterator[Any], config: RunnableConfig, **kwargs: Any
    ) -> Iterator[Any]:
        turn = self._start(next(inputs), config)
        total = None
        for chunk in self.bound.stream(turn.payload(self.bound), config, **kwargs):
            total = chunk if total is None else total + chunk
            yield chunk
        self._finish(turn, total, config)

    async def _astream(
        self, inputs: AsyncIterator[Any], config: RunnableConfig, **kwargs: Any
    ) -> AsyncIterator[Any]:
        turn = await self._astart(await anext(inputs), config)
        total = None
        async for chunk in self.bound.astream(turn.payload(self.bound), config, **kwargs):
            total = chunk if total is None else total + chunk
            yield chunk
        await self._afinish(turn, total, config)

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        yield from self._transform_stream_with_config(
            iter([input]),
            lambda inputs, config: self._stream(inputs, config, **kwargs),
            ensure_config(config),
        )

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        async def one() -> AsyncIterator[Any]:
            yield input

        async for chunk in self._atransform_stream_with_config(
            one(),
            lambda inputs, config: self._astream(inputs, config, **kwargs),
            ensure_config(config),
        ):
            yield chunk
