"""Memory as an MCP server: any agent that speaks the Model Context Protocol (Claude Desktop,
Cursor, an IDE, a TypeScript agent, Mastra) searches and keeps this memory.

``langchain-mastra-memory mcp --db memory.db --resource alice`` serves one resource's memory
over stdio (the client starts it); ``--http --port 8766`` over streamable HTTP on 127.0.0.1,
guarded as the explorer is (`ui.guard.LocalWebGuard`: a token on every request, a random one
by default; loopback Host names only; the SDK's own DNS-rebinding checks besides).

Tools (named and described for a model): ``search_memory`` (hybrid recall with dates and
threads: the recall tool), ``get_working_memory`` / ``update_working_memory`` (the working-memory
tool's validation), ``list_threads``, ``read_thread`` (paged), ``save_message`` (a message or a
note to a thread, created when new) and ``read_observations`` (the observation log, when
observational memory wrote one). Resources: ``memory://working-memory``, ``memory://threads``
and ``memory://threads/{thread_id}``. A bad argument is a tool error that says why; another
resource's thread reads as unknown, and naming another resource is refused. With
``multi_resource`` every call names its ``resource_id`` (for a client trusted with every
resource's memory: nothing then stands between resources), and ``forget_user`` erases one
resource (`Memory.delete_resource`); a one-resource server does not offer it.

Example (in a test or a script; a client normally starts the command)::

    server = create_mcp_server(Memory(storage=SQLiteStorage("memory.db")), resource_id="alice")
    server.run("stdio")
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import ToolException

from ..errors import ConfigurationError, MastraMemoryError
from ..messages import mastra_role, message_text
from ..storage.observations import scope_key
from ..storage.validation import check_id
from .recall_tool import search_for_model

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..memory import Memory

INSTRUCTIONS = (
    "Long-term memory of your conversations with this user. Search it (search_memory) before "
    "saying you do not know something they may have told you; keep what matters about them in "
    "working memory (get_working_memory, update_working_memory); browse past conversations "
    "(list_threads, read_thread); save a message or a note (save_message)."
)
ROLES = {"user": HumanMessage, "assistant": AIMessage, "note": SystemMessage}


def create_mcp_server(
    memory: Memory, *, resource_id: str | None = None, multi_resource: bool = False
) -> MCPServer:
    """The MCP server over `memory` for `resource_id` (or, with `multi_resource`, for the
    resource each call names). See the module doc."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    if multi_resource == (resource_id is not None):
        raise ConfigurationError(
            "give the MCP server one resource (resource_id=) or multi_resource=True, not both"
        )
    server = MCPServer("langchain-mastra-memory", instructions=INSTRUCTIONS, log_level="WARNING")

    def owner(given: str | None) -> str:
        if not multi_resource:
            if given not in (None, resource_id):
                raise ToolError("this server serves one user's memory: leave resource_id out")
            return str(resource_id)
        if not given:
            raise ToolError("resource_id is required: whose memory (this server serves several)")
        try:
            return check_id(given, "resource_id")
        except ConfigurationError as exc:
            raise ToolError(str(exc)) from exc

    def failing(exc: Exception) -> ToolError:
        return ToolError(str(exc))

    def own_thread(who: str, thread_id: str) -> Any:
        try:
            found = memory.get_thread(check_id(thread_id, "thread_id"), resource_id=who)
        except (ConfigurationError, MastraMemoryError) as exc:
            raise failing(exc) from exc
        if found is None:
            raise ToolError(f"no thread {thread_id!r} (list_threads shows the ids)")
        return found

    # -- tools ----------------------------------------------------------------------------------
    @server.tool(description=(
        "Search memory of earlier conversations: what the user said and what you answered. "
        "`query` in your own words; optionally `thread_id` (one conversation), `since` / "
        "`until` (ISO dates), `mode` ('hybrid' default, 'keyword' for exact words, 'vector' "
        "for meaning; 'threads' lists the user's conversations, `query` optional; "
        "'observations' searches what was noted about the user) and `cursor` (from a result) "
        "for more. Each hit has its conversation's title and id and its date."
    ))  # fmt: skip
    def search_memory(
        query: str | None = None,
        thread_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        mode: Literal["hybrid", "vector", "keyword", "threads", "observations"] | None = None,
        page: int = 0,
        cursor: str | None = None,
        resource_id: str | None = None,
    ) -> str:
        arguments = {"query": query, "thread_id": thread_id, "since": since, "until": until,
                     "mode": mode, "page": page, "cursor": cursor}  # fmt: skip
        given = {k: v for k, v in arguments.items() if v is not None}
        try:
            return search_for_model(memory, owner(resource_id), given)
        except (ToolException, MastraMemoryError) as exc:
            raise failing(exc) from exc

    @server.tool(description=(
        "Read the working memory: what you keep about the user (a Markdown document, or a "
        "JSON object when it has a schema). `thread_id` for a thread-scoped one."
    ))  # fmt: skip
    def get_working_memory(thread_id: str | None = None, resource_id: str | None = None) -> str:
        who = owner(resource_id)
        if thread_id is not None:
            own_thread(who, thread_id)
        try:
            value = memory.get_working_memory(resource_id=who, thread_id=thread_id)
        except MastraMemoryError as exc:
            raise failing(exc) from exc
        if value is None:
            return "(working memory is empty)"
        return value if isinstance(value, str) else json.dumps(value, indent=2)

    @server.tool(description=(
        "Update the working memory. Markdown mode: `content` is the whole new document. Schema "
        "mode: a JSON object of the fields to change. Invalid updates are refused with the "
        "reason and nothing is saved."
    ))  # fmt: skip
    def update_working_memory(
        content: str, thread_id: str | None = None, resource_id: str | None = None
    ) -> str:
        who = owner(resource_id)
        if thread_id is not None:
            own_thread(who, thread_id)
        value: Any = content
        if memory.working_memory.mode == "schema":
            try:
                value = json.loads(content)
            except ValueError as exc:
                raise ToolError(f"schema mode takes a JSON object: {exc}") from exc
        try:
            memory.update_working_memory(value, resource_id=who, thread_id=thread_id)
        except (ValueError, MastraMemoryError) as exc:
            raise ToolError(f"refused, nothing saved: {exc}") from exc
        return "working memory updated"

    @server.tool(description="List past conversations, newest first: id, title, last activity.")
    def list_threads(page: int = 0, resource_id: str | None = None) -> str:
        try:
            found = memory.page_threads(resource_id=owner(resource_id), page=page, per_page=20)
        except (ConfigurationError, MastraMemoryError) as exc:
            raise failing(exc) from exc
        lines = [f"{t.id} · {t.title or '(untitled)'} · {t.updated_at:%Y-%m-%d %H:%M}"
                 for t in found.items]  # fmt: skip
        more = f"\n(more: page={page + 1})" if found.has_more else ""
        return ("\n".join(lines) or "(no conversations yet)") + more

    @server.tool(description=(
        "Read one conversation's messages, oldest first, a page (of 40) at a time."
    ))  # fmt: skip
    def read_thread(thread_id: str, page: int = 0, resource_id: str | None = None) -> str:
        who = owner(resource_id)
        own_thread(who, thread_id)
        try:
            found = memory.page_messages(thread_id, resource_id=who, page=page, per_page=40)
        except (ConfigurationError, MastraMemoryError) as exc:
            raise failing(exc) from exc
        lines = [f"{mastra_role(m)}: {message_text(m)}" for m in found.items]
        more = f"\n(more: page={page + 1})" if found.has_more else ""
        return ("\n".join(lines) or "(no messages)") + more

    @server.tool(description=(
        "Save a message to a conversation (created when new): `role` 'user', 'assistant' or "
        "'note' (a note of yours, kept but not shown as said by anyone)."
    ))  # fmt: skip
    def save_message(
        thread_id: str,
        text: str,
        role: Literal["user", "assistant", "note"] = "user",
        title: str | None = None,
        resource_id: str | None = None,
    ) -> str:
        who = owner(resource_id)
        if not text.strip():
            raise ToolError("text is empty: nothing to save")
        try:
            thread = memory.ensure_thread(thread_id=check_id(thread_id, "thread_id"),
                                          resource_id=who)  # fmt: skip
            if title and not thread.title:
                memory.update_thread(thread_id, title=title, resource_id=who)
            (saved,) = memory.save_messages([ROLES[role](text)], thread_id=thread_id,
                                            resource_id=who)  # fmt: skip
            memory.flush(30)
        except (ConfigurationError, MastraMemoryError) as exc:
            raise failing(exc) from exc
        return f"saved as {saved.id} in thread {thread_id}"

    @server.tool(description=(
        "Read the observation log (what observational memory noted of past conversations), "
        "of one thread and of the user as a whole."
    ))  # fmt: skip
    def read_observations(thread_id: str | None = None, resource_id: str | None = None) -> str:
        who = owner(resource_id)
        keys = [scope_key("resource", resource_id=who, thread_id=None)]
        if thread_id is not None:
            own_thread(who, thread_id)
            keys.insert(0, scope_key("thread", resource_id=who, thread_id=thread_id))
        parts = []
        for key in keys:
            log = memory.storage.observation_log(key)
            if log:
                parts.append(f"## {key}\n" + "\n".join(g.text for g in log))
        return "\n\n".join(parts) or "(no observations)"

    if multi_resource:  # an operator's server: a model serving one user is never offered it

        @server.tool(description=(
            "Erase everything memory holds of one user (`resource_id`): every conversation, "
            "message, working memory and observation. Irreversible."
        ))  # fmt: skip
        def forget_user(resource_id: str) -> str:
            who = owner(resource_id)
            try:
                erased = memory.delete_resource(who)
            except (ConfigurationError, MastraMemoryError) as exc:
                raise failing(exc) from exc
            return f"erased everything held of {who!r}" if erased else f"nothing held of {who!r}"

    # -- resources (one resource's server only: a resource URI names no owner) -----------------
    if not multi_resource:

        @server.resource("memory://working-memory", mime_type="text/markdown",
                         description="What is kept about the user.")  # fmt: skip
        def working_memory_resource() -> str:
            return get_working_memory()

        @server.resource("memory://threads", mime_type="text/plain",
                         description="Past conversations, newest first.")  # fmt: skip
        def threads_resource() -> str:
            return list_threads()

        @server.resource("memory://threads/{thread_id}", mime_type="text/plain",
                         description="One conversation's messages.")  # fmt: skip
        def thread_resource(thread_id: str) -> str:
            return read_thread(thread_id)

    return server
