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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import ToolException

from ..errors import ConfigurationError, MastraMemoryError
from ..messages import mastra_role, message_text
from ..storage.records import scope_key
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
ONE_RESOURCE = (
    "search_memory",
    "get_working_memory",
    "update_working_memory",
    "list_threads",
    "read_thread",
    "save_message",
    "read_observations",
)
OPERATOR = (*ONE_RESOURCE, "forget_user")  # `multi_resource`: a model serving one user never
# sees `forget_user`
RESOURCES = (  # a one-resource server's (a resource URI names no owner): uri, method, mime type
    ("memory://working-memory", "working_memory_resource", "text/markdown"),
    ("memory://threads", "threads_resource", "text/plain"),
    ("memory://threads/{thread_id}", "thread_resource", "text/plain"),
)
T = TypeVar("T", bound=Callable[..., Any])


def described(description: str) -> Callable[[T], T]:
    """The words a model (tools) or a client (resources) reads for a method."""

    def mark(method: T) -> T:
        method.description = description  # type: ignore[attr-defined]
        return method

    return mark


def refused(message: str) -> Exception:
    """The MCP SDK's `ToolError` (a tool result that says why; the SDK is the ``mcp`` extra,
    imported when a server is made)."""
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(message)


def create_mcp_server(
    memory: Memory, *, resource_id: str | None = None, multi_resource: bool = False
) -> MCPServer:
    """The MCP server over `memory` for `resource_id` (or, with `multi_resource`, for the
    resource each call names): `MemoryTools`' tools, and its resources on a one-resource
    server. See the module doc."""
    from mcp.server.mcpserver import MCPServer

    tools = MemoryTools(memory, resource_id=resource_id, multi_resource=multi_resource)
    server = MCPServer("langchain-mastra-memory", instructions=INSTRUCTIONS, log_level="WARNING")
    for name in OPERATOR if multi_resource else ONE_RESOURCE:
        method = getattr(tools, name)
        server.add_tool(method, name=name, description=method.description)
    for uri, name, mime_type in () if multi_resource else RESOURCES:
        method = getattr(tools, name)
        server.resource(uri, mime_type=mime_type, description=method.description)(method)
    return server


