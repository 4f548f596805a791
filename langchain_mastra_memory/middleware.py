"""`MemoryMiddleware`: memory for ``langchain.agents.create_agent`` (needs the ``agents`` extra).

Before each model call it replaces the request's messages with memory's context (working
memory, recall and the processors, merged into the system message where they are system
messages); after each model call it saves the messages of the thread that memory does not hold
yet (the user's input, tool traffic, the model's answer). ``thread_id``/``resource_id`` come from
the run's ``config["configurable"]``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.config import get_config

from .graph import state_messages
from .turn import ids_from_config, split_new_input

if TYPE_CHECKING:
    from .memory import Memory


def _merge(request: ModelRequest, context: list[BaseMessage]) -> ModelRequest:
    systems = [m for m in context if isinstance(m, SystemMessage)]
    rest = [m for m in context if not isinstance(m, SystemMessage)]
    parts = [request.system_message.content] if request.system_message else []
    parts += [m.content for m in systems]
    text = "\n\n".join(p if isinstance(p, str) else str(p) for p in parts)
    return request.override(
        messages=rest,  # type: ignore[arg-type]  # BaseMessage subclasses, as AnyMessage lists
        system_message=SystemMessage(text) if text else None,
    )


class MemoryMiddleware(AgentMiddleware):
    """Agent middleware that applies memory before each model call and saves after it.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> model = FakeListChatModel(responses=["hi!"])
        >>> agent = create_agent(model, middleware=[memory.middleware()])
        >>> config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        >>> _ = agent.invoke({"messages": [("user", "hello")]}, config)
        >>> [m.content for m in memory.get_messages(thread_id="t1")]
        ['hello', 'hi!']
    """

    def __init__(self, memory: Memory) -> None:
        super().__init__()
        self.memory = memory

    @property
    def name(self) -> str:
        return "MemoryMiddleware"

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        thread_id, resource_id = ids_from_config(get_config())
        history, new = split_new_input(request.messages)
        context = self.memory.context(
            new, thread_id=thread_id, resource_id=resource_id, history=history
        )
        return handler(_merge(request, context))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        thread_id, resource_id = ids_from_config(get_config())
        history, new = split_new_input(request.messages)
        context = await self.memory.acontext(
            new, thread_id=thread_id, resource_id=resource_id, history=history
        )
        return await handler(_merge(request, context))

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        thread_id, resource_id = ids_from_config(get_config())
        self.memory.save_new(state_messages(state), thread_id=thread_id, resource_id=resource_id)
        return None

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        thread_id, resource_id = ids_from_config(get_config())
        await self.memory.asave_new(
            state_messages(state), thread_id=thread_id, resource_id=resource_id
        )
        return None
