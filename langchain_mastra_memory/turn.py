"""One turn, assembled once: the pure pieces every integration shape shares.

The context sent to the model is, in this order (SPEC §3): the working-memory system message,
recalled messages, the recent history, all of which the user's processors shape, then the new
input, which no processor touches. After the model answers, the turn (the new input and what
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
from langchain_core.runnables import RunnableConfig

from .errors import ConfigurationError, InvalidMessageError
from .messages import ensure_messages
from .processors.working_memory import is_injected


def ids_from_config(
    config: RunnableConfig | None, *, default_resource_id: str | None = None
) -> tuple[str, str]:
    """``(thread_id, resource_id)`` from ``config["configurable"]`` (LangGraph's convention)."""
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    resource_id = configurable.get("resource_id") or default_resource_id
    if not thread_id:
        msg = 'memory needs config={"configurable": {"thread_id": ..., "resource_id": ...}}'
        raise ConfigurationError(msg + ": thread_id is missing")
    if not resource_id:
        msg = 'memory needs config={"configurable": {"thread_id": ..., "resource_id": ...}}'
        raise ConfigurationError(msg + ": resource_id is missing")
    return str(thread_id), str(resource_id)


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


def split_new_input(messages: Sequence[BaseMessage]) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """A graph state's messages as (history, new input): the input is the trailing run of
    messages after the last AI message (usually the user's new message)."""
    cut = len(messages)
    while cut > 0 and not isinstance(messages[cut - 1], AIMessage):
        cut -= 1
    if cut == 0:
        return [], list(messages)
    tail = list(messages[cut:])
    if not tail:  # the state ends with an AI message (e.g. after a tool call): no new input
        return list(messages), []
    return list(messages[:cut]), tail
