"""`MemoryMiddleware`: memory for ``langchain.agents.create_agent`` (needs the ``agents`` extra);
`MemoryContextMiddleware` the same without the saving, for an agent under ``memory.checkpointer()``.

Before each model call it replaces the request's messages with memory's context: the agent's
system message with memory's blocks (working memory, recalled conversations) merged into it,
the remembered history shaped by the processors, then the current turn (the last user message
and the agent loop's tool traffic since) untouched. After each model call it saves the messages
of the thread that memory does not hold yet (the user's input, tool traffic, the model's
answer), so it needs no checkpointer to remember; under ``memory.checkpointer()`` it leaves
that to the checkpointer, which saves what each checkpoint keeps (a run whose checkpoint
failed leaves memory as the state the graph resumes from). Ids follow the package's rule (`ids`),
including a ``context=`` carrying ``resource_id`` or ``user_id``.

In a sub-agent (a graph started by another graph's node or tool, deepagents' ``task``
included) it saves nothing and reads no stored history: the context is the user's working
memory and recall around the sub-agent's own messages, read-only (`graph.in_subgraph`). With
a model whose profile gives ``max_input_tokens``, memory's share of the request is bounded by
the model's input budget (below).

**Memory's share of a model call**, bounded by the model's profile (`within_budget`). Agent
middleware that compacts a conversation measures the request it is given: deepagents'
summarization (in ``wrap_model_call``: it summarizes at 85% of the profile's
``max_input_tokens`` and refuses more than its *input budget*, 95% of it less the output tokens
configured) and LangChain's ``SummarizationMiddleware`` (in ``before_model``, on the state).
Memory's middleware runs inside them and adds its blocks afterwards, where they cannot count
them. So memory bounds its own share: when the request it would send is over the model's input
budget (the same figure deepagents enforces, counted the way both summarizers count,
`count_tokens_approximately` with the tool schemas), it leaves out what it added, in this order,
until the request fits: the recalled messages, the history it brought from storage (oldest
first, a tool call with its results), then its system blocks (observations, then working
memory). It never removes what it was given: the caller's messages, a summary, the current turn.
A model without a profile is not bounded here (``message_tokens`` bounds memory by a count of
its own).

Examples:
    >>> from langchain_core.messages import HumanMessage, SystemMessage
    >>> from langchain_mastra_memory.messages import tag
    >>> given = [HumanMessage("hi", id="h1")]
    >>> sent = [tag(SystemMessage("remembered " * 400), "semantic_recall"), *given]
    >>> [m.content for m in within_budget(sent, given, budget=100, fixed=0)]
    ['hi']
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langgraph.config import get_config

from ..config import call_options
from ..errors import ConfigurationError
from ..messages import is_injected, source_of
from ..provider_rules import merge_system_messages
from ..turn.history import droppable_units
from .graph import (
    in_subgraph,
    saved_by_checkpointer,
    state_messages,
    turn_plan,
    warn_if_nothing_saves,
)
from .recall_tool import create_recall_tool

if TYPE_CHECKING:
    from ..memory import Memory


INPUT_SHARE = 0.95  # of max_input_tokens, as deepagents' input budget

OUTPUT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def input_budget(model: Any, settings: dict[str, Any] | None = None) -> int | None:
    """The tokens a request to `model` may hold: 95% of its profile's ``max_input_tokens``
    less the output tokens configured (in `settings` or on the model); None without a profile."""
    profile = getattr(model, "profile", None)
    limit = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    if not isinstance(limit, int) or isinstance(limit, bool):
        return None
    output = 0
    for key in OUTPUT_KEYS:
        value = (settings or {}).get(key, getattr(model, key, None))
        if isinstance(value, int) and not isinstance(value, bool):
            output = max(output, value)
    return max(0, int(limit * INPUT_SHARE) - output)


def tools_tokens(tools: Sequence[Any] | None) -> int:
    """What the tool schemas of a request count (once per call: converting them is the costly
    part of a count)."""
    return count_tokens_approximately([], tools=list(tools)) if tools else 0


def within_budget(
    context: Sequence[BaseMessage],
    given: Sequence[BaseMessage],
    *,
    budget: int,
    fixed: int,
    count: Callable[[Sequence[BaseMessage]], int] = count_tokens_approximately,
) -> list[BaseMessage]:
    """`context` (memory's assembled input; `given`: the messages the request came with)
    without as much of memory's share as it takes for the messages and `fixed` (the tools,
    the caller's system message when it is not in `context`) to count at most `budget`."""
    kept = list(context)
    if count(kept) + fixed <= budget:
        return kept
    for share in _shares(kept, given):
        if count(kept) + fixed <= budget:
            break
        kept = [m for m in kept if id(m) not in share]
    return kept


def _shares(context: list[BaseMessage], given: Sequence[BaseMessage]) -> list[set[int]]:
    """Memory's additions to `context` (neither injected nor `given`, by id or identity), as
    the groups to leave out first to last (object ids)."""
    given_ids = {m.id for m in given if m.id}
    given_objects = {id(m) for m in given}
    mine = [m for m in context if is_injected(m)]
    recalled = {id(m) for m in mine if source_of(m) == "semantic_recall"}
    brought = [
        m
        for m in context
        if not is_injected(m) and id(m) not in given_objects and m.id not in given_ids
    ]
    blocks = [{id(m)} for m in reversed(mine) if id(m) not in recalled]
    return [recalled, *(set(map(id, unit)) for unit in droppable_units(brought)), *blocks]


NAME = "langchain_mastra_memory.MemoryMiddleware"

"""The middleware's name: its graph nodes are ``NAME.before_agent`` and so on. Agent factories
merge middleware by name (deepagents' ``create_deep_agent`` replaces a default with the user's
middleware of the same name, and ships an AGENTS.md middleware called ``MemoryMiddleware``), so
the name is the package's own, taken by no middleware LangChain or deepagents ship."""


def _sent(request: ModelRequest, context: list[BaseMessage]) -> ModelRequest:
    """The request with memory's context, memory's share bounded by the model's profile
    (`within_budget`)."""
    budget = input_budget(request.model, request.model_settings)
    if budget is not None:
        caller = [request.system_message] if request.system_message is not None else []
        fixed = tools_tokens(request.tools) + (count_tokens_approximately(caller) if caller else 0)
        context = within_budget(context, request.messages, budget=budget, fixed=fixed)
    return _merge(request, context)


def _merge(request: ModelRequest, context: list[BaseMessage]) -> ModelRequest:
    systems = [m for m in context if isinstance(m, SystemMessage)]
    rest = [m for m in context if not isinstance(m, SystemMessage)]
    if request.system_message is not None:
        systems.insert(0, request.system_message)
    merged = merge_system_messages(systems)
    return request.override(
        messages=rest,  # type: ignore[arg-type]  # BaseMessage subclasses, as AnyMessage lists
        system_message=merged[0] if merged else None,  # type: ignore[arg-type]
    )


class MemoryContextMiddleware(AgentMiddleware):
    """Agent middleware that applies memory before each model call and saves nothing
    (``memory.middleware(save=False)``): for an agent compiled with ``memory.checkpointer()``,
    which saves each turn with its checkpoint. Defining no ``after_model`` hook, it adds no
    step after each model call (LangChain runs one for every middleware that defines it).

    Examples:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> from langchain_mastra_memory.testing import strict_model
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> agent = create_agent(strict_model(AIMessage("hi!")),
        ...                      middleware=[memory.middleware(save=False)],
        ...                      checkpointer=memory.checkpointer())
        >>> config = {"configurable": {"thread_id": "t1"}}
        >>> _ = agent.invoke({"messages": [("user", "hello")]}, config)
        >>> [m.content for m in memory.get_messages(thread_id="t1")]  # saved by the checkpointer
        ['hello', 'hi!']
    """

    saves = False  # (`MemoryMiddleware` saves after each model call)

    def __init__(self, memory: Memory) -> None:
        super().__init__()
        self.memory = memory
        observing = memory.writes.observations
        if observing is not None and observing.config.archive is not None:
            # rolling archives bring the recall tool, as Mastra's archive mode does: the
            # catalog in the context names archives only the tool can read
            self.tools = [create_recall_tool(memory)]

    @property
    def name(self) -> str:
        return NAME

    def _plan(self, request: ModelRequest) -> dict[str, Any]:
        config = get_config()
        if not self.saves:  # then only memory's checkpointer keeps the turns
            warn_if_nothing_saves(self.memory, config, "memory.middleware(save=False)")
        return turn_plan(self.memory, request.messages, config, context=_context(request.runtime))

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        return handler(_sent(request, self.memory.context(**self._plan(request))))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        return await handler(_sent(request, await self.memory.acontext(**self._plan(request))))


_SAVED_TWICE: weakref.WeakSet[Any] = weakref.WeakSet()  # memories warned of a needless step


class MemoryMiddleware(MemoryContextMiddleware):
    """Agent middleware that applies memory before each model call and saves after it.

    Under ``memory.checkpointer()`` it leaves the saving to the checkpointer (nothing is saved
    twice) and warns once that its after-model step then only costs time:
    ``memory.middleware(save=False)`` (`MemoryContextMiddleware`) is the one to use there.

    Examples:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.messages import AIMessage
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> from langchain_mastra_memory.testing import strict_model
        >>> memory = Memory(storage=SQLiteStorage(":memory:"))
        >>> agent = create_agent(strict_model(AIMessage("hi!")), middleware=[memory.middleware()])
        >>> config = {"configurable": {"thread_id": "t1"}}
        >>> _ = agent.invoke({"messages": [("user", "hello")]}, config)
        >>> [m.content for m in memory.get_messages(thread_id="t1")]
        ['hello', 'hi!']
    """

    saves = True

    def _save_to(self, runtime: Any) -> dict[str, Any] | None:
        """The thread, owner and call options to save under after a model call; None when the
        run's own checkpointer is memory's (it saves with each checkpoint instead)."""
        config = get_config()
        if in_subgraph(config):  # a sub-agent's turns are not the user's conversation
            warn_if_nothing_saves(self.memory, config, "memory.middleware()")
            return None
        if saved_by_checkpointer(self.memory, config):
            if self.memory not in _SAVED_TWICE:
                _SAVED_TWICE.add(self.memory)
                warnings.warn(
                    "memory.middleware() under memory.checkpointer(): the checkpointer saves "
                    "each turn, so the middleware's after-model step (LangChain adds one for "
                    "every middleware that defines the hook) saves nothing and only costs "
                    "time; use memory.middleware(save=False)",
                    UserWarning,
                    stacklevel=2,
                )
            return None
        thread_id, resource_id = self.memory.ids(config, context=_context(runtime))
        options = call_options.of(config)
        return {"thread_id": thread_id, "resource_id": resource_id, "memory_options": options}

    def after_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if (target := self._save_to(runtime)) is not None:
            self.memory.save_new(state_messages(state), **target)
        return None

    async def aafter_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if (target := self._save_to(runtime)) is not None:
            await self.memory.asave_new(state_messages(state), **target)
        return None


def _context(runtime: Any) -> Any:
    return getattr(runtime, "context", None)


def middleware_for(memory: Memory, *, save: bool = True) -> MemoryContextMiddleware:
    """`Memory.middleware`: the saving middleware, or (``save=False``) the applying one."""
    if not isinstance(save, bool):
        raise ConfigurationError(f"middleware(save=...) takes True or False, got {save!r}")
    return MemoryMiddleware(memory) if save else MemoryContextMiddleware(memory)
