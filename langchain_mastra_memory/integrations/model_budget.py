"""Memory's share of a model call, bounded by the model's profile (for `MemoryMiddleware`).

Agent middleware that compacts a conversation measures the request it is given: deepagents'
summarization (in ``wrap_model_call``: it summarizes at 85% of the profile's
``max_input_tokens`` and refuses more than its *input budget*, 95% of it less the output
tokens configured) and LangChain's ``SummarizationMiddleware`` (in ``before_model``, on the
state). Memory's middleware runs inside them and adds its blocks afterwards, where they cannot
count them. So memory bounds its own share: when the request it would send is over the
model's input budget (the same figure deepagents enforces, counted the way both summarizers
count, `count_tokens_approximately` with the tool schemas), it leaves out what it added, in
this order, until the request fits: the recalled messages, the history it brought from
storage (oldest first, a tool call with its results), then its system blocks (observations,
then working memory). It never removes what it was given: the caller's messages, a summary,
the current turn. A model without a profile is not bounded here (``message_tokens`` bounds
memory by a count of its own).

Examples:
    >>> from langchain_core.messages import HumanMessage, SystemMessage
    >>> from langchain_mastra_memory.injected import tag
    >>> given = [HumanMessage("hi", id="h1")]
    >>> sent = [tag(SystemMessage("remembered " * 400), "semantic_recall"), *given]
    >>> [m.content for m in within_budget(sent, given, budget=100, fixed=0)]
    ['hi']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

from ..injected import is_injected, source_of
from ..turn.budget import droppable_units

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
