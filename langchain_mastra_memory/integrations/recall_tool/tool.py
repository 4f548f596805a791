"""The ``search_memory`` tool: the model searches its own past (Mastra 1.x's recall tool).

Semantic recall puts what the last user message brings to mind into the context on every
turn; with this tool the model asks itself, when it knows it needs something: a query in its
own words, optionally one conversation (an id from an earlier result), a date range and a
search mode, a page at a time. Each hit comes with its conversation's title and id and its date.
The resource is the call's (the package's rule: `ids`); another resource's messages and
threads are never found, and a thread id that is not the resource's reads as unknown.
Anything wrong in the arguments comes back as a message the model can act on.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> _ = memory.create_thread(thread_id="t1", resource_id="alice", title="Pets")
    >>> _ = memory.save_messages(
    ...     [HumanMessage("my cat is called Tom")], thread_id="t1", resource_id="alice")
    >>> tool = memory.recall_tool(resource_id="alice")
    >>> print(tool.invoke({"query": "cat", "mode": "keyword"}).splitlines()[1])
    1. [... · "Pets" (thread t1)] user: my cat is called Tom
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...browsing import Page, SearchHit
from ...errors import (
    ConfigurationError,
    MastraMemoryError,
    ResourceMismatchError,
    ThreadNotFoundError,
)
from ...messages import mastra_role, message_text
from ...storage.validation import is_count
from ...threads.ids import tool_ids
from ...twins import Steps, call, run_async, run_sync
from . import archives as archived
from . import listings
from .listings import CursorError, read_cursor

if TYPE_CHECKING:
    from ...memory import Memory

TOOL_NAME = "search_memory"
SNIPPET_CHARS = 400  # of each hit's text
DESCRIPTION = (
    "Search your memory of earlier conversations with this user: what they said, what you "
    "answered, in any past conversation. Use it when the answer may lie in the past and is "
    "not in front of you. Give `query` in your own words; optionally `thread_id` (an id from "
    "an earlier result) to search one conversation, `since` / `until` (ISO dates), `mode` "
    "('hybrid' default: meaning and words; 'keyword': exact words, names, numbers; 'vector': "
    "meaning; 'threads': list this user's conversations, `query` optional, matching titles; "
    "'observations': search what was noted about the user; with no `query` it lists the notes "
    "moved to the archive, and `archive_id` (with `group_id`, `char_offset`) reads one), and "
    "`cursor` (from a result) for more results."
)
MESSAGE_MODES = ("hybrid", "vector", "keyword")


class RecallArguments(BaseModel):
    """What the model may pass."""

    model_config = ConfigDict(extra="forbid")
    query: str | None = Field(
        default=None,
        min_length=1,
        max_length=2000,
        description="What to look for (optional with mode 'threads').",
    )
    thread_id: str | None = Field(
        default=None, description="Search only this conversation (an id from a result)."
    )
    since: datetime | None = Field(
        default=None, description="Only messages from this time on (ISO 8601: 2026-01-31)."
    )
    until: datetime | None = Field(
        default=None, description="Only messages before this time (ISO 8601)."
    )
    mode: Literal["hybrid", "vector", "keyword", "threads", "observations"] | None = Field(
        default=None,
        description="Messages by meaning and words (hybrid), words, meaning; or the user's "
        "conversations (threads), or what was noted about the user (observations).",
    )
    page: int = Field(default=0, ge=0, le=1000, description="Results page, 0 first.")
    cursor: str | None = Field(
        default=None, max_length=200, description="The cursor a result gave, for more."
    )
    archive_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="Mode 'observations': read this archive (an id from the catalog or a result).",
    )
    group_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="With archive_id: the group to read (default: the archive's first).",
    )
    char_offset: int = Field(
        default=0,
        ge=0,
        le=10_000_000,
        description="With archive_id: where to go on reading a long group (a result gives it).",
    )

    @model_validator(mode="after")
    def _query_for_searches(self) -> RecallArguments:
        if self.archive_id is not None and self.mode not in (None, "observations"):
            raise ValueError("archive_id goes with mode 'observations'")
        if self.archive_id is None and (self.group_id is not None or self.char_offset):
            raise ValueError("group_id and char_offset need the archive_id they belong to")
        browsing = self.mode in ("threads", "observations") or self.archive_id is not None
        if self.query is None and not browsing:
            raise ValueError(
                "query is required (mode 'threads' lists without one, and so does mode "
                "'observations', which then lists the archived observations)"
            )
        return self


def create_recall_tool(
    memory: Memory,
    *,
    thread_id: str | None = None,
    resource_id: str | None = None,
    name: str = TOOL_NAME,
    per_page: int = 5,
) -> StructuredTool:
    """Build the tool over `memory` (ids fixed here or taken from each call's config; a call
    with no owner at all raises `ConfigurationError` to the developer)."""
    if not is_count(per_page, at_least=1) or per_page > 50:
        raise ConfigurationError(f"per_page must be an int in 1..50, got {per_page!r}")

    def owner(run_config: RunnableConfig | None) -> str:
        found, _thread = tool_ids(
            run_config,
            thread_id=thread_id,
            resource_id=resource_id,
            default_resource_id=memory.default_resource_id,
        )
        if found is None:
            raise ConfigurationError(
                f"the {name} tool needs to know whose memory to search: run it in a graph "
                'invoked with config={"configurable": {"thread_id": ..., "user_id": ...}}, '
                "or pass resource_id= to memory.recall_tool()"
            )
        return found

    # a plain string is the query (LangChain's single-input convention: ``tool.invoke("tea")``
    # passes it as the first positional argument); the run's config comes by keyword
    def func(query: str | None = None, *, config: RunnableConfig, **kwargs: Any) -> str:
        arguments = kwargs if query is None else {"query": query, **kwargs}
        return search_for_model(memory, owner(config), arguments, per_page=per_page)

    async def coroutine(query: str | None = None, *, config: RunnableConfig, **kwargs: Any) -> str:
        arguments = kwargs if query is None else {"query": query, **kwargs}
        return await asearch_for_model(memory, owner(config), arguments, per_page=per_page)

    return StructuredTool.from_function(
        func=func,
        coroutine=coroutine,
        name=name,
        description=DESCRIPTION,
        args_schema=RecallArguments,
        handle_tool_error=True,
        handle_validation_error=_validation_message,
    )


def search_for_model(
    memory: Memory, resource_id: str, arguments: dict[str, Any], *, per_page: int = 5
) -> str:
    """The tool's answer to `arguments` (`RecallArguments`) over `resource_id`'s memory; a
    `ToolException` saying what to fix for bad arguments or an unknown thread (the MCP server
    answers with the same words)."""
    return run_sync(_answer(memory, resource_id, _arguments(arguments), per_page))


async def asearch_for_model(
    memory: Memory, resource_id: str, arguments: dict[str, Any], *, per_page: int = 5
) -> str:
    """Async `search_for_model`."""
    return await run_async(_answer(memory, resource_id, _arguments(arguments), per_page))


def _answer(memory: Memory, who: str, args: RecallArguments, per_page: int) -> Steps[str]:
    """The tool's text for one call, in any mode (written once: `twins`)."""
    mode = args.mode or ("observations" if args.archive_id else "hybrid")
    try:
        page = (
            args.page
            if args.cursor is None
            else read_cursor(args.cursor, mode, args.query, args.thread_id)
        )
    except CursorError as exc:
        raise ToolException(f"{exc}.") from exc
    try:
        if mode == "threads":
            return (yield from listings.threads(memory.storage, who, args.query, page, per_page))
        if mode == "observations":  # (a message search checks the thread's owner itself)
            if args.archive_id is not None:
                return (
                    yield from archived.reading(
                        memory.storage, who, args.archive_id, args.group_id, args.char_offset
                    )
                )
            if args.thread_id is not None:
                yield from _own_thread(memory, who, args.thread_id)
            keys = yield from listings.owned_keys(memory.storage, who, args.thread_id)
            if args.query is None:
                return (
                    yield from archived.listing(
                        memory.storage,
                        keys,
                        page,
                        per_page,
                        lambda at: listings.more(mode, None, args.thread_id, at),
                    )
                )
            return (
                yield from listings.observations(
                    memory.storage, who, keys, args.query, args.thread_id, page, per_page
                )
            )
        query = args.query or ""  # (never None here: the arguments' validator requires one)
        found = yield from call(
            memory.search_messages, query, resource_id=who, **_search(args, mode, page, per_page)
        )
    except MastraMemoryError as exc:
        raise ToolException(_explain(exc, args)) from exc
    return _render(found, args, mode)


