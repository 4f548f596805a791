"""Per-call memory options, from the run's config (Mastra 1.x's per-call ``memory.options``).

A graph, chain or agent invoked with ``config={"configurable": {"thread_id": ...,
"memory_options": {...}}}`` changes, for that call only: ``last_messages``, ``semantic_recall``
(any of its options but the index: ``top_k``, ``message_range``, ``scope``, ``threshold``,
``mode``, ``filter``; ``False`` turns recall off) and ``read_only`` (the context is assembled,
nothing of the turn is saved: a routing agent, a sub-agent). They are read once, where a call
enters memory: from the ``memory_options`` a `Memory` method is given, else from the config
LangChain and LangGraph carry to the code they run (`ensure_config`); the turn's plan carries
them from there (`carried`).

Examples:
    >>> CallOptions.parse({"last_messages": 5, "read_only": True}).read_only
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.runnables.config import ensure_config
from pydantic import BaseModel, ConfigDict, field_validator

from ..storage.validation import validated
from .options import check_last_messages

KEY = "memory_options"


class CallOptions(BaseModel):
    """What one call changes (None: the memory's own option)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    last_messages: int | Literal[False] | None = None
    semantic_recall: dict[str, Any] | Literal[False] | None = None
    read_only: bool | None = None

    @field_validator("last_messages", mode="before")
    @classmethod
    def _check_last(cls, value: Any) -> Any:
        return None if value is None else check_last_messages(value)

    @field_validator("semantic_recall")
    @classmethod
    def _no_index(cls, value: Any) -> Any:
        if isinstance(value, dict) and "index_name" in value:
            raise ValueError("the index is the memory's: index_name cannot change per call")
        return value

    @classmethod
    def parse(cls, value: object) -> CallOptions:
        """The options of a config's ``memory_options`` (None: no change)."""
        return validated(cls, value, f"{KEY} in the config")


NONE = CallOptions()


def of(config: Any) -> CallOptions:
    """The options a run's `config` gives (none when it gives none)."""
    value = ((config or {}).get("configurable") or {}).get(KEY)
    return NONE if value is None else CallOptions.parse(value)


def current() -> CallOptions:
    """The options of the run this code runs in (none outside a run, or when not given)."""
    return of(ensure_config())


def given(value: CallOptions | Mapping[str, Any] | None) -> CallOptions:
    """A call's own options: as given (parsed), else the run's (`current`)."""
    if value is None:
        return current()
    return value if isinstance(value, CallOptions) else CallOptions.parse(value)


def carried(request: Mapping[str, Any]) -> dict[str, Any]:
    """`request` (a `Memory` method's keywords, checked there) with its ``memory_options``
    resolved once, where the call enters memory (`given`): the parts below take them from the
    request, never from the ambient run."""
    return {**request, KEY: given(request.get(KEY))}
