"""LCEL shapes: memory as a Runnable that builds the context, and memory around a model/chain."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.config import ensure_config

from .turn import ids_from_config, input_messages, produced_messages, to_save

if TYPE_CHECKING:
    from .memory import Memory


def context_runnable(memory: Memory) -> Runnable[Any, list[BaseMessage]]:
    """``{"input": ...}`` -> working memory + recall + history + input (nothing is saved).

    Example:
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        >>> [m.content for m in memory.as_runnable().invoke({"input": "hi"}, config)]
        ['hi']
    """

    def build(value: Any, config: RunnableConfig) -> list[BaseMessage]:
        thread_id, resource_id = ids_from_config(config)
        history: list[BaseMessage] | None = None if memory.storage.get_thread(thread_id) else []
        return memory.context(
            input_messages(value), thread_id=thread_id, resource_id=resource_id, history=history
        )

    async def abuild(value: Any, config: RunnableConfig) -> list[BaseMessage]:
        thread_id, resource_id = ids_from_config(config)
        history: list[BaseMessage] | None = (
            None if await memory.storage.aget_thread(thread_id) else []
        )
        return await memory.acontext(
            input_messages(value), thread_id=thread_id, resource_id=resource_id, history=history
        )

    return RunnableLambda(build, afunc=abuild, name="MemoryContext")


class MemoryWrapped(Runnable[Any, Any]):
    """A model or chain with memory around it: assemble the context, call, save the turn.

    The wrapped runnable receives the message list; its output is returned unchanged. What it
    produced (an ``AIMessage``, a string, a list of messages, or a state with ``messages``) is
    saved with the new input; a stream is accumulated and saved when it ends.

    Example:
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> chat = memory.wrap(FakeListChatModel(responses=["hello!"]))
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

    # The thread is ensured once, in _prepare; saving then writes the turn directly.
    def _prepare(
        self, value: Any, config: RunnableConfig | None
    ) -> tuple[str, str, list[BaseMessage], list[BaseMessage]]:
        thread_id, resource_id = ids_from_config(config)
        new = input_messages(value)
        self.memory.ensure_thread(thread_id=thread_id, resource_id=resource_id)
        sent = self.memory.context(new, thread_id=thread_id, resource_id=resource_id)
        return thread_id, resource_id, new, sent

    async def _aprepare(
        self, value: Any, config: RunnableConfig | None
    ) -> tuple[str, str, list[BaseMessage], list[BaseMessage]]:
        thread_id, resource_id = ids_from_config(config)
        new = input_messages(value)
        await self.memory.aensure_thread(thread_id=thread_id, resource_id=resource_id)
        sent = await self.memory.acontext(new, thread_id=thread_id, resource_id=resource_id)
        return thread_id, resource_id, new, sent

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        config = ensure_config(config)
        thread_id, resource_id, new, sent = self._prepare(input, config)
        output = self.bound.invoke(sent, config, **kwargs)
        self.memory.save_messages(
            to_save([*new, *produced_messages(output, sent)]),
            thread_id=thread_id,
            resource_id=resource_id,
        )
        return output

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        config = ensure_config(config)
        thread_id, resource_id, new, sent = await self._aprepare(input, config)
        output = await self.bound.ainvoke(sent, config, **kwargs)
        await self.memory.asave_messages(
            to_save([*new, *produced_messages(output, sent)]),
            thread_id=thread_id,
            resource_id=resource_id,
        )
        return output

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        config = ensure_config(config)
        thread_id, resource_id, new, sent = self._prepare(input, config)
        total = None
        for chunk in self.bound.stream(sent, config, **kwargs):
            total = chunk if total is None else total + chunk
            yield chunk
        produced = produced_messages(total, sent) if total is not None else []
        self.memory.save_messages(
            to_save([*new, *produced]), thread_id=thread_id, resource_id=resource_id
        )

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        config = ensure_config(config)
        thread_id, resource_id, new, sent = await self._aprepare(input, config)
        total = None
        async for chunk in self.bound.astream(sent, config, **kwargs):
            total = chunk if total is None else total + chunk
            yield chunk
        produced = produced_messages(total, sent) if total is not None else []
        await self.memory.asave_messages(
            to_save([*new, *produced]), thread_id=thread_id, resource_id=resource_id
        )
