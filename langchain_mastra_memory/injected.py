"""The tag that marks messages memory put into a model's input (never saved back as history)."""

from __future__ import annotations

from langchain_core.messages import BaseMessage

SOURCE_KEY = "langchain_mastra_memory"


def is_injected(message: BaseMessage) -> bool:
    """Whether a message was added by memory (working memory, recall, the merged system block).

    Examples:
        >>> from langchain_core.messages import SystemMessage
        >>> is_injected(tag(SystemMessage("remembered"), "semantic_recall"))
        True
    """
    return SOURCE_KEY in message.response_metadata


def tag(message: BaseMessage, source: str) -> BaseMessage:
    """A copy of `message` marked as coming from memory's `source`."""
    return message.model_copy(
        update={"response_metadata": {**message.response_metadata, SOURCE_KEY: source}}
    )
