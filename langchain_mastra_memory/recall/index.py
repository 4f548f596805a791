"""`RecallIndex`: search stored messages by meaning (vector), by words (keyword), or both.

The index owns the search (vector hits from the vector store, keyword hits from storage's
full-text index, fused in hybrid mode), the windows of neighbours around each hit, and keeping
the vectors in step with storage: embeddings are written after messages are stored, each is
marked ``embedded`` once its vector is in, and what failed (Chroma down) is written by the next
save, `backfill` or the CLI's ``reindex``. Deleting messages or threads removes their vectors;
updating a message re-embeds it. Recall loads every hit from storage, so a vector left behind
by a failed delete is never returned.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import ConfigurationError, VectorStoreError
from ..messages import embedding_pieces, mastra_role, without_tool_calls
from ..storage.base import MemoryStorage
from ..storage.filters import check_filter, matches
from ..storage.records import StoredMessage
from ..storage.sqlite import SQLiteStorage
from ..storage.validation import check_id, check_optional_id, check_query, validated
from ..twins import Steps, both, call, run_async, run_sync
from ..working_memory.config import TOOL_NAME as WORKING_MEMORY_TOOL
from .embeddings import CachedEmbeddings, model_id
from .vector import ChromaVectorStore, VectorHit, VectorRecord, VectorStore, index_name_for
from .writer import BacklogWriter

logger = logging.getLogger(__name__)

Mode = Literal["vector", "keyword", "hybrid"]
# Chosen by bench/recall_eval.py on real multi-session chat (LoCoMo dev; README, "Recall
# quality"): hybrid beats keyword and vector alone.
DEFAULT_MODE: Mode = "hybrid"
HYBRID_POOL = 150  # candidates from each side before fusing (normalising over a deep pool)
PIECES_PER_HIT = 2  # vector pieces asked for per message wanted
KEYWORD_WEIGHT_HALF = 0.5  # both sides weigh the same
EMBEDDED_ROLES = ("user", "assistant")


class MessageRange(BaseModel):
    """How many neighbours come with each hit."""

    model_config = ConfigDict(extra="forbid")
    before: int = Field(default=1, ge=0)
    after: int = Field(default=1, ge=0)


class RecallOptions(BaseModel):
    """``semantic_recall`` options (Mastra's ``topK``, ``messageRange``, ``scope``, ...)."""

    model_config = ConfigDict(extra="forbid")
    top_k: int = Field(default=4, gt=0, le=100)
    message_range: int | MessageRange = 1
    scope: Literal["thread", "resource"] = "resource"
    threshold: float | None = Field(default=None, ge=-1.0, le=1.0)
    index_name: str | None = None
    mode: Mode = DEFAULT_MODE
    # recall only from threads whose metadata matches (LangGraph's operators; Mastra's
    # ``semanticRecall.filter``)
    filter: dict[str, Any] | None = None

    @field_validator("filter")
    @classmethod
    def _known_operators(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else check_filter(value, "semantic_recall filter")

    @property
    def window(self) -> MessageRange:
        """`message_range` as before/after counts."""
        if isinstance(self.message_range, MessageRange):
            return self.message_range
        if self.message_range < 0:
            raise ConfigurationError("message_range must be >= 0")
        return MessageRange(before=self.message_range, after=self.message_range)

    @classmethod
    def parse(cls, options: bool | dict[str, Any] | RecallOptions | None) -> RecallOptions:
        """Validate options given as ``True`` or a dict."""
        return validated(cls, options, "semantic_recall options")


FLUSH_TIMEOUT = 30.0  # the longest a search waits for this process's vector writer
MAX_THREAD_FILTER = 2000  # threads a recall filter passes into the searches (more: filtered after)
Part = tuple[str, "str | None", "Sequence[str] | None"]  # resource, thread, threads searched


@dataclass(frozen=True)
class RecallHit:
    """One search result before neighbours are loaded."""

    message_id: str
    thread_id: str
    score: float


def default_vector_store(storage: MemoryStorage) -> VectorStore:
    """pgvector in the database of a `PostgresStorage` (a `ConfigurationError` naming the fix
    when the server lacks it), embedded Chroma beside a SQLite file (``<file>.chroma``), else
    Chroma in memory."""
    from ..storage.postgres import PostgresStorage

    if isinstance(storage, PostgresStorage):
        from .pgvector import PgVectorStore

        return PgVectorStore(storage)
    if isinstance(storage, SQLiteStorage) and storage.path != ":memory:":
        return ChromaVectorStore(path=Path(storage.path).resolve().with_suffix(".chroma"))
    return ChromaVectorStore()


class RecallIndex:
    """Search, windows and vector upkeep for the messages of one storage.

    Examples:
        >>> from langchain_core.messages import HumanMessage
        >>> from langchain_mastra_memory import SQLiteStorage
        >>> storage = SQLiteStorage(":memory:")
        >>> _ = storage.create_thread(thread_id="t1", resource_id="alice")
        >>> _ = storage.save_messages(
        ...     [HumanMessage("my cat is called Tom")], thread_id="t1", resource_id="alice")
        >>> index = RecallIndex(storage, options=RecallOptions.parse({"mode": "keyword"}))
        >>> [h.thread_id for h in index.search("cat name", resource_id="alice")]
        ['t1']
    """

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
        self.flush_timeout = FLUSH_TIMEOUT
        self.writer = BacklogWriter(self)

    @classmethod
    def with_defaults(
        cls,
        storage: MemoryStorage,
        options: bool | dict[str, Any] | RecallOptions,
        vector: VectorStore | None = None,
        embedder: Embeddings | None = None,
    ) -> RecallIndex:
        """An index on `storage`, with the embedded defaults for what is not given (the
        offline MiniLM embedder; pgvector beside PostgreSQL, Chroma beside a SQLite file or in
        memory)."""
        parsed = RecallOptions.parse(options)
        if parsed.mode != "keyword":
            if embedder is None:  # a LangChain store embeds with its own: queries too
                from .embeddings import default_embedder

                embedder = getattr(vector, "embeddings", None) or default_embedder()
            if vector is None:
                vector = default_vector_store(storage)
        return cls(storage, vector, embedder, options=parsed)

    @property
    def deletes_by_id(self) -> bool:
        """Whether the vector store deletes only by message id (a thread's deletion must name
        its messages: `LangChainVectorStore`)."""
        return bool(getattr(self.vector, "deletes_by_id", False))

    # -- naming --------------------------------------------------------------------------------
    def _index_name_steps(self) -> Steps[str]:
        if self._index_name is None:
            assert self.embedder is not None
            dimension = len((yield call(self.embedder, "embed_query", "dimension")))
            self._index_name = index_name_for(model_id(self.embedder), dimension)
        return self._index_name

    def index_name(self) -> str:
        """The vector collection in use (derived from the embedder's model and dimension)."""
        return run_sync(self._index_name_steps())

    async def aindex_name(self) -> str:
        """Async `index_name` (the first call embeds a probe text off the event loop)."""
        return await run_async(self._index_name_steps())

    # -- search --------------------------------------------------------------------------------
    def _search(
        self,
        query: str,
        resource_id: str,
        thread_id: str | None,
        limit: int | None,
        *,
        with_threads: bool = True,
        mode: Mode | None = None,
        within_thread: bool | None = None,
        options: RecallOptions | None = None,
        thread_ids: Sequence[str] | None = None,
        sides: dict[str, dict[str, float]] | None = None,
    ) -> Steps[list[RecallHit]]:
        """The ranked hits; with `with_threads` False, vector hits may keep an empty thread id
        (recall reads the hits' windows from storage anyway, with their threads). `options`
        (a call's), `mode` and `within_thread` (search `thread_id` only) override the index's
        options for this call; `thread_ids`: only these threads' messages, filtered inside
        both searches (a filter matching few threads still fills the result); `sides`, when
        given, receives a hybrid search's own scores per side (what `side_scores` reports)."""
        check_id(resource_id, "resource_id")  # never reaches a vector store's filter unchecked
        check_optional_id(thread_id, "thread_id")
        opts = options or self.options
        mode = self._mode(mode if mode is not None else options.mode if options else None)
        if not check_query(query).strip():
            return []
        # what this process saved is searchable, unless the writer is stuck (a hung embedder
        # or vector store): then the search goes on with what is indexed, never waits forever
        if not (yield call(self.writer, "flush", self.flush_timeout)):
            logger.warning(
                "semantic recall: the vector writer is still busy after %.0f s; this search "
                "does not see the newest messages' vectors (keyword search does)",
                self.flush_timeout,
            )
        k = limit or opts.top_k
        if within_thread is None:
            within_thread = opts.scope == "thread"
        scoped = thread_id if within_thread else None  # resource scope: all of its threads
        pool = k if mode != "hybrid" else max(HYBRID_POOL, 4 * k)
        vector_hits: list[RecallHit] = []
        keyword_hits: list[RecallHit] = []
        part = (resource_id, scoped, thread_ids)
        if mode == "vector":
            vector_hits = yield from self._vector_side(query, part, pool, opts)
        elif mode == "keyword":
            keyword_hits = yield from self._keyword_side(query, part, pool)
        else:  # the two sides are independent: run at the same time (keyword in this
            # thread: SQLite releases the GIL at once, so the vector side starts beside it)
            keyword_hits, vector_hits = yield both(
                self._keyword_side(query, part, pool),
                self._vector_side(query, part, pool, opts),
            )
        if sides is not None and mode == "hybrid":
            sides["vector"] = {h.message_id: h.score for h in vector_hits}
            sides["keyword"] = {h.message_id: h.score for h in keyword_hits}
        if mode == "keyword":
            return keyword_hits[:k]
        ranked = vector_hits[:k] if mode == "vector" else fuse(vector_hits, keyword_hits, k)
        if with_threads:
            ranked = yield from self._with_threads(ranked, resource_id)
        return ranked

    def _with_threads(self, hits: list[RecallHit], resource_id: str) -> Steps[list[RecallHit]]:
        """`hits` with their thread ids (vector hits do not carry theirs: storage knows it);
        a hit whose message is gone is dropped."""
        unknown = [h.message_id for h in hits if not h.thread_id]
        if not unknown:
            return hits
        stored = yield call(self.storage, "get_messages_by_id", unknown, resource_id=resource_id)
        threads = {s.message.id: s.thread_id for s in stored}
        return [
            h if h.thread_id else RecallHit(h.message_id, threads[h.message_id], h.score)
            for h in hits
            if h.thread_id or h.message_id in threads
        ]

    def _vector_side(
        self, query: str, part: Part, pool: int, opts: RecallOptions
    ) -> Steps[list[RecallHit]]:
        assert self.vector is not None and self.embedder is not None
        resource_id, thread_id, thread_ids = part
        embedding = yield call(self.embedder, "embed_query", query)
        name = yield from self._index_name_steps()
        among = {} if thread_ids is None else {"thread_ids": thread_ids}
        pieces = yield call(
            self.vector, "query", name, embedding, top_k=pool * PIECES_PER_HIT,
            resource_id=resource_id, thread_id=thread_id, **among,
        )  # fmt: skip
        hits = best_piece_per_message(pieces)
        if opts.threshold is not None:
            hits = [h for h in hits if h.score >= opts.threshold]
        return hits[:pool]

    def _keyword_side(self, query: str, part: Part, pool: int) -> Steps[list[RecallHit]]:
        resource_id, thread_id, thread_ids = part
        rows = yield call(
            self.storage, "search_text", query, resource_id=resource_id, thread_id=thread_id,
            limit=pool, thread_ids=thread_ids,
        )  # fmt: skip
        return [RecallHit(*row) for row in rows]

    def _mode(self, mode: Mode | None) -> Mode:
        """The mode of a call: the options' unless given; one needing vectors needs an index
        built with them."""
        if mode is None:
            return self.options.mode
        if mode not in ("vector", "keyword", "hybrid"):
            raise ConfigurationError(f"mode must be 'vector', 'keyword' or 'hybrid', got {mode!r}")
        if mode != "keyword" and (self.vector is None or self.embedder is None):
            raise ConfigurationError(
                f"mode {mode!r} needs vectors: this memory searches by keyword only "
                '(semantic_recall={"mode": "hybrid"} embeds messages)'
            )
        return mode

    def _side_scores(
        self, query: str, resource_id: str, thread_id: str | None, sides: Sequence[Mode] | None
    ) -> Steps[dict[str, dict[str, float]]]:
        if sides is None:
            sides = ["keyword"] if self.vector is None else ["vector", "keyword"]
        scores: dict[str, dict[str, float]] = {}
        for side in sides:
            hits = yield from self._search(query, resource_id, thread_id, HYBRID_POOL, mode=side)
            scores[side] = {h.message_id: h.score for h in hits}
        return scores

    def side_scores(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        sides: Sequence[Mode] | None = None,
    ) -> dict[str, dict[str, float]]:
        """Each side's own scores for `query` (vector: cosine, keyword: BM25) by message id,
        over hybrid's candidate pool: what a fused score was made of. `sides`: both (keyword
        only without vectors) unless given."""
        return run_sync(self._side_scores(query, resource_id, thread_id, sides))

    async def aside_scores(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        sides: Sequence[Mode] | None = None,
    ) -> dict[str, dict[str, float]]:
        """Async `side_scores`."""
        return await run_async(self._side_scores(query, resource_id, thread_id, sides))

    def search(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int | None = None,
        mode: Mode | None = None,
        within_thread: bool | None = None,
    ) -> list[RecallHit]:
        """Hits for `query` (best first), by the configured mode (or `mode`); [] for a blank
        query. `within_thread`: search `thread_id` only (default: the options' scope)."""
        return run_sync(
            self._search(
                query, resource_id, thread_id, limit, mode=mode, within_thread=within_thread
            )
        )

    async def asearch(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int | None = None,
        mode: Mode | None = None,
        within_thread: bool | None = None,
    ) -> list[RecallHit]:
        """Async `search`."""
        return await run_async(
            self._search(
                query, resource_id, thread_id, limit, mode=mode, within_thread=within_thread
            )
        )

    # -- windows -------------------------------------------------------------------------------
    def _recall(
        self,
        query: str,
        resource_id: str,
        thread_id: str | None,
        exclude: set[str],
        never_hits: frozenset[str],
        options: RecallOptions | None = None,
    ) -> Steps[list[StoredMessage]]:
        opts = options or self.options
        hits = yield from self._ranked(query, resource_id, thread_id, never_hits, opts, False)
        window = opts.window
        found = yield call(
            self.storage, "message_windows", [h.message_id for h in hits],
            before=window.before, after=window.after, resource_id=resource_id,
        )  # fmt: skip
        return hide_working_memory([s for s in found if s.message.id not in exclude])

    def ranked(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None,
        options: RecallOptions,
        sides: dict[str, dict[str, float]] | None = None,
    ) -> Steps[list[RecallHit]]:
        """Steps of recall's hits as `options` rank and filter them (scope, filter, threshold,
        archived threads, `top_k`), with their threads: what `MemoryRetriever` returns;
        `sides` receives a hybrid search's scores per side (`_search`)."""
        return self._ranked(query, resource_id, thread_id, frozenset(), options, True, sides)

    def _ranked(
        self,
        query: str,
        resource_id: str,
        thread_id: str | None,
        never_hits: frozenset[str],
        opts: RecallOptions,
        with_threads: bool,
        sides: dict[str, dict[str, float]] | None = None,
    ) -> Steps[list[RecallHit]]:
        top_k, wanted = opts.top_k, opts.filter
        limit = 2 * top_k + len(never_hits)  # spares for hits in archived threads
        allowed: list[str] | None = None
        if wanted is not None and opts.scope == "resource":
            # the threads the filter keeps, searched inside both sides (never a starved pool)
            owned = yield call(self.storage, "list_threads", resource_id=resource_id)
            allowed = [t.id for t in owned if matches(t.metadata, wanted)]
            if not allowed:
                return []
            if len(allowed) > MAX_THREAD_FILTER:  # a filter keeping that much: filter after
                allowed, limit = None, min(100, 10 * top_k) + len(never_hits)
        search = self._search(
            query, resource_id, thread_id, limit, with_threads=False, options=opts,
            thread_ids=allowed, sides=sides,
        )  # fmt: skip
        archived: set[str] = set()
        if opts.scope == "resource":  # archived threads are out of recall (not the
            # current one: its own conversation goes on); looked up while the search runs
            hits, shelved = yield both(
                search,
                call(self.storage, "list_threads", resource_id=resource_id, archived=True),
            )
            archived = {t.id for t in shelved} - {thread_id}
        else:
            hits = yield from search
        hits = [h for h in hits if h.message_id not in never_hits]
        if archived or wanted is not None:
            hits = yield from self._with_threads(hits, resource_id)
            hits = [h for h in hits if h.thread_id not in archived]
        if wanted is not None:
            threads = yield call(self.storage, "get_threads", sorted({h.thread_id for h in hits}))
            hits = [
                h
                for h in hits
                if h.thread_id in threads and matches(threads[h.thread_id].metadata, wanted)
            ]
        if not with_threads:  # (recall reads the hits' windows, with their threads, anyway)
            return hits[:top_k]
        return (yield from self._with_threads(hits[:top_k], resource_id))

    def recall(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None,
        exclude: set[str],
        never_hits: frozenset[str] = frozenset(),
        options: RecallOptions | None = None,
    ) -> list[StoredMessage]:
        """The recalled messages (hits with neighbours), minus those in `exclude`.

        `never_hits` (the current turn's messages, which the query comes from) are skipped as
        hits without costing one of the `top_k` places; `options`: a call's own."""
        return run_sync(self._recall(query, resource_id, thread_id, exclude, never_hits, options))

    async def arecall(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None,
        exclude: set[str],
        never_hits: frozenset[str] = frozenset(),
        options: RecallOptions | None = None,
    ) -> list[StoredMessage]:
        """Async `recall`."""
        return await run_async(
            self._recall(query, resource_id, thread_id, exclude, never_hits, options)
        )

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
        name = yield from self._index_name_steps()
        for resource_id in {s.resource_id for s, _ in todo} if replace else ():
            # an updated message may have fewer pieces than before
            old = [s.message.id for s, _ in todo if s.resource_id == resource_id]
            yield call(self.vector, "delete", name, ids=old, resource_id=resource_id)
        if todo:
            texts = [text for _, pieces in todo for text in pieces]
            vectors = iter((yield call(self.embedder, "embed_documents", texts)))
            records = [
                _vector_record(s, n, next(vectors), text)
                for s, pieces in todo
                for n, text in enumerate(pieces)
            ]
            yield call(self.vector, "upsert", name, records)
        yield call(self.storage, "mark_embedded", [s.message.id for s in stored if s.message.id])
        return len(todo)

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
        return self.backfill(limit=100 if progress else 500, progress=progress)

    def _forget(
        self, message_ids: Sequence[str], thread_id: str | None, resource_id: str | None
    ) -> Steps[None]:
        if self.vector is not None:
            name = yield from self._index_name_steps()
            yield call(
                self.vector, "delete", name, ids=message_ids, thread_id=thread_id,
                resource_id=resource_id,
            )  # fmt: skip

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
        name = yield from self._index_name_steps()
        found: dict[str, list[list[float]]] = {}
        if hasattr(self.vector, "vectors"):
            found = yield call(self.vector, "vectors", name, source_resource, [s for s, _ in pairs])
        records = [
            _vector_record(copy, piece, vector)
            for source, copy in pairs
            for piece, vector in enumerate(found.get(source, ()))
        ]
        if records:
            yield call(self.vector, "upsert", name, records)
            copied = sorted({r.message_id for r in records})
            yield call(self.storage, "mark_embedded", copied)
        rest = [copy for source, copy in pairs if source not in found]
        embedded = yield from self._index(rest, False) if rest else _nothing()
        return len(pairs) - len(rest) + embedded

    def after_copy(self, copies: Sequence[StoredMessage], source_resource: str) -> None:
        """`_copy` now (a failure warns; the backlog keeps what was not written)."""
        if self.vector is None:
            return
        try:
            run_sync(self._copy(copies, source_resource))
        except VectorStoreError as exc:
            self._warn(exc)

    async def aafter_copy(self, copies: Sequence[StoredMessage], source_resource: str) -> None:
        """Async `after_copy`."""
        if self.vector is None:
            return
        try:
            await run_async(self._copy(copies, source_resource))
        except VectorStoreError as exc:
            self._warn(exc)

    def after_save(self, stored: Sequence[StoredMessage], *, replace: bool = False) -> None:
        """Embed what was just stored now (a failure warns; the backlog keeps it)."""
        if self.vector is None:  # keyword mode: the full-text index is kept by storage itself
            return
        try:
            self.index(stored, replace=replace)
        except VectorStoreError as exc:
            self._warn(exc)

    async def aafter_save(self, stored: Sequence[StoredMessage], *, replace: bool = False) -> None:
        """Async `after_save`."""
        if self.vector is None:
            return
        try:
            await self.aindex(stored, replace=replace)
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
        try:
            self.forget(message_ids=message_ids, thread_id=thread_id, resource_id=resource_id)
        except VectorStoreError as exc:
            logger.warning("semantic recall: vectors of deleted messages not removed (%s)", exc)

    async def aafter_delete(
        self,
        *,
        message_ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Async `after_delete`."""
        try:
            await self.aforget(
                message_ids=message_ids, thread_id=thread_id, resource_id=resource_id
            )
        except VectorStoreError as exc:
            logger.warning("semantic recall: vectors of deleted messages not removed (%s)", exc)


def _nothing() -> Steps[int]:
    return 0
    yield  # a generator: no step


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


def best_piece_per_message(hits: Sequence[VectorHit]) -> list[RecallHit]:
    """Piece hits as message hits: each message scored by its best piece, best first."""
    best: dict[str, float] = {}
    for hit in hits:
        if hit.score > best.get(hit.message_id, -math.inf):
            best[hit.message_id] = hit.score
    ranked = sorted(best.items(), key=lambda item: -item[1])
    return [RecallHit(message_id, "", score) for message_id, score in ranked]


def fuse(
    vector_hits: Sequence[RecallHit], keyword_hits: Sequence[RecallHit], k: int
) -> list[RecallHit]:
    """Hybrid ranking: each side's scores min-max normalised over its candidate pool (a
    message the side did not return counts 0 there), then averaged. Unlike reciprocal-rank
    fusion, a clear winner on one side stays a winner, and near-ties stay near."""
    fused: dict[str, float] = defaultdict(float)
    threads: dict[str, str] = defaultdict(str)
    for hits in (vector_hits, keyword_hits):
        if not hits:
            continue
        top, bottom = max(h.score for h in hits), min(h.score for h in hits)
        spread = top - bottom
        for hit in hits:
            fused[hit.message_id] += KEYWORD_WEIGHT_HALF * (
                (hit.score - bottom) / spread if spread > 0 else 1.0
            )
            threads[hit.message_id] = threads[hit.message_id] or hit.thread_id
    best = sorted(fused, key=lambda m: -fused[m])[:k]
    return [RecallHit(m, threads[m], fused[m]) for m in best]


def hide_working_memory(found: Sequence[StoredMessage]) -> list[StoredMessage]:
    """`found` without working-memory tool traffic: its calls are stripped from assistant
    messages (dropped when nothing is left) and its results removed, as Mastra hides them."""
    calls = {
        c["id"]
        for s in found
        if isinstance(s.message, AIMessage)
        for c in s.message.tool_calls
        if c["name"] == WORKING_MEMORY_TOOL and c.get("id")
    }
    out: list[StoredMessage] = []
    for s in found:
        message: BaseMessage | None = s.message
        if isinstance(message, ToolMessage):
            if message.name == WORKING_MEMORY_TOOL or message.tool_call_id in calls:
                continue
        elif isinstance(message, AIMessage):
            message, _ = without_tool_calls(message, lambda name, _id: name == WORKING_MEMORY_TOOL)
        if message is s.message:
            out.append(s)
        elif message is not None:
            out.append(replace(s, message=message))
    return out
