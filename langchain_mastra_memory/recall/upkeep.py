"""Keeping recall's vectors in step with storage: messages embedded after they are stored
(piece by piece), each marked ``embedded`` once its vector is in; what failed (the vector store
down) written by the next save, `backfill` or the CLI's ``reindex``; deleted messages' vectors
removed, updated ones re-embedded, copies given their sources' vectors.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from ..errors import ConfigurationError, EmbedderChangedError, VectorStoreError
from ..messages import embedding_pieces, mastra_role
from ..storage.base import MemoryStorage
from ..storage.records import StoredMessage, stored_ids
from ..storage.sqlite.backend import SQLiteStorage
from ..twins import Steps, call, run_async, run_sync
from .embedders import CachedEmbeddings, model_id
from .engines.chroma import ChromaVectorStore
from .options import RecallOptions
from .ranking import remember
from .vector import MessageVectors, VectorRecord, VectorStore, index_name_for, pieces_by_message
from .writer import BacklogWriter

logger = logging.getLogger(__name__)

EMBEDDED_ROLES = ("user", "assistant")
FLUSH_TIMEOUT = 30.0  # the longest a search waits for this process's vector writer


def default_vector_store(storage: MemoryStorage) -> VectorStore:
    """pgvector in the database of a `PostgresStorage` (a `ConfigurationError` naming the fix
    when the server lacks it), embedded Chroma beside a SQLite file (``<file>.chroma``), else
    Chroma in memory."""
    from ..storage.postgres.backend import PostgresStorage

    if isinstance(storage, PostgresStorage):
        from .engines.pgvector import PgVectorStore

        return PgVectorStore(storage)
    if isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
        return ChromaVectorStore(path=Path(storage.path).resolve().with_suffix(".chroma"))
    return ChromaVectorStore()


class VectorUpkeep:
    """The vectors of one storage's messages: their collection's name and their upkeep (what
    `RecallIndex` holds as ``upkeep``; `MemoryWrites` writes through it)."""

    def __init__(
        self,
        storage: MemoryStorage,
        vector: VectorStore | None = None,
        embedder: Embeddings | None = None,
        *,
        options: RecallOptions | None = None,
    ) -> None:
        self.options = options or RecallOptions()
        self.storage = storage
        if self.options.mode != "keyword" and (vector is None or embedder is None):
            raise ConfigurationError(
                f"mode {self.options.mode!r} needs a vector store and an embedder"
            )
        self.vector = vector
        check_same_space(vector, embedder)
        self.embedder = CachedEmbeddings(embedder) if embedder is not None else None
        self._index_name: str | None = self.options.index_name
        self._checked = False  # the index holds what storage embedded (`check_searched`)
        self.flush_timeout = FLUSH_TIMEOUT
        self.writer = BacklogWriter(self)

    @property
    def deletes_by_id(self) -> bool:
        """Whether the vector store deletes only by message id (a thread's deletion must name
        its messages: `LangChainVectorStore`)."""
        return bool(getattr(self.vector, "deletes_by_id", False))

    # -- naming --------------------------------------------------------------------------------
    def index_name_steps(self) -> Steps[str]:
        if self._index_name is None:
            assert self.embedder is not None
            dimension = len((yield from call(self.embedder.embed_query, "dimension")))
            self._index_name = index_name_for(model_id(self.embedder), dimension)
        return self._index_name

    def check_searched(self, name: str) -> Steps[None]:
        """After a search of index `name` (which brings an engine's older layout up to date),
        once a process: the index holds what storage says was embedded (its oldest such
        message). An index another embedder built (the name carries the model, its precision
        and the dimension), or one since emptied, is `EmbedderChangedError`: never a silent
        search of the wrong space. Writes and deletes go on meanwhile (they touch only this
        embedder's own index). A store that cannot look vectors up by id is not checked."""
        if self._checked or self.vector is None:
            return
        oldest = yield from call(self.storage.embedded_ids, after=0, limit=1)
        if oldest:
            _seq, message_id, owner = oldest[0]
            try:
                found = yield from call(self.vector.present, name, owner, [message_id])
            except VectorStoreError:  # (a LangChain store without get_by_ids)
                found = {message_id}
            if message_id not in found:
                msg = (
                    f"the vector index {name!r} holds none of the messages this storage "
                    f"embedded (message {message_id!r} of resource {owner!r} is not in it): "
                    "they were embedded by another embedder (another model, precision or "
                    "dimension) or into a store since emptied. Embed them into this index "
                    "with memory.backfill_embeddings() or `langchain-mastra-memory reindex`"
                )
                raise EmbedderChangedError(msg)
        self._checked = True

    def index_name(self) -> str:
        """The vector collection in use (derived from the embedder's model and dimension)."""
        return run_sync(self.index_name_steps())

    async def aindex_name(self) -> str:
        """Async `index_name` (the first call embeds a probe text off the event loop)."""
        return await run_async(self.index_name_steps())

    # -- keeping vectors in step ---------------------------------------------------------------
    def _index(self, stored: Sequence[StoredMessage], replace: bool) -> Steps[int]:
        todo = [
            (s, embedding_pieces(s.message))
            for s in stored
            if mastra_role(s.message) in EMBEDDED_ROLES
        ]
        todo = [(s, pieces) for s, pieces in todo if pieces]
        if self.vector is None or self.embedder is None:
            return 0
        name = yield from self.index_name_steps()
        if replace:  # what an earlier save handed the writer is stale now
            self.writer.discard(stored_ids(stored))
        if not replace and getattr(self.vector, "shared_with_mastra", False):
            todo = yield from self._not_embedded_by_mastra(name, todo)
        for resource_id in {s.resource_id for s, _ in todo} if replace else ():
            # an updated message may have fewer pieces than before
            old = stored_ids(s for s, _ in todo if s.resource_id == resource_id)
            yield from call(self.vector.delete, name, ids=old, resource_id=resource_id)
        if todo:
            texts = [text for _, pieces in todo for text in pieces]
            vectors = iter((yield from call(self.embedder.embed_documents, texts)))
            records = [
                _vector_record(s, n, next(vectors), text)
                for s, pieces in todo
                for n, text in enumerate(pieces)
            ]
            yield from call(self.vector.upsert, name, records)
            remember(name, pieces_by_message((r.vector_id, r.vector) for r in records))
        yield from call(self.storage.mark_embedded, stored_ids(stored))
        return len(todo)

    def _not_embedded_by_mastra(
        self, name: str, todo: list[tuple[StoredMessage, list[str]]]
    ) -> Steps[list[tuple[StoredMessage, list[str]]]]:
        """`todo` less the messages whose vectors Mastra already wrote into the index both
        runtimes share (`MastraVectorStore`): what a Mastra agent saved reaches this side's
        backlog when it is read in, and is embedded once, by Mastra."""
        assert self.vector is not None
        by_owner: dict[str, list[str]] = defaultdict(list)
        for s, _ in todo:
            by_owner[s.resource_id].append(str(s.message.id))
        present: set[str] = set()
        for owner, ids in by_owner.items():
            present |= yield from call(self.vector.present, name, owner, ids)
        return [(s, pieces) for s, pieces in todo if s.message.id not in present]

    def index(self, stored: Sequence[StoredMessage], *, replace: bool = False) -> int:
        """Embed and store user/assistant messages, piece by piece (`embedding_pieces`), in one
        batch; returns how many messages were written. `replace` drops their old pieces first
        (an update)."""
        return run_sync(self._index(stored, replace))

    async def aindex(self, stored: Sequence[StoredMessage], *, replace: bool = False) -> int:
        """Async `index`."""
        return await run_async(self._index(stored, replace))

    def backfill(
        self,
        *,
        limit: int = 500,
        max_batches: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Index messages whose embedding is missing (e.g. saved while Chroma was down);
        `progress(n)` hears of each batch of `n` messages written."""
        if self.vector is None or self.embedder is None:
            return 0
        total = batches = 0
        while batch := self.storage.unembedded(limit=limit):
            done = self.index(batch)
            total += done
            if progress is not None:
                progress(len(batch))
            batches += 1
            if len(batch) < limit or (max_batches is not None and batches >= max_batches):
                break
        return total

    def reindex(self, *, batch: int = 1000, progress: Callable[[int], None] | None = None) -> int:
        """Make the vector store tell the truth, then fill it: every message storage records as
        embedded is checked against the vector store (a deleted or emptied collection, say), the
        missing ones go back to the backlog, and the backlog is embedded. Returns how many
        messages were embedded."""
        if self.vector is None or self.embedder is None:
            return 0
        name = self.index_name()
        after = 0
        while rows := self.storage.embedded_ids(after=after, limit=batch):
            after = rows[-1][0]
            by_owner: dict[str, list[str]] = defaultdict(list)
            for _seq, message_id, owner in rows:
                by_owner[owner].append(message_id)
            for owner, ids in by_owner.items():
                missing = set(ids) - self.vector.present(name, owner, ids)
                if missing:
                    self.storage.mark_embedded(sorted(missing), embedded=False)
        written = self.backfill(limit=100 if progress else 500, progress=progress)
        self._checked = False  # (checked again at the next search)
        return written

    def _forget(
        self, message_ids: Sequence[str], thread_id: str | None, resource_id: str | None
    ) -> Steps[None]:
        if self.vector is not None:
            name = yield from self.index_name_steps()
            yield from call(
                self.vector.delete,
                name,
                ids=message_ids,
                thread_id=thread_id,
                resource_id=resource_id,
            )

    def forget(
        self,
        *,
        message_ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Remove vectors of deleted messages or of a deleted thread (of `resource_id`: its
        partition only; else every partition)."""
        run_sync(self._forget(message_ids, thread_id, resource_id))

    async def aforget(
        self,
        *,
        message_ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Async `forget`."""
        await run_async(self._forget(message_ids, thread_id, resource_id))

    # -- after storage writes (failures warn; the backlog catches up) --------------------------
    def _warn(self, exc: Exception) -> None:
        logger.warning("semantic recall: embeddings not written (%s); they will be backfilled", exc)

    def _copy(self, copies: Sequence[StoredMessage], source_resource: str) -> Steps[int]:
        """Write copies' vectors from their sources' (`copied_from`; same text, same pieces:
        a clone embeds nothing); a copy whose source has no vectors (not embedded yet, or a
        store that cannot read them back) is embedded."""
        if self.vector is None or self.embedder is None or not copies:
            return 0
        pairs = [(copy.copied_from or "", copy) for copy in copies]
        name = yield from self.index_name_steps()
        found: MessageVectors = {}
        if hasattr(self.vector, "vectors"):
            found = yield from call(
                self.vector.vectors, name, source_resource, [s for s, _ in pairs]
            )
        records = [
            _vector_record(copy, piece, vector)
            for source, copy in pairs
            for piece, vector in enumerate(found.get(source, ()))
        ]
        if records:
            yield from call(self.vector.upsert, name, records)
            copied = sorted({r.message_id for r in records})
            yield from call(self.storage.mark_embedded, copied)
        rest = [copy for source, copy in pairs if source not in found]
        embedded = yield from self._index(rest, False) if rest else _nothing()
        return len(pairs) - len(rest) + embedded

    def after_copy(self, copies: Sequence[StoredMessage], source_resource: str) -> None:
        """`_copy` now (a failure warns; the backlog keeps what was not written)."""
        run_sync(self._after_copy(copies, source_resource))

    async def aafter_copy(self, copies: Sequence[StoredMessage], source_resource: str) -> None:
        """Async `after_copy`."""
        await run_async(self._after_copy(copies, source_resource))

    def _after_copy(self, copies: Sequence[StoredMessage], source_resource: str) -> Steps[None]:
        if self.vector is None:
            return
        try:
            yield from self._copy(copies, source_resource)
        except VectorStoreError as exc:
            self._warn(exc)

    def after_save(self, stored: Sequence[StoredMessage], *, replace: bool = False) -> None:
        """Embed what was just stored now (a failure warns; the backlog keeps it)."""
        run_sync(self._after_save(stored, replace))

    async def aafter_save(self, stored: Sequence[StoredMessage], *, replace: bool = False) -> None:
        """Async `after_save`."""
        await run_async(self._after_save(stored, replace))

    def _after_save(self, stored: Sequence[StoredMessage], replace: bool) -> Steps[None]:
        if self.vector is None:  # keyword mode: the full-text index is kept by storage itself
            return
        try:
            yield from self._index(stored, replace)
        except VectorStoreError as exc:
            self._warn(exc)

    def after_delete(
        self,
        *,
        message_ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Remove the vectors of deleted messages or a deleted thread (a failure warns)."""
        run_sync(self._after_delete(message_ids, thread_id, resource_id))

    async def aafter_delete(
        self,
        *,
        message_ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Async `after_delete`."""
        await run_async(self._after_delete(message_ids, thread_id, resource_id))

    def _after_delete(
        self, message_ids: Sequence[str], thread_id: str | None, resource_id: str | None
    ) -> Steps[None]:
        self.writer.discard(message_ids, thread_id=thread_id)
        try:
            yield from self._forget(message_ids, thread_id, resource_id)
        except VectorStoreError as exc:
            logger.warning("semantic recall: vectors of deleted messages not removed (%s)", exc)


def _nothing() -> Steps[int]:
    return 0
    yield  # type: ignore[unreachable]  # (a generator: no step)


def check_same_space(vector: Any, embedder: Any) -> None:
    """A store that embeds with its own embeddings (`LangChainVectorStore`) takes queries
    embedded by the same object only: another model would search another space."""
    own = getattr(vector, "embeddings", None)
    given = embedder.embedder if isinstance(embedder, CachedEmbeddings) else embedder
    if own is not None and given is not None and given is not own:
        msg = (
            f"{vector!r} embeds with its store's embeddings ({type(own).__name__}); recall "
            "must embed queries with the same object: leave embedder= out, or pass those"
        )
        raise ConfigurationError(msg)


def _vector_record(
    stored: StoredMessage, piece: int, vector: Sequence[float], text: str = ""
) -> VectorRecord:
    return VectorRecord(
        message_id=stored.message.id or "",
        vector=vector,
        thread_id=stored.thread_id,
        resource_id=stored.resource_id,
        role=mastra_role(stored.message),
        created_at=stored.created_at.timestamp(),
        piece=piece,
        text=text,
    )
