"""One turn, assembled once: the pure pieces every integration shape shares.

The context sent to the model is, in this order (SPEC §3): the working-memory system message,
recalled messages, the recent history, all of which the user's processors shape, then the
current turn, which no processor touches; `provider_rules.provider_safe` then makes it a
sequence OpenAI and Anthropic accept (one leading system message, tool calls and results in
pairs). After the model answers, the turn (the new input and what
the model produced, tool traffic included) is saved; messages that memory itself injected are
never saved back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    BaseMessageChunk,
    HumanMessage,
    message_chunk_to_message,
)

from .errors import InvalidMessageError
from .injected import is_injected
from .messages import ensure_messages


def input_messages(value: Any) -> list[BaseMessage]:
    """The new messages of a turn from ``{"input": str | messages}``, a string, or messages."""
    if isinstance(value, Mapping):
        if "input" in value:
            value = value["input"]
        elif "messages" in value:
            value = value["messages"]
        else:
            raise InvalidMessageError('expected {"input": ...} or {"messages": [...]}')
    if isinstance(value, str):
        return [HumanMessage(value)]
    if isinstance(value, BaseMessage):
        return [value]
    return ensure_messages(value, where="input")


def produced_messages(output: Any, sent: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What a model or chain produced, as messages to save (a string becomes an AIMessage)."""
    if isinstance(output, BaseMessageChunk):
        return [message_chunk_to_message(output)]
    if isinstance(output, BaseMessage):
        return [output]
    if isinstance(output, str):
        return [AIMessage(output)]
    if isinstance(output, Mapping) and "messages" in output:
        seen = {m.id for m in sent if m.id}
        return [m for m in ensure_messages(output["messages"]) if m.id not in seen or m.id is None]
    if isinstance(output, Sequence):
        return ensure_messages(output)
    raise InvalidMessageError(f"cannot save a turn whose output is a {type(output).__name__}")


def to_save(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages of a turn worth saving: never those memory injected itself."""
    return [m for m in messages if not is_injected(m)]


def split_turn(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """A conversation as (remembered history, current turn).

    The current turn starts at the last human message and holds everything after it, the tool
    traffic of a running agent loop included: processors never filter or drop it. Without a
    human message the whole list is the current turn.
    """
    for cut in range(len(messages) - 1, -1, -1):
        if isinstance(messages[cut], HumanMessage):
            return list(messages[:cut]), list(messages[cut:])
    return [], list(messages)