def _own_thread(memory: Memory, who: str, thread_id: str) -> Steps[None]:
    """A thread the call names must be the caller's (another's reads as unknown)."""
    thread = yield from call(memory.storage.get_thread, thread_id)
    if thread is None or thread.resource_id != who:
        raise ThreadNotFoundError(f"no thread {thread_id!r}")


def _search(args: RecallArguments, mode: str, page: int, per_page: int) -> dict[str, Any]:
    return {
        "thread_id": args.thread_id,
        "since": args.since,
        "until": args.until,
        "mode": mode,
        "page": page,
        "per_page": per_page,
    }


def _arguments(kwargs: dict[str, Any]) -> RecallArguments:
    try:
        return RecallArguments.model_validate(kwargs)
    except ValidationError as exc:
        raise ToolException(_validation_message(exc)) from exc


def _validation_message(exc: Any) -> str:
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return f"Invalid arguments ({problems}). Fix them and call again."
    return f"Invalid arguments: {exc}. Fix them and call again."


def _explain(exc: MastraMemoryError, args: RecallArguments) -> str:
    if isinstance(exc, ResourceMismatchError) or type(exc).__name__ == "ThreadNotFoundError":
        # another resource's thread reads as unknown: its existence is not revealed
        return (
            f"There is no conversation {args.thread_id!r} in this user's memory. Search "
            "without thread_id, or use a thread id from an earlier result."
        )
    return f"The search failed: {exc}. Fix the arguments and call again."


def _render(found: Page[SearchHit], args: RecallArguments, mode: str) -> str:
    if not found.items:
        where = f" in conversation {args.thread_id!r}" if args.thread_id else ""
        if found.total and found.page:
            return (
                f"No results on page {found.page}: there are {found.total} in all "
                f"(pages 0..{(found.total - 1) // (found.per_page or 1)})."
            )
        return f"Nothing in memory matches {args.query!r}{where}."
    pages = -(-found.total // (found.per_page or found.total))
    head = f"{found.total} messages match {args.query!r} (page {found.page} of 0..{pages - 1}):"
    lines = [head]
    first = found.page * (found.per_page or 0)
    for n, hit in enumerate(found.items, start=first + 1):
        title = f'"{hit.thread_title}"' if hit.thread_title else "untitled"
        text = " ".join(message_text(hit.message).split())
        if len(text) > SNIPPET_CHARS:
            text = text[: SNIPPET_CHARS - 1] + "…"
        when = f"{hit.created_at:%Y-%m-%d %H:%M}"
        lines.append(
            f"{n}. [{when} · {title} (thread {hit.thread_id})] {mastra_role(hit.message)}: {text}"
        )
    if found.has_more:
        lines.append(listings.more(mode, args.query, args.thread_id, found.page))
    return "\n".join(lines)
