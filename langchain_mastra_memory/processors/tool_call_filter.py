"""`ToolCallFilter`: remove tool calls and their results from remembered messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ..errors import ConfigurationError
from ..messages import without_tool_calls
from .base import MemoryProcessor


class ToolCallFilter(MemoryProcessor):
    """Remove tool calls and tool results (Mastra's ``ToolCallFilter``).

    ``ToolCallFilter()`` removes every tool call and every tool result; ``exclude=[names]``
    removes only the calls to those tools and their results (``exclude=[]`` changes nothing).
    An ``AIMessage`` keeps its text and its other calls (in ``tool_calls``, ``tool_use`` content
    blocks and the provider's raw ``additional_kwargs["tool_calls"]``) and is dropped when nothing
    is left. Unlike Mastra, which drops an assistant message with any tool call whole, the text
    the assistant wrote beside a call is kept. A ``ToolMessage`` whose call is not in the list
    is removed when its ``name`` is excluded (or in remove-all mode), and otherwise left alone.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> history = [
        ...     HumanMessage("draw a cat"),
        ...     AIMessage("Drawing.", tool_calls=[{"name": "draw", "args": {}, "id": "c1"}]),
        ...     ToolMessage("<png>", tool_call_id="c1"),
        ...     AIMessage("Here it is."),
        ... ]
        >>> [m.content for m in ToolCallFilter(exclude=["draw"]).invoke(history)]
        ['draw a cat', 'Drawing.', 'Here it is.']
    """

    name = "ToolCallFilter"

    def __init__(self, exclude: Sequence[str] | None = None) -> None:
        if exclude is not None and (
            isinstance(exclude, str) or not all(isinstance(n, str) for n in exclude)
        ):
            raise ConfigurationError(f"exclude must be a list of tool names, got {exclude!r}")
        self.exclude: frozenset[str] | None = None if exclude is None else frozenset(exclude)

    def __repr__(self) -> str:
        return (
            f"ToolCallFilter(exclude={sorted(self.exclude) if self.exclude is not None else None})"
        )

    def _excluded(self, name: str | None) -> bool:
        return self.exclude is None or (name is not None and name in self.exclude)

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """Filter `messages`; returns a new list (changed messages are copies)."""
        if self.exclude is not None and not self.exclude:
            return list(messages)
        removed_calls: set[str] = set()
        out: list[BaseMessage] = []
        for message in messages:
            if isinstance(message, ToolMessage):
                if message.tool_call_id in removed_calls or self._excluded(message.name):
                    continue
                out.append(message)
            elif isinstance(message, AIMessage):
                kept, removed = without_tool_calls(message, lambda name, _id: self._excluded(name))
                removed_calls.update(removed)
                if kept is not None:
                    out.append(kept)
            else:
                out.append(message)
        return out

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """CPU only: runs `process` inline."""
        return self.process(messages, **opts)
