"""`RecallIndex`: search stored messages by meaning (vector), by words (keyword), or both.

The index owns the search (vector hits from the vector store, keyword hits from storage's
full-text index, fused in hybrid mode) and the windows of neighbours around each hit; keeping
the vectors in step with storage is `VectorUpkeep`'s (``upkeep.py``): the index holds one as
``upkeep``, which the write side (`MemoryWrites`) is given; a search waits on its writer.
Recall loads every hit from storage, so a vector left behind by a failed delete is never
returned.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, cast

from langchain_core.embeddings import Embeddings
from typing_extensions import Unpack

from ..errors import ConfigurationError
from ..storage.base import MemoryStorage
from ..storage.filters import matches
from ..storage.records import StoredMessage, TimeWindow
from ..storage.validation import check_id, check_optional_id, check_query
from ..tracing import recall_run, stage
from ..twins import Steps, both, call, run_async, run_sync
from .options import DEFAULT_MODE, MessageRange, Mode, RecallOptions, SearchOptions
from .ranking import (
    HYBRID_POOL,
    PIECES_PER_HIT,
    RecallHit,
    best_piece_per_message,
    created_dates,
    dated_first,
    fuse,
    hide_working_memory,
    named_date,
)
from .second_stage import Read, context_stage, read_missing, rerank_stage
from .upkeep import VectorUpkeep, default_vector_store
from .vector import VectorStore

__all__ = [
    "DEFAULT_MODE",
    "MessageRange",
    "Mode",
    "RecallHit",
    "RecallIndex",
    "RecallOptions",
    "fuse",
    "hide_working_memory",
]

logger = logging.getLogger(__name__)

MAX_THREAD_FILTER = 2000  # threads a recall filter passes into the searches (more: filtered after)
# resource, thread, threads searched, creation-time window
Part = tuple[str, "str | None", "Sequence[str] | None", "TimeWindow | None"]


class RecallIndex:
    """Search and windows over the messages of one storage; `upkeep` keeps their vectors in
    step (`VectorUpkeep`: the writes, the backlog, the index's name).

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
        self.upkeep = VectorUpkeep(storage, vector, embedder, options=options)
        self.options = self.upkeep.options  # the search's (a call may pass its own)
        self.storage = storage
        self.vector = vector
        self.embedder = self.upkeep.embedder  # cached: a query the writes embedded is not again

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
                from .embedders import default_embedder

                embedder = getattr(vector, "embeddings", None) or default_embedder()
            if vector is None:
                vector = default_vector_store(storage)
        return cls(storage, vector, embedder, options=parsed)

    # -- search --------------------------------------------------------------------------------
    def _search(
        self,
        query: str,
        resource_id: str,
        thread_id: str | None = None,
        limit: int | None = None,
        *,
        with_threads: bool = True,
        mode: Mode | None = None,
        within_thread: bool | None = None,
        options: RecallOptions | None = None,
        thread_ids: Sequence[str] | None = None,
        sides: dict[str, dict[str, float]] | None = None,
        never_hits: frozenset[str] = frozenset(),
        window: TimeWindow | None = None,
    ) -> Steps[list[RecallHit]]:
        """The ranked hits; with `with_threads` False, vector hits may keep an empty thread id
        (recall reads the hits' windows from storage anyway, with their threads). `options`
        (a call's), `mode` and `within_thread` (search `thread_id` only) override the index's
        options for this call; `thread_ids`: only these threads' messages, filtered inside
        both searches (a filter matching few threads still fills the result); `sides`, when
        given, receives a hybrid search's own scores per side (what `side_scores` reports);
        `never_hits`: messages the caller drops from the hits (not waited for); `window`: only
        messages created in it, filtered inside both searches too."""
        check_id(resource_id, "resource_id")  # never reaches a vector store's filter unchecked
        check_optional_id(thread_id, "thread_id")
        opts = options or self.options
        mode = self._mode(mode if mode is not None else options.mode if options else None)
        if not check_query(query).strip():
            return []
        # what this process saved is searchable, unless the writer is stuck (a hung embedder
        # or vector store): then the search goes on with what is indexed, never waits forever
        self.upkeep.writer.warn_if_failing()
        writer = self.upkeep.writer
        if not (
            yield from call(
                writer.wait_written,
                self.upkeep.flush_timeout,
                ignoring=never_hits,
                resource_id=resource_id,
            )
        ):  # (no other resource's are hits)
            logger.warning(
                "semantic recall: the vector writer is still busy after %.0f s; this search "
                "does not see the newest messages' vectors (keyword search does)",
                self.upkeep.flush_timeout,
            )
        k = limit or opts.top_k
        if within_thread is None:
            within_thread = opts.scope == "thread"
        scoped = thread_id if within_thread else None  # resource scope: all of its threads
        with_context = mode != "keyword" and opts.context_weight > 0 and self._reads_vectors
        when = named_date(query) if opts.date_rule else None
        second_stage = with_context or opts.reranker is not None or when is not None
        wanted = max(k, opts.rerank_pool) if second_stage else k
        pool = wanted if mode != "hybrid" else max(HYBRID_POOL, 4 * wanted)
        vector_hits: list[RecallHit] = []
        keyword_hits: list[RecallHit] = []
        part = (resource_id, scoped, thread_ids, window)
        if mode == "vector":
            vector_hits = yield stage(self._vector_side(query, part, pool, opts), "vector")
        elif mode == "keyword":
            keyword_hits = yield stage(self._keyword_side(query, part, pool), "keyword")
        else:  # the two sides are independent: run at the same time (keyword in this
            # thread: SQLite releases the GIL at once, so the vector side starts beside it)
            keyword_hits, vector_hits = yield from both(
                stage(self._keyword_side(query, part, pool), "keyword"),
                stage(self._vector_side(query, part, pool, opts), "vector"),
            )
        if sides is not None and mode == "hybrid":
            sides["vector"] = {h.message_id: h.score for h in vector_hits}
            sides["keyword"] = {h.message_id: h.score for h in keyword_hits}
        if mode == "hybrid":
            ranked = fuse(vector_hits, keyword_hits, wanted)
        else:
            ranked = (keyword_hits if mode == "keyword" else vector_hits)[:wanted]
        read: Read = {}  # the pool's messages, as the stages read them (each read once)
        if with_context:
            assert self.embedder is not None
            name = yield from self.upkeep.index_name_steps()
            ranked = yield stage(
                context_stage(
                    self.storage,
                    self.vector,
                    self.embedder,
                    name,
                    query,
                    ranked,
                    resource_id,
                    opts,
                ),
                "context",
            )
        if opts.reranker is not None:
            ranked = yield from rerank_stage(self.storage, query, ranked, resource_id, opts, read)
        if when is not None:
            yield from read_missing(self.storage, ranked, resource_id, read)
            ranked = dated_first(ranked, created_dates(read.values()), when)
        ranked = ranked[:k]
        if mode == "keyword":
            return ranked
        if with_threads:
            ranked = yield from self._with_threads(ranked, resource_id)
        return ranked

    @property
    def _reads_vectors(self) -> bool:
        """Whether the vector store gives stored vectors back (the context stage reads them)."""
        return hasattr(self.vector, "vectors") and hasattr(self.vector, "avectors")

    def _with_threads(self, hits: list[RecallHit], resource_id: str) -> Steps[list[RecallHit]]:
        """`hits` with their thread ids (vector hits do not carry theirs: storage knows it);
        a hit whose message is gone is dropped."""
        unknown = [h.message_id for h in hits if not h.thread_id]
        if not unknown:
            return hits
        stored = yield from call(self.storage.get_messages_by_id, unknown, resource_id=resource_id)
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
        resource_id, thread_id, thread_ids, window = part
        embedding = yield from call(self.embedder.embed_query, query)
        name = yield from self.upkeep.index_name_steps()
        among: dict[str, Any] = {} if thread_ids is None else {"thread_ids": thread_ids}
        if window is not None:  # (passed only when given: a store of one's own may lack it)
            among["window"] = window
        pieces = yield from call(
            self.vector.query,
            name,
            embedding,
            top_k=pool * PIECES_PER_HIT,
            resource_id=resource_id,
            thread_id=thread_id,
            **among,
        )
        yield from self.upkeep.check_searched(name)
        hits = best_piece_per_message(pieces)
        if opts.threshold is not None:
            hits = [h for h in hits if h.score >= opts.threshold]
        return hits[:pool]

    def _keyword_side(self, query: str, part: Part, pool: int) -> Steps[list[RecallHit]]:
        resource_id, thread_id, thread_ids, window = part
        rows = yield from call(
            self.storage.search_text,
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            limit=pool,
            thread_ids=thread_ids,
            window=window,
        )
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
        first_stage = self.options.model_copy(update={"context_weight": 0.0, "reranker": None})
        for side in sides:
            hits = yield from self._search(
                query, resource_id, thread_id, HYBRID_POOL, mode=side, options=first_stage
            )
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
        self, query: str, *, resource_id: str, **options: Unpack[SearchOptions]
    ) -> list[RecallHit]:
        """Hits for `query` (best first), by the configured mode (or `mode`); [] for a blank
        query. `within_thread`: search `thread_id` only (default: the options' scope);
        `window`: only messages created in it (filtered inside every engine's search)."""
        return run_sync(self._search(query, resource_id, **options))

    async def asearch(
        self, query: str, *, resource_id: str, **options: Unpack[SearchOptions]
    ) -> list[RecallHit]:
        """Async `search`."""
        return await run_async(self._search(query, resource_id, **options))

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
        found, _ = yield recall_run(
            self._windows(query, resource_id, thread_id, exclude, never_hits, opts),
            query,
            mode=opts.mode,
            top_k=opts.top_k,
            resource_id=resource_id,
            thread_id=thread_id,
        )
        return cast("list[StoredMessage]", found)

    def _windows(
        self,
        query: str,
        resource_id: str,
        thread_id: str | None,
        exclude: set[str],
        never_hits: frozenset[str],
        opts: RecallOptions,
    ) -> Steps[tuple[list[StoredMessage], list[RecallHit]]]:
        hits = yield from self._ranked(query, resource_id, thread_id, never_hits, opts, False)
        found = yield from call(
            self.storage.message_windows,
            [h.message_id for h in hits],
            before=opts.window.before,
            after=opts.window.after,
            resource_id=resource_id,
        )
        return hide_working_memory([s for s in found if s.message.id not in exclude]), hits

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
            owned = yield from call(self.storage.list_threads, resource_id=resource_id)
            allowed = [t.id for t in owned if matches(t.metadata, wanted)]
            if not allowed:
                return []
            if len(allowed) > MAX_THREAD_FILTER:  # a filter keeping that much: filter after
                allowed, limit = None, min(100, 10 * top_k) + len(never_hits)
        search = self._search(
            query,
            resource_id,
            thread_id,
            limit,
            with_threads=False,
            options=opts,
            thread_ids=allowed,
            sides=sides,
            never_hits=never_hits,
        )
        archived: set[str] = set()
        if opts.scope == "resource":  # archived threads are out of recall (not the
            # current one: its own conversation goes on); looked up while the search runs
            hits, shelved = yield from both(
                search,
                call(self.storage.list_threads, resource_id=resource_id, archived=True),
            )
            archived = {t.id for t in shelved} - {thread_id}
        else:
            hits = yield from search
        hits = [h for h in hits if h.message_id not in never_hits]
        if archived or wanted is not None:
            hits = yield from self._with_threads(hits, resource_id)
            hits = [h for h in hits if h.thread_id not in archived]
        if wanted is not None:
            threads = yield from call(self.storage.get_threads, sorted({h.thread_id for h in hits}))
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
