"""The ``update_working_memory`` tool: working memory as a LangChain `StructuredTool`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, ToolException

from .errors import MastraMemoryError
from .working_memory import TOOL_NAME, tool_args_schema

if TYPE_CHECKING:
    from .memory import Memory

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


def create_working_memory_tool(
    memory: Memory, *, thread_id: str | None = None, resource_id: str | None = None
) -> StructuredTool:
    """Build the tool for `memory`.

    ``thread_id``/``resource_id`` come from the arguments given here, else from the tool call's
    ``config["configurable"]`` (LangGraph passes the graph's config to tools). Invalid input
    goes back to the model as the tool's text (an error ``ToolMessage``), and nothing is stored.
    """
    config = memory.working_memory

    def ids(run_config: RunnableConfig | None) -> tuple[str, str | None]:
        configurable = (run_config or {}).get("configurable", {})
        resource = resource_id or configurable.get("resource_id")
        thread = thread_id or configurable.get("thread_id")
        if not resource:
            raise ToolException("working memory is unavailable: no resource_id in the config")
        if config.scope == "thread" and not thread:
            raise ToolException("working memory is unavailable: no thread_id in the config")
        return resource, thread

    def done(data: Any) -> str:
        shown = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return f"Working memory updated. It now reads:\n{shown}"

    def update(memory_arg: Any, run_config: RunnableConfig | None) -> str:
        resource, thread = ids(run_config)
        try:
            if thread is not None:
                memory.ensure_thread(thread_id=thread, resource_id=resource)
            return done(
                memory.update_working_memory(memory_arg, resource_id=resource, thread_id=thread)
            )
        except MastraMemoryError as exc:
            raise ToolException(str(exc)) from exc

    async def aupdate(memory_arg: Any, run_config: RunnableConfig | None) -> str:
        resource, thread = ids(run_config)
        try:
            if thread is not None:
                await memory.aensure_thread(thread_id=thread, resource_id=resource)
            data = await memory.aupdate_working_memory(
                memory_arg, resource_id=resource, thread_id=thread
            )
            return done(data)
        except MastraMemoryError as exc:
            raise ToolException(str(exc)) from exc

    def func(memory: Any, config: RunnableConfig) -> str:
        return update(memory, config)

    async def coroutine(memory: Any, config: RunnableConfig) -> str:
        return await aupdate(memory, config)

    return StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=TOOL_NAME,
        description=DESCRIPTION[config.mode],
        args_schema=tool_args_schema(config),
        handle_tool_error=True,
    )
