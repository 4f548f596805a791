"""`ToolCallFilter`: remove tool calls and their results from remembered messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ..errors import ConfigurationError
from ..messages import TOOL_CALL_BLOCK_TYPES
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

    Example:
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
                kept = self._strip_calls(message, removed_calls)
                if kept is not None:
                    out.append(kept)
            else:
                out.append(message)
        return out

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        """CPU only: runs `process` inline."""
        return self.process(messages, **opts)

    def _strip_calls(self, message: AIMessage, removed: set[str]) -> AIMessage | None:
        calls = [c for c in message.tool_calls if self._excluded(c["name"])]
        bad = [c for c in message.invalid_tool_calls if self._excluded(c.get("name"))]
        content = message.content
        blocks: list[dict[str, Any]] = [
            b
            for b in (content if isinstance(content, list) else [])
            if isinstance(b, dict) and _is_call_block(b) and self._excluded(b.get("name"))
        ]
        raw = message.additional_kwargs.get("tool_calls") or []
        raw_removed = [r for r in raw if self._excluded((r.get("function") or {}).get("name"))]
        if not (calls or bad or blocks or raw_removed):
            return message
        removed.update(c["id"] for c in calls if c.get("id"))  # type: ignore[misc]
        removed.update(b["id"] for b in blocks if b.get("id"))
        removed.update(r["id"] for r in raw_removed if r.get("id"))
        new_content: str | list[Any] = (
            [b for b in content if not any(b is x for x in blocks)]
            if isinstance(content, list)
            else content
        )
        kwargs = dict(message.additional_kwargs)
        if raw_removed:
            remaining_raw = [r for r in raw if not any(r is x for x in raw_removed)]
            if remaining_raw:
                kwargs["tool_calls"] = remaining_raw
            else:
                kwargs.pop("tool_calls", None)
        stripped = message.model_copy(
            update={
                "content": new_content,
                "tool_calls": [c for c in message.tool_calls if c not in calls],
                "invalid_tool_calls": [c for c in message.invalid_tool_calls if c not in bad],
                "additional_kwargs": kwargs,
            }
        )
        if not stripped.tool_calls and not stripped.invalid_tool_calls and _is_empty(new_content):
            return None
        return stripped


def _is_call_block(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") in TOOL_CALL_BLOCK_TYPES


def _is_empty(content: str | list[Any]) -> bool:
    if isinstance(content, str):
        return not content.strip()
    for block in content:
        if isinstance(block, str):
            if block.strip():
                return False
        elif block.get("type") != "text" or str(block.get("text", "")).strip():
            return False
    return True
