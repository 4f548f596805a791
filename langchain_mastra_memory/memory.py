"""`Memory`: the front door, a thin facade over its parts; the shapes build on it, not back."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import StructuredTool
from typing_extensions import Unpack

from .browsing import MessagePage, Page, SearchHit, message_page, search_page, thread_page
from .config import call_options
from .config import params as kw
from .config.options import MemoryOptions, RetentionPolicy
from .config.params import Ids, In, Messages, Node, Opt
from .conversation.branches import branches_of, new_branch
from .lifecycle import Erasure
from .lifecycle.retention import Pruner, PruneReport
from .messages import MessageList
from .observational.as_of import Scope, observations_as_of
from .observational.extractors import extracted_values, keeps_working_memory
from .observational.service import ObservationalMemory
from .recall.index import RecallIndex, RecallOptions
from .recall.writer import VectorBacklog
from .storage.base import MemoryStorage
from .storage.records import ObservationGroup, Thread
from .storage.sqlite.backend import SQLiteStorage, storage_or_default  # noqa: F401 (the doctest uses it)
from .threads.ids import resolve_ids, visible_to, with_new_id
from .threads.summaries import ThreadQueries, ThreadSummary
from .titles import TitleWriter
from .tokens.counting import warm_up
from .turn.context import TurnContext, warn_if_limiter_not_last
from .turn.writes import MemoryWrites
from .twins import run_async, run_sync
from .working_memory import WorkingMemoryConfig, WorkingMemoryStore

if TYPE_CHECKING:
    from .integrations import graph, lcel, middleware, recall_tool  # noqa: F401
    from .integrations.chat_history import MemoryChatMessageHistory
    from .integrations.checkpointer import MemoryCheckpointer
    from .integrations.retriever import MemoryRetriever
    from .integrations.store import MemoryStore
    from .working_memory import tool  # noqa: F401 (`_shape` imports these on first use)

DEFAULT_DATABASE = "memory.db"
Groups = list[ObservationGroup]


class Memory:
    """Agent memory: threads and messages in storage, recalled through processors.

    With no arguments the storage is a SQLite file ``memory.db`` in the current directory
    (Mastra's default, ``file:memory.db``); pass ``SQLiteStorage(path)`` or ``":memory:"`` to
    choose. Every method has an ``a``-prefixed async twin; `close` releases it all.

    Examples:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> memory = Memory(storage=SQLiteStorage(":memory:"), options={"last_messages": 2})
        >>> _ = memory.create_thread(resource_id="alice", thread_id="t1")
        >>> _ = memory.save_messages(
        ...     [HumanMessage("hi"), AIMessage("hello"), HumanMessage("bye")],
        ...     thread_id="t1", resource_id="alice")
        >>> [m.content for m in memory.recall(thread_id="t1", resource_id="alice")]
        ['hello', 'bye']
    """

    # the parts, made in `__init__`; each method below forwards to one of them
    options: MemoryOptions
    storage: MemoryStorage
    recall_index: RecallIndex | None  # semantic recall (None: off)
    searcher: RecallIndex  # what pages and searches go through (keyword when recall is off)
    vector: Any
    embedder: Any
    titles: TitleWriter
    working_memory: WorkingMemoryConfig
    working: WorkingMemoryStore
    observation_scope: Scope
    writes: MemoryWrites  # writes, with the vectors' upkeep behind them
    processors: list[Runnable[Any, Any]]
    checkpointers: weakref.WeakSet[MemoryCheckpointer]
    turns: TurnContext
    queries: ThreadQueries
    erasure: Erasure
    pruner: Pruner

    def __init__(
        self,
        *,
        storage: MemoryStorage | None = None,
        vector: Any = None,
        embedder: Any = None,
        options: MemoryOptions | dict[str, Any] | None = None,
        processors: Sequence[Runnable[Any, Any]] = (),
        default_resource_id: str | None = None,
    ) -> None:
        self.options = MemoryOptions.parse(options)
        self.default_resource_id = default_resource_id
        self.storage = storage_or_default(storage, Path(DEFAULT_DATABASE))
        # the parts, each made on the ones below it, none given the facade to call back into
        storage, options = self.storage, self.options
        self.recall_index = None
        if options.semantic_recall:
            self.recall_index = RecallIndex.with_defaults(
                storage, options.semantic_recall, vector, embedder
            )
            vector, embedder = self.recall_index.vector, self.recall_index.embedder
        self.vector, self.embedder = vector, embedder
        # what searches and pages go through: semantic recall's index, else keyword search
        self.searcher = self.recall_index or RecallIndex(
            storage, options=RecallOptions(mode="keyword")
        )
        self.titles = TitleWriter(storage, options.generate_title, exit_drain=options.exit_drain)
        self.working_memory = WorkingMemoryConfig.parse(options.working_memory)
        self.working = WorkingMemoryStore(storage, self.working_memory)
        om = ObservationalMemory.from_option(
            storage, options.observational_memory, self.working, exit_drain=options.exit_drain
        )
        self.observation_scope = om.config.scope if om is not None else "thread"
        self.working.observed = om is not None and keeps_working_memory(om.config)
        upkeep = None if self.recall_index is None else self.recall_index.upkeep
        self.writes = MemoryWrites(
            storage,
            upkeep,
            self.titles,
            om,
            read_only=options.read_only,
            exit_drain=options.exit_drain,
        )
        self.processors = list(processors)
        warn_if_limiter_not_last(self.processors)
        self.checkpointers = weakref.WeakSet()
        self.turns = TurnContext(storage, options, self.recall_index, self.working, processors, om)
        self.queries = ThreadQueries(storage, self.writes)
        self.erasure = Erasure(storage, self.writes, self.checkpointers)
        self.pruner = Pruner(
            storage,
            self.writes,
            self.erasure,
            self.checkpointers,
            self.checkpointer,
            RetentionPolicy.parse(options.retention),
        )
        warm_up()  # once per process: what the first turns would otherwise pay

    def __repr__(self) -> str:
        return f"Memory(storage={self.storage!r}, options={self.options!r})"

    def __enter__(self) -> Memory:
        """``with Memory(...) as memory:`` closes it on the way out (`close`)."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close it (the block's exception, if any, goes on)."""
        self.close()

    async def __aenter__(self) -> Memory:
        """``async with Memory(...) as memory:`` closes it on the way out (`aclose`)."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close it, awaited (the block's exception, if any, goes on)."""
        await self.aclose()

    def ids(self, config: RunnableConfig | None, *, context: Any = None) -> tuple[str, str]:
        """``(thread_id, resource_id)`` of a call by the package's one rule (see `ids`)."""
        return resolve_ids(config, default_resource_id=self.default_resource_id, context=context)

    # -- threads -------------------------------------------------------------------------------
    def create_thread(self, **thread: Unpack[kw.NewThread]) -> Thread:
        """Create a thread for `resource_id` (a new id when `thread_id` is None)."""
        return self.storage.create_thread(**with_new_id(thread, "thread_id"))

    async def acreate_thread(self, **thread: Unpack[kw.NewThread]) -> Thread:
        """Async `create_thread`."""
        return await self.storage.acreate_thread(**with_new_id(thread, "thread_id"))

    def get_thread(self, thread_id: str, *, resource_id: str | None = None) -> Thread | None:
        """The thread, or None. With `resource_id`, a thread of another resource is None too."""
        return visible_to(self.storage.get_thread(thread_id), resource_id)

    async def aget_thread(self, thread_id: str, *, resource_id: str | None = None) -> Thread | None:
        """Async `get_thread`."""
        return visible_to(await self.storage.aget_thread(thread_id), resource_id)

    def ensure_thread(self, **ref: Unpack[kw.ThreadRef]) -> Thread:
        """Get the thread, creating it for `resource_id` if it does not exist yet."""
        return self.storage.ensure_thread(**ref)

    async def aensure_thread(self, **ref: Unpack[kw.ThreadRef]) -> Thread:
        """Async `ensure_thread`."""
        return await self.storage.aensure_thread(**ref)

    def list_threads(self, **query: Unpack[kw.ThreadQuery]) -> list[Thread]:
        """Threads filtered by owner and metadata equality (archived ones only with
        ``archived=True``, or ``None`` for all), ordered, sliced by `limit` / `offset`."""
        return self.storage.list_threads(**kw.unarchived(query))

    async def alist_threads(self, **query: Unpack[kw.ThreadQuery]) -> list[Thread]:
        """Async `list_threads`."""
        return await self.storage.alist_threads(**kw.unarchived(query))

    def page_threads(self, **query: Unpack[kw.ThreadPageQuery]) -> Page[Thread]:
        """A page of threads with ``total`` and ``has_more`` (Mastra 1.x ``listThreads``)."""
        return run_sync(thread_page(self.storage, **query))

    async def apage_threads(self, **query: Unpack[kw.ThreadPageQuery]) -> Page[Thread]:
        """Async `page_threads`."""
        return await run_async(thread_page(self.storage, **query))

    def archive_thread(self, thread_id: str, *, resource_id: str | None = None) -> Thread:
        """Archive a thread: out of listings and recall (its messages are kept) until
        `unarchive_thread`; ``updated_at`` is kept."""
        return self.storage.set_archived(thread_id, archived=True, resource_id=resource_id)

    async def aarchive_thread(self, thread_id: str, *, resource_id: str | None = None) -> Thread:
        """Async `archive_thread`."""
        return await self.storage.aset_archived(thread_id, archived=True, resource_id=resource_id)

    def unarchive_thread(self, thread_id: str, *, resource_id: str | None = None) -> Thread:
        """Bring an archived thread back into listings and recall."""
        return self.storage.set_archived(thread_id, archived=False, resource_id=resource_id)

    async def aunarchive_thread(self, thread_id: str, *, resource_id: Opt = None) -> Thread:
        """Async `unarchive_thread`."""
        return await self.storage.aset_archived(thread_id, archived=False, resource_id=resource_id)

    def update_thread(self, thread_id: str, **update: Unpack[kw.ThreadUpdate]) -> Thread:
        """Set the title and/or merge keys into the metadata."""
        return self.storage.update_thread(thread_id, **update)

    async def aupdate_thread(self, thread_id: str, **update: Unpack[kw.ThreadUpdate]) -> Thread:
        """Async `update_thread`."""
        return await self.storage.aupdate_thread(thread_id, **update)

    def delete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        """Delete a thread and all keyed by it, checkpoints too (`Erasure.delete_thread`)."""
        return self.erasure.delete_thread(thread_id, resource_id)

    async def adelete_thread(self, thread_id: str, *, resource_id: str | None = None) -> bool:
        """Async `delete_thread`."""
        return await self.erasure.adelete_thread(thread_id, resource_id)

    def prune(self, *, max_seconds: float | None = 30.0, batch_size: int = 500) -> PruneReport:
        """Apply ``options["retention"]``: delete what is older than its kind's age, in
        batches, for up to `max_seconds` (``report.done`` False: call again to go on).
        Safe beside live turns and other processes pruning (`lifecycle.retention`)."""
        return self.pruner.prune(max_seconds=max_seconds, batch_size=batch_size)

    async def aprune(
        self, *, max_seconds: float | None = 30.0, batch_size: int = 500
    ) -> PruneReport:
        """Async `prune`."""
        return await self.pruner.aprune(max_seconds=max_seconds, batch_size=batch_size)

    def delete_resource(self, resource_id: str) -> bool:
        """Erase a resource (a user's right to erasure): every thread, message, vector,
        working memory, observation, withheld id, checkpoint this memory can reach, and the
        store items whose namespace holds `resource_id` as a label; nothing of any other.
        False if memory held nothing of it (`Erasure.delete_resource`)."""
        return self.erasure.delete_resource(resource_id)

    async def adelete_resource(self, resource_id: str) -> bool:
        """Async `delete_resource`."""
        return await self.erasure.adelete_resource(resource_id)

    def clone_thread(self, thread_id: str, **clone: Unpack[kw.CloneOptions]) -> Thread:
        """Copy a thread under the same resource: its messages (all, or those `message_filter`
        keeps, the newest `message_limit`; new ids, embedded at once), its thread-scoped
        working memory and observation log."""
        return self.writes.clone(thread_id, **with_new_id(clone, "new_thread_id"))

    async def aclone_thread(self, thread_id: str, **clone: Unpack[kw.CloneOptions]) -> Thread:
        """Async `clone_thread`."""
        return await self.writes.aclone(thread_id, **with_new_id(clone, "new_thread_id"))

    def transfer_thread(self, thread_id: str, **to: Unpack[kw.Transfer]) -> Thread:
        """Give a thread to `to_resource_id`: messages, vectors, keyword index, working memory
        and observation log follow (`resource_id`: the caller, who must own it)."""
        return self.writes.transfer(thread_id, **to)

    async def atransfer_thread(self, thread_id: str, **to: Unpack[kw.Transfer]) -> Thread:
        """Async `transfer_thread`."""
        return await self.writes.atransfer(thread_id, **to)

    def branch_thread(self, thread_id: str, **branch: Unpack[kw.BranchOptions]) -> Thread:
        """Move the messages after `after_message_id` into a new branch thread (`branches`)."""
        return run_sync(new_branch(self.writes, thread_id, **kw.branching(branch)))

    async def abranch_thread(self, thread_id: str, **branch: Unpack[kw.BranchOptions]) -> Thread:
        """Async `branch_thread`."""
        return await run_async(new_branch(self.writes, thread_id, **kw.branching(branch)))

    def list_branches(self, thread_id: str, *, resource_id: Opt = None) -> list[Thread]:
        """The thread's branches (forks, replays, `branch_thread`) that hold messages, oldest
        first (a branch whose messages all came home is removed)."""
        return run_sync(branches_of(self.storage, thread_id, resource_id=resource_id))

    async def alist_branches(self, thread_id: str, *, resource_id: Opt = None) -> list[Thread]:
        """Async `list_branches`."""
        return await run_async(branches_of(self.storage, thread_id, resource_id=resource_id))

    # -- messages ------------------------------------------------------------------------------
    def save_messages(self, messages: In, **to: Unpack[kw.SaveOptions]) -> Messages:
        """Save to an existing thread of `resource_id`; returns the messages with ids."""
        return self.writes.save(messages, **to)

    async def asave_messages(self, messages: In, **to: Unpack[kw.SaveOptions]) -> Messages:
        """Async `save_messages`."""
        return await self.writes.asave(messages, **to)

    def get_messages(self, **query: Unpack[kw.MessageQuery]) -> Messages:
        """The thread's messages in chronological order; with `last_messages`, the newest N (a
        `MessageList`: a list that knows its system messages, so limiting it follows the budget)."""
        return MessageList(s.message for s in self.storage.list_messages(**kw.listing(query)))

    async def aget_messages(self, **query: Unpack[kw.MessageQuery]) -> Messages:
        """Async `get_messages`."""
        return MessageList(
            s.message for s in await self.storage.alist_messages(**kw.listing(query))
        )

    def list_messages_by_id(self, message_ids: Ids, resource_id: Opt = None) -> Messages:
        """The messages with these ids (Mastra's ``listMessagesById``; `resource_id`'s only)."""
        return self.queries.list_messages_by_id(message_ids, resource_id=resource_id)

    async def alist_messages_by_id(self, message_ids: Ids, resource_id: Opt = None) -> Messages:
        """Async `list_messages_by_id`."""
        return await self.queries.alist_messages_by_id(message_ids, resource_id=resource_id)

    def summarize_thread(self, thread_id: str, **opts: Unpack[kw.SummaryOptions]) -> ThreadSummary:
        """A thread's summary by `model`, nothing stored (Mastra's ``summarizeThread``)."""
        return self.queries.summarize_thread(thread_id, **opts)

    async def asummarize_thread(
        self, thread_id: str, **opts: Unpack[kw.SummaryOptions]
    ) -> ThreadSummary:
        """Async `summarize_thread`."""
        return await self.queries.asummarize_thread(thread_id, **opts)

    def page_messages(self, thread_id: str, **query: Unpack[kw.MessagePageQuery]) -> MessagePage:
        """A page of the thread's messages with ``total`` and ``has_more``, plus the
        ``include``d and ``query``-recalled ones (Mastra 1.x ``recall``'s paging)."""
        return run_sync(message_page(self.storage, self.searcher, thread_id, **query))

    async def apage_messages(
        self, thread_id: str, **query: Unpack[kw.MessagePageQuery]
    ) -> MessagePage:
        """Async `page_messages`."""
        return await run_async(message_page(self.storage, self.searcher, thread_id, **query))

    def search_messages(self, query: str, **search: Unpack[kw.SearchQuery]) -> Page[SearchHit]:
        """A page of the resource's messages best matching `query`, with thread and date."""
        return run_sync(search_page(self.storage, self.searcher, query, **search))

    async def asearch_messages(
        self, query: str, **search: Unpack[kw.SearchQuery]
    ) -> Page[SearchHit]:
        """Async `search_messages`."""
        return await run_async(search_page(self.storage, self.searcher, query, **search))

    def recall(self, **request: Unpack[kw.RecallRequest]) -> Messages:
        """Recalled messages and the newest ``last_messages``, through the processors;
        `new_messages` (the turn) are never changed or returned, `history` replaces storage's."""
        return self.turns.remembered(**call_options.carried(request))

    async def arecall(self, **request: Unpack[kw.RecallRequest]) -> Messages:
        """Async `recall`."""
        return await self.turns.aremembered(**call_options.carried(request))

    def update_messages(self, messages: In, *, resource_id: str | None = None) -> Messages:
        """Replace stored messages by id (content, tool calls, metadata); re-embeds them."""
        return self.writes.update(messages, resource_id=resource_id)

    async def aupdate_messages(self, messages: In, *, resource_id: str | None = None) -> Messages:
        """Async `update_messages`."""
        return await self.writes.aupdate(messages, resource_id=resource_id)

    def delete_messages(self, message_ids: Ids, *, resource_id: Opt = None) -> int:
        """Delete messages (and their vectors) by id; returns how many were deleted."""
        return self.writes.delete(message_ids, resource_id=resource_id)

    async def adelete_messages(self, message_ids: Ids, *, resource_id: Opt = None) -> int:
        """Async `delete_messages`."""
        return await self.writes.adelete(message_ids, resource_id=resource_id)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every stored message is embedded, whichever process stored it (what an
        ended process left in the backlog too), and this process's titles and observations
        are written; False if `timeout` ran out or the vector store refused the writes."""
        return self.writes.flush(timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        """Async `flush`."""
        return await self.writes.aflush(timeout)

    def settled(self, timeout: float | None = None) -> None:
        """Wait until this memory's background work is done (Mastra's ``settled``)."""
        self.queries.settled(timeout)

    async def asettled(self, timeout: float | None = None) -> None:
        """Async `settled`."""
        await self.queries.asettled(timeout)

    def close(self, timeout: float | None = 30.0) -> bool:
        """`flush`, stop the threads, close vectors and storage; whether all was drained."""
        return self.writes.close(timeout)

    async def aclose(self, timeout: float | None = 30.0) -> bool:
        """Async `close` (``async with Memory(...) as memory:`` calls it)."""
        return await self.writes.aclose(timeout)

    def vector_backlog(self) -> VectorBacklog:
        """How many saved messages wait for their vectors, and why the last write failed."""
        return self.writes.backlog()

    async def avector_backlog(self) -> VectorBacklog:
        """Async `vector_backlog`."""
        return await self.writes.abacklog()

    def backfill_embeddings(self, progress: Callable[[int], None] | None = None) -> int:
        """Embed every message whose vector is missing (`progress(n)` per batch); how many."""
        return self.writes.backfill(progress)

    # -- working memory ------------------------------------------------------------------------
    def get_working_memory(self, **ref: Unpack[kw.MemoryRef]) -> Any:
        """The working memory: the Markdown document, or a dict in schema mode (None if unset)."""
        return self.working.get(**ref)

    async def aget_working_memory(self, **ref: Unpack[kw.MemoryRef]) -> Any:
        """Async `get_working_memory`."""
        return await self.working.aget(**ref)

    def update_working_memory(self, memory: Any, **ref: Unpack[kw.MemoryRef]) -> Any:
        """Replace (Markdown) or merge into (schema) the working memory; `WorkingMemoryError`."""
        return self.working.update(memory, **ref)

    async def aupdate_working_memory(self, memory: Any, **ref: Unpack[kw.MemoryRef]) -> Any:
        """Async `update_working_memory`."""
        return await self.working.aupdate(memory, **ref)

    # -- observational memory ------------------------------------------------------------------
    def observations_as_of(self, at: datetime, **ref: Unpack[kw.ObservationsAsOf]) -> Groups:
        """The observation log as it stood at `at`, oldest first (``getObservationsAsOf``)."""
        return run_sync(observations_as_of(self.storage, at, self.observation_scope, **ref))

    async def aobservations_as_of(self, at: datetime, **ref: Unpack[kw.ObservationsAsOf]) -> Groups:
        """Async `observations_as_of`."""
        return await run_async(observations_as_of(self.storage, at, self.observation_scope, **ref))

    def extracted_values(self, **ref: Unpack[kw.ObservationsAsOf]) -> dict[str, Any]:
        """The values the Observer's extractors keep for a scope, by slug (`Extractor`)."""
        return run_sync(extracted_values(self.storage, self.observation_scope, **ref))

    async def aextracted_values(self, **ref: Unpack[kw.ObservationsAsOf]) -> dict[str, Any]:
        """Async `extracted_values`."""
        return await run_async(extracted_values(self.storage, self.observation_scope, **ref))

    def working_memory_tool(self, **ids: Unpack[kw.ToolIds]) -> StructuredTool:
        """The ``update_working_memory`` StructuredTool (ids from here or the call's config)."""
        return cast(
            "StructuredTool", _shape("working_memory_tool").create_working_memory_tool(self, **ids)
        )

    def recall_tool(self, **opts: Unpack[kw.RecallToolOptions]) -> StructuredTool:
        """The ``search_memory`` StructuredTool: the model searches its own past (`recall_tool`)."""
        return cast("StructuredTool", _shape("recall_tool").create_recall_tool(self, **opts))

    # -- the turn ------------------------------------------------------------------------------
    def context(self, new_messages: In, **turn: Unpack[kw.TurnRef]) -> Messages:
        """Working memory, recall, history, then the turn: what OpenAI and Anthropic accept."""
        return self.turns.context(new_messages, **call_options.carried(turn))

    async def acontext(self, new_messages: In, **turn: Unpack[kw.TurnRef]) -> Messages:
        """Async `context`."""
        return await self.turns.acontext(new_messages, **call_options.carried(turn))

    def save_turn(self, messages: In, **ref: Unpack[kw.TurnSave]) -> Messages:
        """Save a turn (creating the thread on first use), skipping what memory injected."""
        return self.writes.save_turn(messages, **call_options.carried(ref))

    async def asave_turn(self, messages: In, **ref: Unpack[kw.TurnSave]) -> Messages:
        """Async `save_turn`."""
        return await self.writes.asave_turn(messages, **call_options.carried(ref))

    def save_new(self, messages: In, **ref: Unpack[kw.TurnSave]) -> Messages:
        """Save the messages (of a graph state, say) that this thread does not hold yet."""
        return self.writes.save_new(messages, **call_options.carried(ref))

    async def asave_new(self, messages: In, **ref: Unpack[kw.TurnSave]) -> Messages:
        """Async `save_new`."""
        return await self.writes.asave_new(messages, **call_options.carried(ref))

    # -- shapes (built on Memory; their modules load when asked for) ---------------------------
    def as_runnable(self) -> Runnable[Any, Messages]:
        """LCEL: ``{"input": str | messages}`` (or messages) -> the messages to send."""
        return cast("Runnable[Any, Messages]", _shape("lcel").context_runnable(self))

    def wrap(self, runnable: Runnable[Any, Any]) -> Runnable[Any, Any]:
        """Put memory around a chat model or chain: assemble, call, save the turn."""
        return cast("Runnable[Any, Any]", _shape("lcel").MemoryWrapped(self, runnable))

    def pre_model_hook(self, *, key: str = "messages") -> Node:
        """LangGraph ``pre_model_hook`` / node: ``{"llm_input_messages": context}``."""
        return self.as_node(key=key)

    def as_node(self, *, key: str = "messages", output_key: str = "llm_input_messages") -> Node:
        """A graph node writing the model's input to `output_key` (the state is not rewritten)."""
        return cast(
            "Runnable[Any, dict[str, Any]]",
            _shape("graph").memory_hook(self, key=key, output_key=output_key),
        )

    def as_retriever(self, **options: Any) -> MemoryRetriever:
        """A LangChain retriever over this memory (`MemoryRetriever`: ``resource_id``,
        ``thread_id``, ``k``, ``mode``, ``message_range``, ``filter``, ``threshold``)."""
        return cast("MemoryRetriever", _shape("retriever").MemoryRetriever(memory=self, **options))

    def middleware(self, *, save: bool = True) -> Any:
        """A ``langchain.agents`` middleware applying memory before and saving after each call
        (``save=False``: applying only, for an agent under `checkpointer`, which saves)."""
        return _shape("middleware").middleware_for(self, save=save)

    def checkpointer(self, saver: Any = None, **opts: Unpack[kw.Mirroring]) -> MemoryCheckpointer:
        """A LangGraph checkpointer around `saver` mirroring threads here (`MemoryCheckpointer`)."""
        return cast(
            "MemoryCheckpointer", _shape("checkpointer").MemoryCheckpointer(self, saver, **opts)
        )

    def store(self, **config: Any) -> MemoryStore:
        """LangGraph's `BaseStore` over this memory: items, ``query=`` search, working memory."""
        return cast("MemoryStore", _shape("store").MemoryStore(self, **config))

    def chat_history(self, **ref: Unpack[kw.ThreadRef]) -> MemoryChatMessageHistory:
        """A `BaseChatMessageHistory` over one thread (created on the first message)."""
        return cast(
            "MemoryChatMessageHistory", _shape("chat_history").MemoryChatMessageHistory(self, **ref)
        )


def _shape(name: str) -> Any:
    """The module of a shape built on `Memory`, imported on first use (they depend on Memory,
    not the reverse: the package's one designed import circle, `Memory`'s factories; the
    type-only imports above make the edges visible)."""
    where = "working_memory.tool" if name == "working_memory_tool" else f"integrations.{name}"
    return import_module(f".{where}", __package__)
