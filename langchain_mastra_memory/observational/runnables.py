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
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import ensure_config

from ..tokens.attachments import model_rule
from ..twins import Steps, call, run_async, run_sync
from .extractors import (
    Extraction,
    ResolvedExtractor,
    read_json_object,
    read_text_values,
    structured_request,
    text_sections,
)
from .models import chat_model
from .prompts import (
    OBSERVER_INSTRUCTIONS,
    REFLECTOR_INSTRUCTIONS,
    observer_prompt,
    reflector_prompt,
    with_text,
)
from .replies import ParsedLog, parse_log, reply_text


def _check_model(model: Any, role: str) -> Any:
    """The model `role` calls: a chat model, a fallback chain (a list) or `ModelByInputTokens`."""
    return chat_model(model, role)


class Observer(Runnable[dict[str, Any], ParsedLog]):
    """``{"messages": [...], "times": [...] (optional), "log": "...", "working_memory": "..."
    (optional: the Observer may then rewrite it), "extractors": [...], "extracted": {...},
    "extractor_context": ... (optional: `extractors`)}`` -> the new entries."""

    def __init__(
        self,
        model: Any,
        *,
        instructions: str = OBSERVER_INSTRUCTIONS,
        temporal_markers: bool = False,
    ) -> None:
        self.model = _check_model(model, "Observer")
        self.instructions = instructions
        self.temporal_markers = temporal_markers  # pauses marked in what it reads
        self.name = "Observer"

    def _prompt(self, value: dict[str, Any]) -> list[BaseMessage]:
        messages: Sequence[BaseMessage] = value["messages"]
        times: Sequence[datetime | None] = value.get("times") or [None] * len(messages)
        return observer_prompt(
            messages,
            times,
            value.get("log", ""),
            self.instructions,
            value.get("working_memory"),
            value.get("working_memory_shape", ""),
            self.temporal_markers,
            bool(value.get("suggest_title")),
            model_rule(value.get("observe_attachments", False), self.model),
        )

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ParsedLog:
        return run_sync(extracting_pass(self.model, self._prompt(input), input, config))

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ParsedLog:
        return await run_async(extracting_pass(self.model, self._prompt(input), input, config))


class Reflector(Runnable[dict[str, Any], ParsedLog]):
    """``{"log": "...", "extractors": [...], "extracted": {...}, "extractor_context": ...
    (the last three optional)}`` -> the log condensed."""

    def __init__(self, model: BaseChatModel, *, instructions: str = REFLECTOR_INSTRUCTIONS) -> None:
        self.model = _check_model(model, "Reflector")
        self.instructions = instructions
        self.name = "Reflector"

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ParsedLog:
        prompt = reflector_prompt(input["log"], self.instructions)
        return run_sync(extracting_pass(self.model, prompt, input, config))

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ParsedLog:
        prompt = reflector_prompt(input["log"], self.instructions)
        return await run_async(extracting_pass(self.model, prompt, input, config))


def extracting_pass(
    model: Any, prompt: list[BaseMessage], value: dict[str, Any], config: RunnableConfig | None
) -> Steps[ParsedLog]:
    """One Observer or Reflector call, and its extractors' values (`extractors`): text ones
    asked in the prompt and cut from the reply, structured ones in a follow-up turn of the
    same exchange (its whole prefix cached by the provider)."""
    config = ensure_config(config)
    extractors: list[ResolvedExtractor] = value.get("extractors") or []
    previous = value.get("extracted") or {}
    context = value.get("extractor_context")
    if section := text_sections(extractors, previous):
        prompt = [*prompt[:-1], with_text(prompt[-1], section)]
    reply = yield from call(model.invoke, prompt, config)
    text, raw = read_text_values(reply_text(reply.content), extractors)
    parsed = parse_log(text)
    if not extractors:
        return parsed
    parsed.extraction = Extraction()
    parsed.extraction.take(extractors, raw, context)
    source = context.source if context is not None else "observer"
    if request := structured_request(extractors, previous, source):
        structured = [e for e in extractors if e.schema is not None]
        follow_up = [*prompt, AIMessage(reply.content), HumanMessage(request)]
        try:
            answer = yield from call(model.invoke, follow_up, config)
            parsed.extraction.take(
                structured, read_json_object(reply_text(answer.content)), context
            )
        except Exception as exc:  # the observations stand; these values wait for the next pass
            parsed.extraction.failures.update({e.slug: str(exc) for e in structured})
    return parsed
