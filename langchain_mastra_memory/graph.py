"""Memory inside a LangGraph graph: a pre-model hook / node that builds the model's input.

The hook reads the state's ``messages`` (the thread so far, kept by the checkpointer), splits
off the new input (the messages after the last AI message), and returns
``{"llm_input_messages": [...]}``: working memory, recalled messages, the history shaped by
the processors, then the new input. The stored state is not rewritten: ``create_react_agent``
sends ``llm_input_messages`` to the model and keeps ``messages`` as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda

from .errors import ConfigurationError
from .messages import ensure_messages
from .turn import ids_from_config, split_new_input

if TYPE_CHECKING:
    from .memory import Memory

INPUT_KEY = "llm_input_messages"


def state_messages(state: Any, key: str = "messages") -> list[BaseMessage]:
    """The state's messages; a clear error when the state has none."""
    value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if value is None:
        msg = f"the graph state has no {key!r} key: memory works on a messages channel"
        raise ConfigurationError(msg)
    return ensure_messages(value, where=f"state[{key!r}]")


def memory_hook(
    memory: Memory, *, key: str = "messages", output_key: str = INPUT_KEY
) -> Runnable[Any, dict[str, Any]]:
    """A node / ``pre_model_hook`` returning ``{output_key: messages for the model}``.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> hook = Memory(storage=SQLiteStorage(":memory:")).pre_model_hook()
        >>> config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        >>> out = hook.invoke({"messages": [HumanMessage("hi")]}, config)
        >>> [m.content for m in out["llm_input_messages"]]
        ['hi']
    """

    def build(state: Any, config: RunnableConfig) -> dict[str, Any]:
        thread_id, resource_id = ids_from_config(config)
        history, new = split_new_input(state_messages(state, key))
        context = memory.context(new, thread_id=thread_id, resource_id=resource_id, history=history)
        return {output_key: context}

    async def abuild(state: Any, config: RunnableConfig) -> dict[str, Any]:
        thread_id, resource_id = ids_from_config(config)
        history, new = split_new_input(state_messages(state, key))
        context = await memory.acontext(
            new, thread_id=thread_id, resource_id=resource_id, history=history
        )
        return {output_key: context}

    return RunnableLambda(build, afunc=abuild, name="MemoryPreModelHook")
