"""Memory inside a LangGraph graph: a pre-model hook / node that builds the model's input.

The hook reads the state's ``messages``, splits off the current turn (the last human message
and everything after it, the agent loop's tool traffic included), and returns
``{"llm_input_messages": [...]}``: working memory, recalled messages and the history shaped by
the processors, then the current turn untouched, as one provider-valid sequence. The stored
state is not rewritten: ``create_react_agent`` sends ``llm_input_messages`` to the model and
keeps ``messages`` as they are. When the state holds no earlier turns (a graph without a
checkpointer), the history comes from storage.

The hook saves nothing itself: ``memory.checkpointer()`` mirrors the graph's messages. Used
under any other checkpointer (or none), it warns once with `UnsavedTurnWarning`.
"""

from __future__ import annotations

import logging
import warnings
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.constants import CONFIG_KEY_CHECKPOINTER

from ..config import call_options
from ..errors import ConfigurationError, UnsavedTurnWarning
from ..messages import ensure_messages
from ..turn.context import split_turn

if TYPE_CHECKING:
    from ..memory import Memory

INPUT_KEY = "llm_input_messages"
logger = logging.getLogger(__name__)


def state_messages(state: Any, key: str = "messages") -> list[BaseMessage]:
    """The state's messages; a clear error when the state has none."""
    value = state.get(key) if isinstance(state, Mapping) else getattr(state, key, None)
    if value is None:
        msg = f"the graph state has no {key!r} key: memory works on a messages channel"
        raise ConfigurationError(msg)
    return ensure_messages(value, where=f"state[{key!r}]")


NS_SEP = "|"  # LangGraph's separator of namespace segments (``langgraph._internal``)


def in_subgraph(config: RunnableConfig) -> bool:
    """Whether the caller runs inside a graph that another graph's node or tool started: a
    sub-agent (deepagents' ``task`` tool, a fork included), a subgraph node, an agent invoked
    from a node. Its namespace has more than one ``node:task`` segment; a root graph's nodes
    have one. Such a run's turns are not the user's conversation (SPEC §3): the middleware
    and the hook save nothing of them and read no stored history for them, as
    `MemoryCheckpointer` mirrors root checkpoints only."""
    configurable = config.get("configurable") or {}
    return NS_SEP in str(configurable.get("checkpoint_ns") or "")


def saved_by_checkpointer(memory: Memory, config: RunnableConfig) -> bool:
    """Whether this graph run's own checkpointer is memory's (`MemoryCheckpointer` on the same
    storage) and the caller is a node of the root graph: then the checkpointer saves the turn
    with each checkpoint, and only what a checkpoint keeps (a reply whose checkpoint failed is
    not the state the graph resumes from, so memory must not keep it either)."""
    from .checkpointer import MemoryCheckpointer

    saver = (config.get("configurable") or {}).get(CONFIG_KEY_CHECKPOINTER)
    return (
        isinstance(saver, MemoryCheckpointer)
        and saver.memory.storage is memory.storage
        and not in_subgraph(config)
    )


def turn_plan(
    memory: Memory, messages: Sequence[BaseMessage], config: RunnableConfig, *, context: Any = None
) -> dict[str, Any]:
    """`Memory.context`'s arguments for a graph state's `messages`: the current turn (the last
    human message and what follows), the thread and owner by the package's rule, and the
    state's earlier messages as the history (in a sub-agent always, never the stored thread's,
    and read-only: nothing of the user's thread changes; in a root graph only when the state
    holds any: a graph without a checkpointer reads the stored history)."""
    thread_id, resource_id = memory.ids(config, context=context)
    history, current = split_turn(messages)
    nested = in_subgraph(config)
    return {
        "new_messages": current,
        "thread_id": thread_id,
        "resource_id": resource_id,
        "history": history if nested else history or None,
        "read_only": nested,
        "memory_options": call_options.of(config),
    }


_WARNED: weakref.WeakSet[Memory] = weakref.WeakSet()  # the memories warned about: once each


def warn_if_nothing_saves(
    memory: Memory, config: RunnableConfig, shape: str = "memory.pre_model_hook()"
) -> None:
    """Warn once per `memory` when `shape` runs in a graph whose checkpointer is not memory's,
    so nothing saves the conversation (the next thread would recall nothing): the hook in any
    graph; either shape inside a subgraph (whose turns they never save), unless deepagents
    marks it as a sub-agent (``ls_agent_type``): its parent's shapes keep the conversation."""
    from .checkpointer import MemoryCheckpointer

    configurable = config.get("configurable") or {}
    if CONFIG_KEY_CHECKPOINTER not in configurable:
        return  # not inside a graph run
    saver = configurable[CONFIG_KEY_CHECKPOINTER]
    nested = in_subgraph(config)
    if (
        isinstance(saver, MemoryCheckpointer)
        or (nested and configurable.get("ls_agent_type") == "subagent")
        or memory in _WARNED
    ):
        return
    _WARNED.add(memory)
    found = "no checkpointer" if saver is None else f"checkpointer {type(saver).__name__}"
    where = "a subgraph (a graph run from another graph's node or tool) of" if nested else "a"
    msg = (
        f"{shape} runs in {where} graph with {found}: nothing saves the conversation into "
        "memory (a subgraph's turns are not the user's conversation; the root graph's are), so "
        "later turns and threads recall nothing. Compile the root graph with "
        "checkpointer=memory.checkpointer(your_saver) (it wraps any LangGraph saver)."
    )
    logger.warning(msg)
    warnings.warn(msg, UnsavedTurnWarning, stacklevel=3)


def memory_hook(
    memory: Memory, *, key: str = "messages", output_key: str = INPUT_KEY
) -> Runnable[Any, dict[str, Any]]:
    """A node / ``pre_model_hook`` returning ``{output_key: messages for the model}``.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> hook = Memory(storage=SQLiteStorage(":memory:")).pre_model_hook()
        >>> config = {"configurable": {"thread_id": "t1", "resource_id": "alice"}}
        >>> out = hook.invoke({"messages": [HumanMessage("hi")]}, config)
        >>> [m.content for m in out["llm_input_messages"]]
        ['hi']
    """

    def plan(state: Any, config: RunnableConfig) -> dict[str, Any]:
        warn_if_nothing_saves(memory, config)
        return turn_plan(memory, state_messages(state, key), config)

    def build(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {output_key: memory.context(**plan(state, config))}

    async def abuild(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {output_key: await memory.acontext(**plan(state, config))}

    return RunnableLambda(build, afunc=abuild, name="MemoryPreModelHook")
