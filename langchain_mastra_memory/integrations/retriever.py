"""`MemoryRetriever`: a resource's memory as a LangChain `BaseRetriever`.

What a RAG chain, ``create_retrieval_chain`` or an LCEL step (``retriever | format_docs``)
expects of a store: ``invoke(query) -> list[Document]``. Each `Document` is one message found
by recall (hybrid, vector or keyword, as configured): its text, and in its metadata the message
id, thread (id and title), resource, role, time, the score the ranking used and each side's
own score (``scores``: cosine and BM25), and its neighbours when ``message_range`` asks for
them (the messages around it, in order, as ``role: text`` lines in ``metadata["context"]``).

The resource is the retriever's (``resource_id=``) or the call's
(``config["configurable"]["resource_id"]`` / ``["user_id"]``, the package's rule); another
resource's messages are never returned, and a thread of another resource reads as empty.

Examples:
    >>> from langchain_core.messages import HumanMessage
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(storage=SQLiteStorage(":memory:"))
    >>> _ = memory.create_thread(thread_id="t1", resource_id="alice", title="Pets")
    >>> _ = memory.save_messages(
    ...     [HumanMessage("my cat is called Tom")], thread_id="t1", resource_id="alice")
    >>> retriever = memory.as_retriever(resource_id="alice", mode="keyword", k=2)
    >>> [(d.page_content, d.metadata["thread_title"]) for d in retriever.invoke("cat")]
    [('my cat is called Tom', 'Pets')]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config
from pydantic import ConfigDict, Field

from ..errors import ConfigurationError
from ..messages import mastra_role, message_text
from ..recall.index import MessageRange, RecallOptions
from ..storage.validation import is_count
from ..threads.ids import tool_ids
from ..twins import Steps, call, run_async, run_sync

if TYPE_CHECKING:
    from ..memory import Memory


class MemoryRetriever(BaseRetriever):
    """A resource's memory as a retriever (see the module doc). `k`: hits per query (``k=``
    on ``invoke`` overrides it for one call); `mode`: the search (default: the memory's);
    `message_range`: neighbours of each hit in its metadata; `filter`: thread metadata to
    match (LangGraph's operators); `threshold`: the lowest vector similarity kept.

    Examples:
        retriever = MemoryRetriever(memory=memory, resource_id="alice", k=4)
        chain = create_retrieval_chain(retriever, combine_docs_chain)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any = Field(exclude=True)
    resource_id: str | None = None
    thread_id: str | None = None
    k: int = Field(default=4, ge=1, le=100)
    mode: Literal["hybrid", "vector", "keyword"] | None = None
    message_range: int | MessageRange = 0
    filter: dict[str, Any] | None = None
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """The documents for `input` (``k=`` overrides `k` for this call)."""
        config = ensure_config(config)
        return super().invoke(input, config, run_config=config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async `invoke`."""
        config = ensure_config(config)
        return await super().ainvoke(input, config, run_config=config, **kwargs)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        run_config: RunnableConfig | None = None,
        k: int | None = None,
        **_: Any,
    ) -> list[Document]:
        return run_sync(self._documents(query, run_config, k))

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        run_config: RunnableConfig | None = None,
        k: int | None = None,
        **_: Any,
    ) -> list[Document]:
        return await run_async(self._documents(query, run_config, k))

    # -- one search ----------------------------------------------------------------------------
    def _owner(self, run_config: RunnableConfig | None) -> tuple[str, str | None]:
        memory: Memory = self.memory
        resource, thread = tool_ids(
            run_config,
            thread_id=self.thread_id,
            resource_id=self.resource_id,
            default_resource_id=memory.default_resource_id,
        )
        if resource is None:
            raise ConfigurationError(
                "MemoryRetriever needs to know whose memory to search: pass resource_id= to "
                'memory.as_retriever(), or invoke it with config={"configurable": '
                '{"resource_id": ...}} (or "user_id")'
            )
        return resource, thread if self.thread_id is not None else None

    def _documents(
        self, query: str, run_config: RunnableConfig | None, k: int | None
    ) -> Steps[list[Document]]:
        memory: Memory = self.memory
        resource_id, thread_id = self._owner(run_config)
        top_k = self.k if k is None else k
        if not is_count(top_k, at_least=1) or top_k > 100:
            raise ConfigurationError(f"k must be an int in 1..100, got {top_k!r}")
        index = memory.searcher
        options = RecallOptions(
            top_k=top_k,
            message_range=self.message_range,
            filter=self.filter,
            threshold=self.threshold,
            mode=self.mode or index.options.mode,
            scope="thread" if thread_id is not None else "resource",
        )
        if thread_id is not None:  # a thread of another resource reads as empty
            found = yield from call(memory.storage.get_thread, thread_id)
            if found is None or found.resource_id != resource_id:
                return []
        sides: dict[str, dict[str, float]] = {}  # the hybrid search's own per-side scores
        hits = yield from index.ranked(
            query, resource_id=resource_id, thread_id=thread_id, options=options, sides=sides
        )
        if not hits:
            return []
        window = options.window
        ids = [h.message_id for h in hits]
        stored = yield from call(
            memory.storage.message_windows,
            ids,
            before=window.before,
            after=window.after,
            resource_id=resource_id,
        )
        threads = yield from call(memory.storage.get_threads, sorted({h.thread_id for h in hits}))
        return [
            _document(hit, stored, threads, sides, resource_id, window)
            for hit in hits
            if any(s.message.id == hit.message_id for s in stored)
        ]


def _document(
    hit: Any,
    stored: list[Any],
    threads: dict[str, Any],
    sides: dict[str, Any],
    owner: str,
    window: MessageRange,
) -> Document:
    """One hit as a `Document`, its neighbours (same thread, in order) in ``context``."""
    found = next(s for s in stored if s.message.id == hit.message_id)
    thread = threads.get(found.thread_id)
    same = [s for s in stored if s.thread_id == found.thread_id]
    at = next(n for n, s in enumerate(same) if s.message.id == hit.message_id)
    around = same[max(0, at - window.before) : at + window.after + 1]
    metadata: dict[str, Any] = {
        "message_id": hit.message_id,
        "thread_id": found.thread_id,
        "thread_title": thread.title if thread is not None else None,
        "resource_id": owner,
        "role": mastra_role(found.message),
        "created_at": found.created_at.isoformat(),
        "score": hit.score,
        "scores": {
            side: scores[hit.message_id]
            for side, scores in sides.items()
            if hit.message_id in scores
        },
    }
    if len(around) > 1:
        metadata["context"] = "\n".join(
            f"{mastra_role(s.message)}: {message_text(s.message)}" for s in around
        )
    return Document(page_content=message_text(found.message), metadata=metadata, id=hit.message_id)