class MemoryTools:
    """The MCP server's tools over one memory, one method each, named and described for a
    model; a bad argument raises `refused` (a tool error that says why).

    Examples:
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> tools = MemoryTools(Memory(storage=SQLiteStorage(":memory:")), resource_id="alice")
        >>> tools.list_threads()
        '(no conversations yet)'
    """

    def __init__(
        self, memory: Memory, *, resource_id: str | None = None, multi_resource: bool = False
    ) -> None:
        if multi_resource == (resource_id is not None):
            raise ConfigurationError(
                "give the MCP server one resource (resource_id=) or multi_resource=True, not both"
            )
        self.memory, self.resource_id, self.multi_resource = memory, resource_id, multi_resource

    def owner(self, given: str | None) -> str:
        """Whose memory a call reads: the server's one resource, or the one it names."""
        if not self.multi_resource:
            if given not in (None, self.resource_id):
                raise refused("this server serves one user's memory: leave resource_id out")
            return str(self.resource_id)
        if not given:
            raise refused("resource_id is required: whose memory (this server serves several)")
        try:
            return check_id(given, "resource_id")
        except ConfigurationError as exc:
            raise refused(str(exc)) from exc

    def own_thread(self, who: str, thread_id: str) -> Any:
        """`who`'s thread `thread_id` (another's reads as unknown)."""
        try:
            found = self.memory.get_thread(check_id(thread_id, "thread_id"), resource_id=who)
        except (ConfigurationError, MastraMemoryError) as exc:
            raise refused(str(exc)) from exc
        if found is None:
            raise refused(f"no thread {thread_id!r} (list_threads shows the ids)")
        return found

    # -- tools ----------------------------------------------------------------------------------
    @described(
        "Search memory of earlier conversations: what the user said and what you answered. "
        "`query` in your own words; optionally `thread_id` (one conversation), `since` / "
        "`until` (ISO dates), `mode` ('hybrid' default, 'keyword' for exact words, 'vector' "
        "for meaning; 'threads' lists the user's conversations, `query` optional; "
        "'observations' searches what was noted about the user; with no `query` it lists the "
        "notes moved to the archive, and `archive_id` (with `group_id`, `char_offset`) reads "
        "one) and `cursor` (from a result) for more. Each hit has its conversation's title and "
        "id and its date."
    )
    def search_memory(
        self,
        query: str | None = None,
        thread_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        mode: Literal["hybrid", "vector", "keyword", "threads", "observations"] | None = None,
        page: int = 0,
        cursor: str | None = None,
        archive_id: str | None = None,
        group_id: str | None = None,
        char_offset: int = 0,
        resource_id: str | None = None,
    ) -> str:
        arguments = {
            "query": query,
            "thread_id": thread_id,
            "since": since,
            "until": until,
            "mode": mode,
            "page": page,
            "cursor": cursor,
            "archive_id": archive_id,
            "group_id": group_id,
            "char_offset": char_offset,
        }
        given = {k: v for k, v in arguments.items() if v is not None}
        try:
            return search_for_model(self.memory, self.owner(resource_id), given)
        except (ToolException, MastraMemoryError) as exc:
            raise refused(str(exc)) from exc

    @described(
        "Read the working memory: what you keep about the user (a Markdown document, or a "
        "JSON object when it has a schema). `thread_id` for a thread-scoped one."
    )
    def get_working_memory(
        self, thread_id: str | None = None, resource_id: str | None = None
    ) -> str:
        who = self.owner(resource_id)
        if thread_id is not None:
            self.own_thread(who, thread_id)
        try:
            value = self.memory.get_working_memory(resource_id=who, thread_id=thread_id)
        except MastraMemoryError as exc:
            raise refused(str(exc)) from exc
        if value is None:
            return "(working memory is empty)"
        return value if isinstance(value, str) else json.dumps(value, indent=2)

    @described(
        "Update the working memory. Markdown mode: `content` is the whole new document. Schema "
        "mode: a JSON object of the fields to change. Invalid updates are refused with the "
        "reason and nothing is saved."
    )
    def update_working_memory(
        self, content: str, thread_id: str | None = None, resource_id: str | None = None
    ) -> str:
        who = self.owner(resource_id)
        if thread_id is not None:
            self.own_thread(who, thread_id)
        value: Any = content
        if self.memory.working_memory.mode == "schema":
            try:
                value = json.loads(content)
            except ValueError as exc:
                raise refused(f"schema mode takes a JSON object: {exc}") from exc
        try:
            self.memory.update_working_memory(value, resource_id=who, thread_id=thread_id)
        except (ValueError, MastraMemoryError) as exc:
            raise refused(f"refused, nothing saved: {exc}") from exc
        return "working memory updated"

    @described("List past conversations, newest first: id, title, last activity.")
    def list_threads(self, page: int = 0, resource_id: str | None = None) -> str:
        try:
            found = self.memory.page_threads(
                resource_id=self.owner(resource_id), page=page, per_page=20
            )
        except (ConfigurationError, MastraMemoryError) as exc:
            raise refused(str(exc)) from exc
        lines = [
            f"{t.id} · {t.title or '(untitled)'} · {t.updated_at:%Y-%m-%d %H:%M}"
            for t in found.items
        ]
        more = f"\n(more: page={page + 1})" if found.has_more else ""
        return ("\n".join(lines) or "(no conversations yet)") + more

    @described("Read one conversation's messages, oldest first, a page (of 40) at a time.")
    def read_thread(self, thread_id: str, page: int = 0, resource_id: str | None = None) -> str:
        who = self.owner(resource_id)
        self.own_thread(who, thread_id)
        try:
            found = self.memory.page_messages(thread_id, resource_id=who, page=page, per_page=40)
        except (ConfigurationError, MastraMemoryError) as exc:
            raise refused(str(exc)) from exc
        lines = [f"{mastra_role(m)}: {message_text(m)}" for m in found.items]
        more = f"\n(more: page={page + 1})" if found.has_more else ""
        return ("\n".join(lines) or "(no messages)") + more

    @described(
        "Save a message to a conversation (created when new): `role` 'user', 'assistant' or "
        "'note' (a note of yours, kept but not shown as said by anyone)."
    )
    def save_message(
        self,
        thread_id: str,
        text: str,
        role: Literal["user", "assistant", "note"] = "user",
        title: str | None = None,
        resource_id: str | None = None,
    ) -> str:
        who = self.owner(resource_id)
        if not text.strip():
            raise refused("text is empty: nothing to save")
        memory = self.memory
        try:
            thread = memory.ensure_thread(
                thread_id=check_id(thread_id, "thread_id"), resource_id=who
            )
            if title and not thread.title:
                memory.update_thread(thread_id, title=title, resource_id=who)
            (saved,) = memory.save_messages(
                [ROLES[role](text)], thread_id=thread_id, resource_id=who
            )
            memory.flush(30)
        except (ConfigurationError, MastraMemoryError) as exc:
            raise refused(str(exc)) from exc
        return f"saved as {saved.id} in thread {thread_id}"

    @described(
        "Read the observation log (what observational memory noted of past conversations), "
        "of one thread and of the user as a whole."
    )
    def read_observations(
        self, thread_id: str | None = None, resource_id: str | None = None
    ) -> str:
        who = self.owner(resource_id)
        keys = [scope_key("resource", resource_id=who, thread_id=None)]
        if thread_id is not None:
            self.own_thread(who, thread_id)
            keys.insert(0, scope_key("thread", resource_id=who, thread_id=thread_id))
        parts = []
        for key in keys:
            log = self.memory.storage.observation_log(key)
            if log:
                parts.append(f"## {key}\n" + "\n".join(g.text for g in log))
        return "\n\n".join(parts) or "(no observations)"

    @described(
        "Erase everything memory holds of one user (`resource_id`): every conversation, "
        "message, working memory and observation. Irreversible."
    )
    def forget_user(self, resource_id: str) -> str:
        who = self.owner(resource_id)
        try:
            erased = self.memory.delete_resource(who)
        except (ConfigurationError, MastraMemoryError) as exc:
            raise refused(str(exc)) from exc
        return f"erased everything held of {who!r}" if erased else f"nothing held of {who!r}"

    # -- resources ------------------------------------------------------------------------------
    @described("What is kept about the user.")
    def working_memory_resource(self) -> str:
        return self.get_working_memory()

    @described("Past conversations, newest first.")
    def threads_resource(self) -> str:
        return self.list_threads()

    @described("One conversation's messages.")
    def thread_resource(self, thread_id: str) -> str:
        return self.read_thread(thread_id)
