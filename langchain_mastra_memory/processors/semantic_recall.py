"""`SemanticRecall`: remember older messages by meaning (vector), by words (keyword), or both."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..embeddings import CachedEmbeddings, model_id
from ..errors import ConfigurationError
from ..ids import ids_from_options
from ..injected import tag
from ..messages import mastra_role, message_text, without_tool_calls
from ..storage.base import MemoryStorage
from ..storage.records import StoredMessage
from ..vector import ChromaVectorStore, VectorRecord, index_name_for
from ..working_memory import TOOL_NAME as WORKING_MEMORY_TOOL
from .base import MemoryProcessor

logger = logging.getLogger("langchain_mastra_memory")

Mode = Literal["vector", "keyword", "hybrid"]
# Chosen by bench/recall_eval.py (README, "Recall quality"): vector recall@3 0.80, hybrid 0.67,
# keyword 0.13 on paraphrased questions over 12 sessions.
DEFAULT_MODE: Mode = "vector"
RRF_K = 60
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
        if isinstance(options, RecallOptions):
            return options
        try:
            return cls.model_validate({} if options in (True, None) else options)
        except ValidationError as exc:
            raise ConfigurationError(f"invalid semantic_recall options: {exc}") from exc


@dataclass(frozen=True)
class RecallHit:
    """One search result before neighbours are loaded."""

    message_id: str
    thread_id: str
    score: float


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
    fuses vector and keyword hits by reciprocal rank. The default, ``"vector"``, is the mode that
    won the project's evaluation (``bench/recall_eval.py``).
    Reads ``thread_id``/``resource_id`` from ``config["configurable"]``.
    """

    name = "SemanticRecall"

    def __init__(
        self,
        storage: MemoryStorage,
        vector: ChromaVectorStore | None = None,
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
        self.options = options or RecallOptions.parse(
            {
                "top_k": top_k,
                "message_range": message_range,
                "scope": scope,
                "threshold": threshold,
                "index_name": index_name,
                "mode": mode,
            }
        )
        self.storage = storage
        needs_vectors = self.options.mode != "keyword"
        if needs_vectors and (vector is None or embedder is None):
            raise ConfigurationError(
                f"mode {self.options.mode!r} needs a vector store and an embedder"
            )
        self.vector = vector
        self.embedder = CachedEmbeddings(embedder) if embedder is not None else None
        self._index_name: str | None = self.options.index_name

    def __repr__(self) -> str:
        o = self.options
        return f"SemanticRecall(mode={o.mode!r}, top_k={o.top_k}, scope={o.scope!r})"

    # -- naming --------------------------------------------------------------------------------
    def index_name(self) -> str:
        """The vector collection in use (derived from the embedder's model and dimension)."""
        if self._index_name is None:
            assert self.embedder is not None
            dimension = len(self.embedder.embed_query("dimension"))
            self._index_name = index_name_for(model_id(self.embedder), dimension)
        return self._index_name

    # -- ids -----------------------------------------------------------------------------------
    def _ids(self, opts: dict[str, Any]) -> tuple[str, str | None]:
        thread_id, resource_id = ids_from_options(opts, processor="SemanticRecall")
        if self.options.scope == "thread" and not thread_id:
            raise ConfigurationError("SemanticRecall with scope 'thread' needs a thread_id")
        return resource_id, thread_id

    # -- search --------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int | None = None,
    ) -> list[RecallHit]:
        """Hits for `query` (best first), by the configured mode; [] for a blank query."""
        if not query.strip():
            return []
        k, scoped = self._plan(thread_id, limit)
        vector_hits = keyword_hits = []
        if self.options.mode != "keyword":
            assert self.embedder is not None
            embedding = self.embedder.embed_query(query)
            vector_hits = self._vector_hits(embedding, resource_id, scoped, k)
        if self.options.mode != "vector":
            keyword_hits = self._keyword_hits(query, resource_id, scoped, k)
        return self._fuse(vector_hits, keyword_hits, k)

    async def asearch(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None = None,
        limit: int | None = None,
    ) -> list[RecallHit]:
        """Async `search`."""
        if not query.strip():
            return []
        k, scoped = self._plan(thread_id, limit)
        vector_hits = keyword_hits = []
        if self.options.mode != "keyword":
            assert self.embedder is not None
            embedding = await self.embedder.aembed_query(query)
            vector_hits = await self._avector_hits(embedding, resource_id, scoped, k)
        if self.options.mode != "vector":
            keyword_hits = await self._akeyword_hits(query, resource_id, scoped, k)
        return self._fuse(vector_hits, keyword_hits, k)

    def _plan(self, thread_id: str | None, limit: int | None) -> tuple[int, str | None]:
        """How many hits, and the thread to filter on (only in thread scope)."""
        return limit or self.options.top_k, thread_id if self.options.scope == "thread" else None

    def _pool(self, k: int) -> int:
        return k if self.options.mode != "hybrid" else k * 4

    def _vector_hits(
        self, embedding: list[float], resource_id: str, thread_id: str | None, k: int
    ) -> list[RecallHit]:
        assert self.vector is not None
        hits = self.vector.query(
            self.index_name(),
            embedding,
            top_k=self._pool(k),
            resource_id=resource_id,
            thread_id=thread_id,
        )
        return self._threshold([RecallHit(h.message_id, h.thread_id, h.score) for h in hits])

    async def _avector_hits(
        self, embedding: list[float], resource_id: str, thread_id: str | None, k: int
    ) -> list[RecallHit]:
        assert self.vector is not None
        hits = await self.vector.aquery(
            self.index_name(),
            embedding,
            top_k=self._pool(k),
            resource_id=resource_id,
            thread_id=thread_id,
        )
        return self._threshold([RecallHit(h.message_id, h.thread_id, h.score) for h in hits])

    def _threshold(self, hits: list[RecallHit]) -> list[RecallHit]:
        limit = self.options.threshold
        return hits if limit is None else [h for h in hits if h.score >= limit]

    def _keyword_hits(
        self, query: str, resource_id: str, thread_id: str | None, k: int
    ) -> list[RecallHit]:
        rows = self.storage.search_text(
            query, resource_id=resource_id, thread_id=thread_id, limit=self._pool(k)
        )
        return [RecallHit(*row) for row in rows]

    async def _akeyword_hits(
        self, query: str, resource_id: str, thread_id: str | None, k: int
    ) -> list[RecallHit]:
        rows = await self.storage.asearch_text(
            query, resource_id=resource_id, thread_id=thread_id, limit=self._pool(k)
        )
        return [RecallHit(*row) for row in rows]

    def _fuse(
        self, vector_hits: list[RecallHit], keyword_hits: list[RecallHit], k: int
    ) -> list[RecallHit]:
        if self.options.mode == "vector":
            return vector_hits[:k]
        if self.options.mode == "keyword":
            return keyword_hits[:k]
        fused: dict[str, float] = defaultdict(float)
        threads: dict[str, str] = {}
        for hits in (vector_hits, keyword_hits):
            for rank, hit in enumerate(hits):
                fused[hit.message_id] += 1.0 / (RRF_K + rank + 1)
                threads[hit.message_id] = hit.thread_id
        best = sorted(fused, key=lambda m: fused[m], reverse=True)[:k]
        return [RecallHit(m, threads[m], fused[m]) for m in best]

    # -- input side ----------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None,
        exclude: set[str],
        never_hits: frozenset[str] = frozenset(),
    ) -> list[StoredMessage]:
        """The recalled messages (hits with neighbours), minus those in `exclude`.

        `never_hits` (the current turn's messages, which the query comes from) are skipped as
        hits without costing one of the `top_k` places."""
        hits = self.search(
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            limit=self.options.top_k + len(never_hits),
        )
        hits = [h for h in hits if h.message_id not in never_hits][: self.options.top_k]
        window = self.options.window
        found = self.storage.message_windows(
            [h.message_id for h in hits],
            before=window.before,
            after=window.after,
            resource_id=resource_id,
        )
        return hide_working_memory([s for s in found if s.message.id not in exclude])

    async def arecall(
        self,
        query: str,
        *,
        resource_id: str,
        thread_id: str | None,
        exclude: set[str],
        never_hits: frozenset[str] = frozenset(),
    ) -> list[StoredMessage]:
        """Async `recall`."""
        hits = await self.asearch(
            query,
            resource_id=resource_id,
            thread_id=thread_id,
            limit=self.options.top_k + len(never_hits),
        )
        hits = [h for h in hits if h.message_id not in never_hits][: self.options.top_k]
        window = self.options.window
        found = await self.storage.amessage_windows(
            [h.message_id for h in hits],
            before=window.before,
            after=window.after,
            resource_id=resource_id,
        )
        return hide_working_memory([s for s in found if s.message.id not in exclude])

    def process(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        query = last_human_text(messages)
        if not query.strip():
            return list(messages)
        resource_id, thread_id = self._ids(opts)
        found = self.recall(
            query, resource_id=resource_id, thread_id=thread_id, exclude=_ids_of(messages)
        )
        return self.assemble(found, thread_id, self.titles(found)) + list(messages)

    async def aprocess(self, messages: list[BaseMessage], **opts: Any) -> list[BaseMessage]:
        query = last_human_text(messages)
        if not query.strip():
            return list(messages)
        resource_id, thread_id = self._ids(opts)
        found = await self.arecall(
            query, resource_id=resource_id, thread_id=thread_id, exclude=_ids_of(messages)
        )
        return self.assemble(found, thread_id, await self.atitles(found)) + list(messages)

    def titles(self, found: Sequence[StoredMessage]) -> dict[str, str | None]:
        """The title of each thread the recalled messages come from."""
        titles: dict[str, str | None] = {}
        for thread_id in {s.thread_id for s in found}:
            thread = self.storage.get_thread(thread_id)
            titles[thread_id] = thread.title if thread else None
        return titles

    async def atitles(self, found: Sequence[StoredMessage]) -> dict[str, str | None]:
        """Async `titles`."""
        titles: dict[str, str | None] = {}
        for thread_id in {s.thread_id for s in found}:
            thread = await self.storage.aget_thread(thread_id)
            titles[thread_id] = thread.title if thread else None
        return titles

    @staticmethod
    def assemble(
        found: Sequence[StoredMessage], thread_id: str | None, titles: dict[str, str | None]
    ) -> list[BaseMessage]:
        """Same-thread hits as tagged messages; other threads' hits as one system message."""
        same = [tag(s.message, "semantic_recall") for s in found if s.thread_id == thread_id]
        other = [s for s in found if s.thread_id != thread_id]
        if not other:
            return same
        return [tag(SystemMessage(format_other_threads(other, titles)), "semantic_recall"), *same]

    # -- output side ---------------------------------------------------------------------------
    def _records(self, stored: Sequence[StoredMessage]) -> tuple[list[StoredMessage], list[str]]:
        todo = [
            s
            for s in stored
            if mastra_role(s.message) in EMBEDDED_ROLES and message_text(s.message).strip()
        ]
        return todo, [message_text(s.message) for s in todo]

    def index(self, stored: Sequence[StoredMessage]) -> int:
        """Embed and store user/assistant messages (batched); returns how many were written."""
        todo, texts = self._records(stored)
        if self.vector is None or self.embedder is None:
            return 0
        if todo:
            vectors = self.embedder.embed_documents(texts)
            self.vector.upsert(self.index_name(), _vector_records(todo, vectors))
        self.storage.mark_embedded([s.message.id for s in stored if s.message.id])
        return len(todo)

    async def aindex(self, stored: Sequence[StoredMessage]) -> int:
        """Async `index`."""
        todo, texts = self._records(stored)
        if self.vector is None or self.embedder is None:
            return 0
        if todo:
            vectors = await self.embedder.aembed_documents(texts)
            await self.vector.aupsert(self.index_name(), _vector_records(todo, vectors))
        await self.storage.amark_embedded([s.message.id for s in stored if s.message.id])
        return len(todo)

    def backfill(self, *, limit: int = 500, max_batches: int | None = None) -> int:
        """Index messages whose embedding is missing (e.g. saved while Chroma was down)."""
        if self.vector is None or self.embedder is None:
            return 0
        total = batches = 0
        while batch := self.storage.unembedded(limit=limit):
            total += self.index(batch)
            batches += 1
            if len(batch) < limit or (max_batches is not None and batches >= max_batches):
                break
        return total

    def forget(self, *, message_ids: Sequence[str] = (), thread_id: str | None = None) -> None:
        """Remove vectors of deleted messages or of a deleted thread."""
        if self.vector is not None:
            self.vector.delete(self.index_name(), ids=message_ids, thread_id=thread_id)

    async def aforget(
        self, *, message_ids: Sequence[str] = (), thread_id: str | None = None
    ) -> None:
        """Async `forget`."""
        if self.vector is not None:
            await self.vector.adelete(self.index_name(), ids=message_ids, thread_id=thread_id)


def _vector_records(
    stored: Sequence[StoredMessage], vectors: Sequence[Sequence[float]]
) -> list[VectorRecord]:
    return [
        VectorRecord(
            message_id=s.message.id or "",
            vector=v,
            thread_id=s.thread_id,
            resource_id=s.resource_id,
            role=mastra_role(s.message),
            created_at=s.created_at.timestamp(),
        )
        for s, v in zip(stored, vectors, strict=True)
    ]


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


def last_human_text(messages: Sequence[BaseMessage]) -> str:
    """The text of the last human message ('' when there is none)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_text(message)
    return ""


def _ids_of(messages: Sequence[BaseMessage]) -> set[str]:
    return {m.id for m in messages if m.id}


def format_other_threads(found: Sequence[StoredMessage], titles: dict[str, str | None]) -> str:
    """One block per conversation, messages grouped by day, each with its time."""
    by_thread: dict[str, list[StoredMessage]] = defaultdict(list)
    for s in found:
        by_thread[s.thread_id].append(s)
    parts = ["The following messages were remembered from other conversations with this user:"]
    for thread_id, items in by_thread.items():
        title = titles.get(thread_id)
        label = f' title="{title}"' if title else ""
        lines = [f'<remembered_from_other_conversation thread="{thread_id}"{label}>']
        day = None
        for s in sorted(items, key=lambda s: s.created_at):
            text = message_text(s.message)
            if not text.strip():  # an assistant message that only called tools
                continue
            if s.created_at.date() != day:
                day = s.created_at.date()
                lines.append(f"{day:%Y-%m-%d}:")
            lines.append(f"  [{s.created_at:%H:%M}] {mastra_role(s.message)}: {text}")
        lines.append("</remembered_from_other_conversation>")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
