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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.fallbacks import RunnableWithFallbacks

from ..errors import ConfigurationError
from ..storage.validation import is_count
from ..tokens.counting import TokenCounter


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
