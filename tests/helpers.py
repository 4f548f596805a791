"""Test helpers: a scripted chat model that can be bound to tools and records what it saw."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import BaseMessage


class ScriptedChatModel(FakeMessagesListChatModel):
    """Replies with the given messages in order; `bind_tools` is accepted; inputs are recorded."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, copied per instance

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def scripted(*replies: BaseMessage) -> ScriptedChatModel:
    return ScriptedChatModel(responses=list(replies), seen=[])
