"""The configs a `MemoryCheckpointer` reads and returns: a thread's root config, and the owner
a checkpoint was checked against stamped into its configs."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple

Messages = list[BaseMessage]


def ids_of(messages: Messages | None) -> list[str]:
    return [m.id for m in messages or () if m.id]


def root_config(thread_id: str) -> RunnableConfig:
    """The config reading a thread's latest root checkpoint."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def thread_of(item: CheckpointTuple) -> str:
    return str(item.config["configurable"]["thread_id"])


def owned_config(config: RunnableConfig, owner: str) -> RunnableConfig:
    return {**config, "configurable": {**config.get("configurable", {}), "resource_id": owner}}


def stamped(item: CheckpointTuple | None, owner: str | None) -> Any:
    """`item` with the owner it was checked against in its configs: replaying one (LangGraph's
    time travel, ``get_state_history`` configs) names the right resource."""
    if item is None or owner is None:
        return item
    return item._replace(
        config=owned_config(item.config, owner),
        parent_config=item.parent_config and owned_config(item.parent_config, owner),
    )
