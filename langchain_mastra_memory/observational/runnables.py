"""The models observational memory runs on: one chat model, a fallback chain, or a model chosen
by the size of its input (Mastra's ``ModelByInputTokens``).

A list is a fallback chain (LangChain's ``with_fallbacks``): when a model raises, the next one
answers the same prompt, so an outage or a rate limit at one provider does not stop
observation. `ModelByInputTokens` sends each prompt to the smallest model whose bound holds it
(a cheap model for a short batch, a long-context one for a long log); past the largest bound,
the largest's model. Every model only ever sees the prompt of the scope it was called for.

Examples:
    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> small = FakeListChatModel(responses=["small"])
    >>> large = FakeListChatModel(responses=["large"])
    >>> pick = ModelByInputTokens(up_to={100: small, 100_000: large})
    >>> pick.invoke("hello").content, pick.invoke("word " * 500).content
    ('small', 'large')

Transform hooks around the Observer and the Reflector (Mastra's ``observationalMemory.hooks``
``beforeObservation``, ``afterObservation``, ``beforeReflection``, ``afterReflection``).

Each hook is called with keyword arguments and returns None (pass the input through) or a
replacement: the messages the Observer reads, the observations it wrote before they are kept,
the log the Reflector condenses, or its reflection before it is kept. Use them to redact what
reaches the Observer or what is stored. A hook may be a coroutine function. A hook that raises,
or returns the wrong kind of value, fails that pass before anything is committed: the messages
stay unobserved (or the log unreflected), a ``failed`` event says why, and the next save tries
again. Hooks run in memory's worker thread, never on the event loop.

Examples:
    >>> def redact(*, observations, **_):
    ...     return observations.replace("4111 1111 1111 1111", "[card]")
    >>> ObservationHooks(after_observation=redact).after_observation is redact
    True

`Observer` and `Reflector`: the two model calls of observational memory, as Runnables.

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

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import ensure_config
from langchain_core.runnables.fallbacks import RunnableWithFallbacks
from pydantic import BaseModel, ConfigDict

from ..errors import ConfigurationError
from ..storage.validation import is_count
from ..tokens.attachments import model_rule
from ..tokens.counting import TokenCounter
from ..twins import Steps, call, run_async, run_sync
from .extractors import (
    Extraction,
    ResolvedExtractor,
    read_json_object,
    read_text_values,
    structured_request,
    text_sections,
)
from .prompts import (
    OBSERVER_INSTRUCTIONS,
    REFLECTOR_INSTRUCTIONS,
    observer_prompt,
    reflector_prompt,
    with_text,
)
from .replies import ParsedLog, parse_log, reply_text


class ModelByInputTokens(Runnable[Any, BaseMessage]):
    """A chat model chosen per call by the input's tokens: ``up_to={bound: model, ...}``."""

    def __init__(self, up_to: Mapping[int, Any], *, encoding: str | None = None) -> None:
        if not up_to:
            raise ConfigurationError("ModelByInputTokens(up_to=...) needs at least one model")
        for bound, model in up_to.items():
            if not is_count(bound, at_least=1):
                msg = f"ModelByInputTokens: a bound must be a positive int, got {bound!r}"
                raise ConfigurationError(msg)
            if not isinstance(model, BaseChatModel):
                raise ConfigurationError(
                    f"ModelByInputTokens: the model up to {bound} tokens must be a LangChain "
                    f"chat model, got {type(model).__name__}"
                )
        self.up_to = dict(sorted(up_to.items()))
        self.counter = TokenCounter(encoding)

    def choose(self, input: Any) -> BaseChatModel:
        """The model for `input` (messages, a prompt value or a string)."""
        if isinstance(input, PromptValue):
            input = input.to_messages()
        if isinstance(input, str):
            size = float(len(self.counter.encoding.encode_ordinary(input)))
        else:
            size = self.counter.count_all(m for m in input if isinstance(m, BaseMessage))
        for bound, model in self.up_to.items():
            if size <= bound:
                return cast("BaseChatModel", model)
        return cast("BaseChatModel", list(self.up_to.values())[-1])

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self.choose(input).invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self.choose(input).ainvoke(input, config, **kwargs)


def chat_model(value: Any, role: str) -> Runnable[Any, Any]:
    """`value` as the model a role (Observer, Reflector) calls: a chat model, a
    `ModelByInputTokens`, or a non-empty list of them (a fallback chain, in order)."""
    if isinstance(value, (list, tuple)):
        if not value:
            msg = f"the {role}'s fallback chain is empty: give one model or more"
            raise ConfigurationError(msg)
        chain = [chat_model(item, role) for item in value]
        first, rest = chain[0], chain[1:]
        return first.with_fallbacks(rest) if rest else first
    if isinstance(value, (BaseChatModel, ModelByInputTokens, RunnableWithFallbacks)):
        return value
    raise ConfigurationError(
        f"the {role} needs a LangChain chat model (e.g. ChatOpenAI(model='gpt-4o-mini')), a list "
        f"of them (a fallback chain) or ModelByInputTokens, got {type(value).__name__}"
    )


class ObservationHooks(BaseModel):
    """``observational_memory={"hooks": {...}}``: each a callable taking keyword arguments.

    - ``before_observation(messages=, thread_id=, resource_id=)``: the messages the Observer
      reads (a list of messages, or None). An empty list skips the Observer: the messages
      count as observed and nothing is written of them.
    - ``after_observation(observations=, thread_id=, resource_id=)``: the observations kept.
    - ``before_reflection(observations=, resource_id=)``: the log the Reflector condenses.
    - ``after_reflection(observations=, resource_id=)``: the reflection kept.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    before_observation: Callable[..., Any] | None = None
    after_observation: Callable[..., Any] | None = None
    before_reflection: Callable[..., Any] | None = None
    after_reflection: Callable[..., Any] | None = None


def _called(hook: Callable[..., Any], **inputs: Any) -> Any:
    result = hook(**inputs)
    if inspect.isawaitable(result):  # (the worker thread runs no event loop)
        result = asyncio.run(_awaited(result))
    return result


async def _awaited(result: Any) -> Any:
    return await result


def messages_hook(
    hooks: ObservationHooks | None, messages: Sequence[BaseMessage], **ids: Any
) -> list[BaseMessage]:
    """The messages the Observer reads: `before_observation`'s, or `messages`."""
    if hooks is None or hooks.before_observation is None:
        return list(messages)
    found = _called(hooks.before_observation, messages=list(messages), **ids)
    if found is None:
        return list(messages)
    if not isinstance(found, list) or not all(isinstance(m, BaseMessage) for m in found):
        raise TypeError(
            "observational_memory hooks.before_observation must return a list of LangChain "
            f"messages or None, got {type(found).__name__}"
        )
    return found


def text_hook(hooks: ObservationHooks | None, name: str, text: str, **ids: Any) -> str:
    """`text` through the hook `name` (``after_observation``, ``before_reflection``,
    ``after_reflection``): its replacement, or `text` when there is none or it returns None."""
    hook = getattr(hooks, name, None) if hooks is not None else None
    if hook is None:
        return text
    found = _called(hook, observations=text, **ids)
    if found is None:
        return text
    if not isinstance(found, str):
        raise TypeError(
            f"observational_memory hooks.{name} must return a string or None, got "
            f"{type(found).__name__}"
        )
    return found


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
