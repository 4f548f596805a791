"""The ``update_working_memory`` tool: working memory as a LangChain `StructuredTool`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, ToolException

from ..config import call_options
from ..errors import ConfigurationError, MastraMemoryError
from ..threads.ids import tool_ids
from .config import TOOL_NAME, WorkingMemoryConfig

if TYPE_CHECKING:
    from ..memory import Memory

DESCRIPTION = {
    "markdown": (
        "Update the working memory (facts about the user kept across conversations). Send the "
        "whole Markdown document as a string: it replaces the stored one."
    ),
    "schema": (
        "Update the working memory (facts about the user kept across conversations). Send only "
        "the fields that changed: objects merge, arrays replace, null deletes a field."
    ),
}


def tool_args_schema(config: WorkingMemoryConfig) -> dict[str, Any]:
    """The JSON Schema of the tool's arguments, which teaches the model the update rules."""
    if config.mode == "markdown":
        memory: dict[str, Any] = {
            "type": "string",
            "description": (
                "The WHOLE working memory as a Markdown string, following the template. It "
                "replaces what is stored: include every section, the old facts you keep and "
                "the new ones. Never pass an object."
            ),
        }
    else:
        memory = {
            **_optional(config.schema_dict),
            "description": (
                "Only the fields that changed, as an object. Objects are merged into the stored "
                "memory recursively, arrays replace the stored array, null deletes a field."
            ),
        }
    return {"type": "object", "properties": {"memory": memory}, "required": ["memory"]}


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with nothing required and every property nullable (a patch, not a document)."""
    out = {k: v for k, v in schema.items() if k not in ("required", "title")}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {
            name: {"anyOf": [_optional(prop), {"type": "null"}]} if isinstance(prop, dict) else prop
            for name, prop in out["properties"].items()
        }
    if isinstance(out.get("$defs"), dict):
        out["$defs"] = {k: _optional(v) for k, v in out["$defs"].items()}
    return out


def create_working_memory_tool(
    memory: Memory, *, thread_id: str | None = None, resource_id: str | None = None
) -> StructuredTool:
    """Build the tool for `memory`.

    ``thread_id``/``resource_id`` come from the arguments given here, else from the tool call's
    config by the package's rule (`ids`; LangGraph passes the graph's config to tools). Any bad
    input from the model (missing, extra or mistyped arguments, an invalid update) goes back to
    it as the tool's text (an error ``ToolMessage``), and nothing is stored; a tool run with no
    ids at all raises `ConfigurationError` to the developer.
    """
    config = memory.working_memory
    memory.working.thread_key(thread_id or "unknown")  # refuses a disabled working memory
    if config.read_only or memory.options.read_only:
        raise ConfigurationError("working memory is read-only: there is no tool to offer")

    def ids(run_config: RunnableConfig | None) -> tuple[str, str | None]:
        """``(resource_id, thread_id or None)``: this tool's own ids over the call's config."""
        owner, thread = tool_ids(
            run_config,
            thread_id=thread_id,
            resource_id=resource_id,
            default_resource_id=memory.default_resource_id,
        )
        if owner is None or (thread is None and config.scope == "thread"):
            msg = (
                f"the {TOOL_NAME} tool needs the conversation's ids: run it in a graph invoked "
                'with config={"configurable": {"thread_id": ...}}, or pass thread_id= / '
                "resource_id= to memory.working_memory_tool()"
            )
            raise ConfigurationError(msg)
        return owner, thread

    def argument(kwargs: dict[str, Any]) -> Any:
        """The ``memory`` argument, or an error the model can act on."""
        extra = sorted(set(kwargs) - {"memory"})
        if extra:
            raise ToolException(
                f"unexpected argument(s) {extra}: {TOOL_NAME} takes one argument, `memory`"
            )
        if "memory" not in kwargs:
            raise ToolException(f"{TOOL_NAME} needs the `memory` argument")
        value = kwargs["memory"]
        if config.mode == "markdown" and not isinstance(value, str):
            raise ToolException(
                "`memory` must be the whole working memory as one Markdown string, "
                f"not {type(value).__name__}"
            )
        if config.mode == "schema" and not isinstance(value, dict):
            raise ToolException(
                "`memory` must be an object holding the fields that changed, "
                f"not {type(value).__name__}"
            )
        return value

    def done(data: Any) -> str:
        shown = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return f"Working memory updated. It now reads:\n{shown}"

    def writable(run: RunnableConfig) -> None:
        if not memory.writes.saves_turns(call_options.of(run)):
            raise ToolException("Memory is read-only in this conversation: nothing was saved.")

    def func(config: RunnableConfig, **kwargs: Any) -> str:
        writable(config)
        value = argument(kwargs)
        resource, thread = ids(config)
        try:
            if thread is not None:
                memory.ensure_thread(thread_id=thread, resource_id=resource)
            return done(memory.update_working_memory(value, resource_id=resource, thread_id=thread))
        except MastraMemoryError as exc:
            raise ToolException(str(exc)) from exc

    async def coroutine(config: RunnableConfig, **kwargs: Any) -> str:
        writable(config)
        value = argument(kwargs)
        resource, thread = ids(config)
        try:
            if thread is not None:
                await memory.aensure_thread(thread_id=thread, resource_id=resource)
            data = await memory.aupdate_working_memory(
                value, resource_id=resource, thread_id=thread
            )
            return done(data)
        except MastraMemoryError as exc:
            raise ToolException(str(exc)) from exc

    return StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=TOOL_NAME,
        description=DESCRIPTION[config.mode],
        args_schema=tool_args_schema(config),
        handle_tool_error=True,
    )
