"""Keeping the vector index in step with storage, for `Memory` with semantic recall on.

Saving never fails because of the vector store: messages are stored first, and each is marked
``embedded`` only once its vector is written. If Chroma is down, the save still succeeds, a
warning is logged, and the missing embeddings are written by the next save (up to
``BACKFILL_BATCH`` at a time) or by ``memory.backfill_embeddings()`` / the CLI's ``reindex``.
Deleting messages or threads removes their vectors; updating a message re-embeds it. Recall
loads every hit from storage, so a vector left behind by a failed delete is never returned.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage

from .errors import VectorStoreError
from .processors.semantic_recall import RecallOptions, SemanticRecall, last_human_text
from .storage.base import MemoryStorage
from .storage.records import StoredMessage
from .storage.sqlite import SQLiteStorage
from .vector import ChromaVectorStore

logger = logging.getLogger("langchain_mastra_memory")
BACKFILL_BATCH = 200


def default_vector_store(storage: MemoryStorage) -> ChromaVectorStore:
    """Embedded Chroma beside a SQLite file (``<file>.chroma``), else in memory."""
    if isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
        return ChromaVectorStore(path=Path(storage.path).with_suffix(".chroma"))
    return ChromaVectorStore()


class RecallIndex:
    """The semantic-recall side of `Memory`: index on save, forget on delete, recall on read."""

    def __init__(
        self,
        storage: MemoryStorage,
        options: bool | dict[str, Any],
        vector: ChromaVectorStore | None,
        embedder: Embeddings | None,
    ) -> None:
        parsed = RecallOptions.parse(options)
        if parsed.mode != "keyword":
            if embedder is None:
                from .embeddings import default_embedder

                embedder = default_embedder()
            if vector is None:
                vector = default_vector_store(storage)
        self.processor = SemanticRecall(storage, vector, embedder, options=parsed)
        self.storage = storage
        self.vector = vector
        self.embedder = self.processor.embedder

    def _warn(self, exc: Exception) -> None:
        logger.warning("semantic recall: embeddings not written (%s); they will be backfilled", exc)

    def after_save(self, stored: Sequence[StoredMessage]) -> None:
        if self.vector is None:  # keyword mode: the full-text index is kept by storage itself
            return
        try:
            self.processor.index(stored)
            if self.storage.unembedded(limit=1):
                self.processor.backfill(limit=BACKFILL_BATCH, max_batches=1)
        except VectorStoreError as exc:
            self._warn(exc)

    async def aafter_save(self, stored: Sequence[StoredMessage]) -> None:
        if self.vector is None:
            return
        try:
            await self.processor.aindex(stored)
            if await self.storage.aunembedded(limit=1):
                await _arun(self.processor.backfill, limit=BACKFILL_BATCH, max_batches=1)
        except VectorStoreError as exc:
            self._warn(exc)

    def forget(self, *, message_ids: Sequence[str] = (), thread_id: str | None = None) -> None:
        try:
            self.processor.forget(message_ids=message_ids, thread_id=thread_id)
        except VectorStoreError as exc:
            logger.warning("semantic recall: vectors of deleted messages not removed (%s)", exc)

    async def aforget(
        self, *, message_ids: Sequence[str] = (), thread_id: str | None = None
    ) -> None:
        try:
            await self.processor.aforget(message_ids=message_ids, thread_id=thread_id)
        except VectorStoreError as exc:
            logger.warning("semantic recall: vectors of deleted messages not removed (%s)", exc)

    def recalled(
        self,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage],
        new: Sequence[BaseMessage],
    ) -> list[BaseMessage]:
        """Messages recalled for the last human message of `new` (or of the history)."""
        query, exclude = _query(history, new)
        if not query:
            return []
        found = self.processor.recall(
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            exclude=exclude,
            never_hits=frozenset(m.id for m in new if m.id),
        )
        return SemanticRecall.assemble(found, thread_id, self.processor.titles(found))

    async def arecalled(
        self,
        thread_id: str,
        resource_id: str,
        history: Sequence[BaseMessage],
        new: Sequence[BaseMessage],
    ) -> list[BaseMessage]:
        """Async `recalled`."""
        query, exclude = _query(history, new)
        if not query:
            return []
        found = await self.processor.arecall(
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            exclude=exclude,
            never_hits=frozenset(m.id for m in new if m.id),
        )
        titles = await self.processor.atitles(found)
        return SemanticRecall.assemble(found, thread_id, titles)


def _query(history: Sequence[BaseMessage], new: Sequence[BaseMessage]) -> tuple[str, set[str]]:
    """The recall query (last human text, '' if blank) and the ids already in the context."""
    query = last_human_text(new) or last_human_text(history)
    return query if query.strip() else "", {m.id for m in [*history, *new] if m.id}


async def _arun(func: Any, *args: Any, **kwargs: Any) -> Any:
    from langchain_core.runnables.config import run_in_executor

    return await run_in_executor(None, lambda: func(*args, **kwargs))
