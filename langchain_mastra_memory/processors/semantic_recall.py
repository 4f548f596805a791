"""`SemanticRecall`: recall older messages by meaning, by words, or both (a processor)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage

from ..errors import ConfigurationError
from ..messages import ids_of
from ..recall.index import DEFAULT_MODE, Mode, RecallHit, RecallIndex, RecallOptions
from ..recall.vector import VectorStore
from ..storage.base import MemoryStorage
from ..storage.records import StoredMessage
from ..threads.ids import ids_from_options
from ..turn.recall_block import assembled, last_human_text, recalled_block
from ..twins import Steps, run_async, run_sync
from .base import MemoryProcessor

Messages = list[BaseMessage]


class SemanticRecall(MemoryProcessor):
    """Recall older messages relevant to the last human message (Mastra's ``SemanticRecall``).

    **Input side**: the query is the text of the last ``HumanMessage``; it is searched within the
    thread (``scope="thread"``) or across all threads of the resource (``scope="resource"``);
    vector hits under `threshold` (cosine similarity) are dropped; each hit comes with
    `message_range` neighbours from storage; messages already in the input are skipped. Hits from
    the current thread are inserted as messages (chronological, before the input); hits from other
    threads become one ``SystemMessage`` grouped by conversation and day, with timestamps. Recalled
    messages are tagged ``response_metadata["langchain_mastra_memory"] == "semantic_recall"``.

    **Output side**: `index` embeds new user and assistant messages (system and tool messages
    are skipped) and stores them with their metadata; embeddings go through the process-wide
    cache, so a text is embedded once.

    Beyond Mastra, ``mode="keyword"`` uses the storage's full-text index (BM25) and ``"hybrid"``
    fuses the two: each side's scores are normalised over a deep candidate pool and added with
    equal weights (`recall.index.fuse`). The default, ``"hybrid"``, is the mode that won the
    project's evaluation on real multi-session chat (``bench/recall_eval.py``; README, "Recall
    quality"); ``"vector"`` is Mastra's own behaviour.
    Reads ``thread_id``/``resource_id`` from ``config["configurable"]``.
    """

    name = "SemanticRecall"

    def __init__(
        self,
        storage: MemoryStorage,
        vector: VectorStore | None = None,
        embedder: Embeddings | None = None,
        *,
        top_k: int = 4,
        message_range: int | dict[str, int] = 1,
        scope: str = "resource",
        threshold: float | None = None,
        index_name: str | None = None,
        mode: Mode = DEFAULT_MODE,
        options: RecallOptions | None = None,
    ) -> None:
        options = options or RecallOptions.parse(
            {
                "top_k": top_k,
                "message_range": message_range,
                "scope": scope,
                "threshold": threshold,
                "index_name": index_name,
                "mode": mode,
            }
        )
        self.recall_index = RecallIndex(storage, vector, embedder, options=options)
        self.options = options
        self.storage = storage
        self.vector = vector
        self.embedder = self.recall_index.embedder

    def __repr__(self) -> str:
        o = self.options
        return f"SemanticRecall(mode={o.mode!r}, top_k={o.top_k}, scope={o.scope!r})"

    # -- the index's operations, for direct use ----------------------------------------------
    def index_name(self) -> str:
        """The vector collection in use (derived from the embedder's model and dimension)."""
        return self.recall_index.upkeep.index_name()

    def search(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int | None = None,
    ) -> list[RecallHit]:
        """Hits for `query` (best first), by the configured mode; [] for a blank query."""
        return self.recall_index.search(
            query, resource_id=resource_id, thread_id=thread_id, limit=limit
        )

    async def asearch(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int | None = None,
    ) -> list[RecallHit]:
        """Async `search`."""
        return await self.recall_index.asearch(
            query, resource_id=resource_id, thread_id=thread_id, limit=limit
        )

    def index(self, stored: Sequence[StoredMessage]) -> int:
        """Output side: embed and store user/assistant messages; returns how many."""
        return self.recall_index.upkeep.index(stored)

    async def aindex(self, stored: Sequence[StoredMessage]) -> int:
        """Async `index`."""
        return await self.recall_index.upkeep.aindex(stored)

    def backfill(self, *, limit: int = 500, max_batches: int | None = None) -> int:
        """Index messages whose embedding is missing (e.g. saved while Chroma was down)."""
        return self.recall_index.upkeep.backfill(limit=limit, max_batches=max_batches)

    def forget(self, *, message_ids: Sequence[str] = (), thread_id: str | None = None) -> None:
        """Remove vectors of deleted messages or of a deleted thread."""
        self.recall_index.upkeep.forget(message_ids=message_ids, thread_id=thread_id)

    async def aforget(
        self, *, message_ids: Sequence[str] = (), thread_id: str | None = None
    ) -> None:
        """Async `forget`."""
        await self.recall_index.upkeep.aforget(message_ids=message_ids, thread_id=thread_id)

    # -- input side --------------------------------------------------------------------------
    def _ids(self, opts: dict[str, Any]) -> tuple[str, str | None]:
        thread_id, resource_id = ids_from_options(opts, processor="SemanticRecall")
        if self.options.scope == "thread" and not thread_id:
            raise ConfigurationError("SemanticRecall with scope 'thread' needs a thread_id")
        return resource_id, thread_id

    def _process(
        self, messages: list[BaseMessage], opts: dict[str, Any]
    ) -> Steps[list[BaseMessage]]:
        query = last_human_text(messages)
        if not query.strip():
            return list(messages)
        resource_id, thread_id = self._ids(opts)
        block = yield from recalled_block(
            self.recall_index,
            self.storage,
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            exclude=set(ids_of(messages)),
        )
        return block + list(messages)

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        return run_sync(self._process(messages, opts))

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        return await run_async(self._process(messages, opts))

    assemble = staticmethod(assembled)  # recalled messages as the context shows them
