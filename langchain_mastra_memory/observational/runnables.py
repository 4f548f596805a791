"""`Observer` and `Reflector`: the two model calls of observational memory, as Runnables.

Each wraps any LangChain chat model. `Observer` reads messages not yet observed (with their
times) and the log so far, and returns the new entries; `Reflector` reads a log grown too long
and returns it condensed. Both return a `ParsedLog` (entries and current task) read by the
tolerant `parse_log`, so a malformed reply loses nothing it said. They hold no state: what to
observe, when, and where the result is stored belongs to the caller.

Examples:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> from langchain_core.messages import HumanMessage
    >>> model = FakeListChatModel(responses=["Date: 2026-11-22\\n- [high] User likes tea"])
    >>> Observer(model).invoke({"messages": [HumanMessage("I like tea")], "log": ""}).entries
    [Entry(date='2026-11-22', priority='high', text='User likes tea')]
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import ensure_config

from .models import chat_model
from .parse import ParsedLog, parse_log
from .prompts import (
    OBSERVER_INSTRUCTIONS,
    REFLECTOR_INSTRUCTIONS,
    observer_prompt,
    reflector_prompt,
)


def _check_model(model: Any, role: str) -> Any:
    """The model `role` calls: a chat model, a fallback chain (a list) or `ModelByInputTokens`."""
    return chat_model(model, role)


class Observer(Runnable[dict[str, Any], ParsedLog]):
    """``{"messages": [...], "times": [...] (optional), "log": "...", "working_memory": "..."
    (optional: the Observer may then rewrite it)}`` -> the new entries."""

    def __init__(
        self, model: Any, *, instructions: str = OBSERVER_INSTRUCTIONS,
        temporal_markers: bool = False,
    ) -> None:  # fmt: skip
        self.model = _check_model(model, "Observer")
        self.instructions = instructions
        self.temporal_markers = temporal_markers  # pauses marked in what it reads
        self.name = "Observer"

    def _prompt(self, value: dict[str, Any]) -> list[BaseMessage]:
        messages: Sequence[BaseMessage] = value["messages"]
        times: Sequence[datetime | None] = value.get("times") or [None] * len(messages)
        return observer_prompt(
            messages, times, value.get("log", ""), self.instructions,
            value.get("working_memory"), value.get("working_memory_shape", ""),
            self.temporal_markers, bool(value.get("suggest_title")),
        )  # fmt: skip

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ParsedLog:
        config = ensure_config(config)
        reply = self.model.invoke(self._prompt(input), config)
        return parse_log(reply.content)

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ParsedLog:
        config = ensure_config(config)
        reply = await self.model.ainvoke(self._prompt(input), config)
        return parse_log(reply.content)


class Reflector(Runnable[dict[str, Any], ParsedLog]):
    """``{"log": "..."}`` -> the log condensed."""

    def __init__(self, model: BaseChatModel, *, instructions: str = REFLECTOR_INSTRUCTIONS) -> None:
        self.model = _check_model(model, "Reflector")
        self.instructions = instructions
        self.name = "Reflector"

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ParsedLog:
        reply = self.model.invoke(reflector_prompt(input["log"], self.instructions), config)
        return parse_log(reply.content)

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ParsedLog:
        reply = await self.model.ainvoke(reflector_prompt(input["log"], self.instructions), config)
        return parse_log(reply.content)
