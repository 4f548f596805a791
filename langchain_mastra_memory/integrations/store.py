"""`MemoryStore`: LangGraph's long-term memory API (`BaseStore`) over our storage and embedder.

`memory.store()` gives a store for ``graph.compile(store=...)``, ``create_react_agent(store=)``,
``get_store()`` in a node and langmem's memory tools. Items live in the memory's own database
(SQLite or PostgreSQL, migrated like the rest), ``query=`` searches rank them by the cosine of
the memory's embedder (the same model and cache as semantic recall; max over each item's
indexed fields, ``"$"`` being the whole value; pgvector in PostgreSQL, an exact scan of the
vectors alone in SQLite), filters take LangGraph's operators, and
items may expire (TTL, refreshed on read).

Working memory is an item too: ``("working_memory", resource_id)`` / ``"current"`` (thread
scope: ``("working_memory", resource_id, thread_id)``), with value ``{"content": <Markdown>}``,
or the object itself in schema mode. Reading it reads the document the agent tool and the
system prompt see; putting it updates that document (validated as the tool's updates are; in
schema mode the object is merged). The ``"working_memory"`` namespace holds nothing else.

Examples:
    >>> from langchain_mastra_memory import Memory, SQLiteStorage
    >>> memory = Memory(
    ...     storage=SQLiteStorage(":memory:"), options={"working_memory": {"enabled": True}}
    ... )
    >>> store = memory.store(index=False)
    >>> store.put(("alice", "memories"), "m1", {"text": "likes green tea"})
    >>> store.get(("alice", "memories"), "m1").value
    {'text': 'likes green tea'}
    >>> _ = memory.update_working_memory("# User\\n- Name: Alice", resource_id="alice")
    >>> store.get(("working_memory", "alice"), "current").value
    {'content': '# User\\n- Name: Alice'}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from ..config import call_options
from ..errors import ConfigurationError, ReadOnlyError
from ..storage.filters import matches
from ..storage.records import ItemWrite, Namespace, StoredItem
from ..storage.validation import check_item_key, check_item_value, check_namespace, check_query
from ..tracing import traced
from ..twins import Steps, call, run_async, run_sync
from ..working_memory.config import load_data

if TYPE_CHECKING:
    from ..memory import Memory

WORKING_MEMORY = "working_memory"
CURRENT = "current"


class InvalidStoreInputError(ConfigurationError, InvalidNamespaceError):
    """A store operation's namespace, key, value or query cannot be stored or read back
    (LangGraph's `InvalidNamespaceError` too, so code written for its stores catches it)."""


def check_op(op: Op) -> None:
    """What every backend stores alike, checked for ops given to `batch` directly too (LangGraph
    checks labels in `put`/`get`/`search` only; dotted namespaces are ours to guard)."""
    error = InvalidStoreInputError
    if isinstance(op, (GetOp, PutOp)):
        check_namespace(op.namespace, error=error)
        check_item_key(op.key, error)
        if isinstance(op, PutOp) and op.value is not None:
            check_item_value(op.value, error)
    elif isinstance(op, SearchOp):
        check_namespace(op.namespace_prefix, "namespace prefix", error, empty=True)
        if op.query is not None:
            try:
                check_query(op.query)
            except ConfigurationError as exc:
                raise error(str(exc)) from None
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            check_namespace(tuple(condition.path), "match condition", error, empty=True)
    else:
        raise error(f"unknown store operation: {type(op).__name__}")


def _namespace_matches(namespace: Namespace, condition: MatchCondition) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


class MemoryStore(BaseStore):
    """A LangGraph `BaseStore` over a `Memory`'s storage and embedder (see the module doc).

    Build it with `Memory.store`; ``index=False`` turns semantic search off, ``index={"fields":
    [...]}`` chooses what is embedded (default the whole value, ``["$"]``), and ``index={"embed":
    ..., "dims": ...}`` takes another embedder, as LangGraph's stores do.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        *,
        index: IndexConfig | Literal[False] | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        from ..recall.index import RecallIndex, RecallOptions

        self.memory = memory
        self.storage = memory.storage
        self.ttl_config = ttl
        self.embedder: Any = None
        self.fields: list[tuple[str, Any]] = []
        if index is not False:
            config: dict[str, Any] = dict(index or {})
            if config.get("embed") is not None:
                self.embedder = ensure_embeddings(config["embed"])
            else:
                self.embedder = memory.embedder or (
                    RecallIndex.with_defaults(self.storage, RecallOptions(), None, None).embedder
                )
            self.fields = _tokenized(config.get("fields") or ["$"])

    def __repr__(self) -> str:
        return f"MemoryStore({self.storage!r})"

    # -- BaseStore -----------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations: reads see the store as it was before the batch's writes."""
        return run_sync(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async `batch`."""
        return await run_async(self._batch(list(ops)))

    def _batch(self, ops: Sequence[Op]) -> Steps[list[Result]]:
        for op in ops:  # all checked before any runs: a bad op leaves the store untouched
            check_op(op)
        results: list[Result] = []
        writes: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append((yield from self._get(op)))
            elif isinstance(op, SearchOp):
                results.append((yield traced_search(self._search(op), op)))
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self._list_namespaces(op)))
            elif isinstance(op, PutOp):
                writes[(op.namespace, op.key)] = op  # the last put of a key wins
                results.append(None)
            else:
                raise ValueError(f"unknown store operation: {type(op).__name__}")
        if writes:
            self._refuse_read_only(writes.values())
            yield from self._write(list(writes.values()))
        return results

    def _refuse_read_only(self, puts: Iterable[PutOp]) -> None:
        """A read-only run changes no working memory (other items are the application's)."""
        if self.memory.writes.saves_turns(call_options.current()):  # (a store has no config)
            return
        for op in puts:
            if self._working_memory_ref(op.namespace, op.key) is not None:
                msg = (
                    f"this run is read-only (memory_options read_only, or a read-only memory): "
                    f"working memory {op.namespace}/{op.key!r} cannot change in it"
                )
                raise ReadOnlyError(msg)

    # -- working memory as an item ---------------------------------------------------------------
    def _working_memory_ref(self, namespace: Namespace, key: str) -> tuple[str, str | None] | None:
        """(resource_id, thread_id) when this is the working-memory item; None for others."""
        if not namespace or namespace[0] != WORKING_MEMORY:
            return None
        thread_scope = self.memory.working_memory.scope == "thread"
        shape = ("working_memory", "<resource_id>") + (("<thread_id>",) if thread_scope else ())
        if not self.memory.working_memory.enabled or len(namespace) != len(shape) or key != CURRENT:
            raise InvalidNamespaceError(
                f"the {WORKING_MEMORY!r} namespace holds the working memory only, as key "
                f"{CURRENT!r} under {shape} (working memory enabled: "
                f"{self.memory.working_memory.enabled}); got {namespace}/{key!r}"
            )
        return namespace[1], namespace[2] if thread_scope else None

    def _working_memory_items(self, resource_id: str | None) -> Steps[list[StoredItem]]:
        if not self.memory.working_memory.enabled:
            return []
        thread_scope = self.memory.working_memory.scope == "thread"
        rows = yield from call(self.storage.working_memories, resource_id)
        found = []
        for owner, thread_id, text, updated_at in rows:
            if (thread_id is not None) != thread_scope or not text:
                continue
            data = load_data(self.memory.working_memory, text)
            value = data if isinstance(data, dict) else {"content": data}
            namespace = (WORKING_MEMORY, owner) + ((thread_id,) if thread_id else ())
            found.append(StoredItem(namespace, CURRENT, value, None, updated_at, updated_at))
        return found

    def _working_memory_value(self, value: dict[str, Any]) -> Any:
        if self.memory.working_memory.mode != "markdown":
            return value
        content = value.get("content")
        if set(value) != {"content"} or not isinstance(content, str):
            raise ValueError(
                'the working memory item\'s value is {"content": "<Markdown>"} (or the object '
                f"itself in schema mode); got keys {sorted(value)}"
            )
        return content

    # -- operations ------------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Steps[Item | None]:
        ref = self._working_memory_ref(op.namespace, op.key)
        if ref is not None:
            items = yield from self._working_memory_items(ref[0])
            found = [i for i in items if i.namespace == op.namespace]
            return _item(found[0]) if found else None
        (stored,) = yield from call(
            self.storage.get_items, [(op.namespace, op.key)], refresh_ttl=op.refresh_ttl
        )
        return None if stored is None else _item(stored)

    def _search(self, op: SearchOp) -> Steps[list[SearchItem]]:
        prefix = op.namespace_prefix
        if op.filter is None and op.query is None and prefix and prefix[0] != WORKING_MEMORY:
            stored = yield from call(  # no working memory under this prefix: page in SQL
                self.storage.search_items,
                prefix,
                limit=op.limit,
                offset=op.offset,
                refresh_ttl=op.refresh_ttl,
            )
            return [_item(s, SearchItem) for s in stored]
        if op.query and self.embedder is not None and prefix and prefix[0] != WORKING_MEMORY:
            found = yield from self._nearest(op)
            if found is not None:
                return found
        candidates: list[StoredItem] = []
        if not prefix or prefix[0] == WORKING_MEMORY:
            owner = prefix[1] if len(prefix) > 1 else None
            working = yield from self._working_memory_items(owner)
            candidates += [w for w in working if w.namespace[: len(prefix)] == prefix]
        if not prefix or prefix[0] != WORKING_MEMORY:
            candidates += yield from call(
                self.storage.search_items, prefix, refresh_ttl=op.refresh_ttl
            )
        candidates.sort(key=lambda s: s.updated_at, reverse=True)
        if op.filter:
            candidates = [c for c in candidates if matches(c.value, op.filter)]
        scores: list[float | None] = [None] * len(candidates)
        if op.query and self.embedder is not None and candidates:
            scores = yield from self._scores(op.query, candidates)
            order = sorted(
                range(len(candidates)),
                key=lambda i: np.inf if scores[i] is None else -float(scores[i]),  # type: ignore[arg-type]
            )
            candidates, scores = [candidates[i] for i in order], [scores[i] for i in order]
        page = slice(op.offset, op.offset + op.limit)
        return [
            _item(c, SearchItem, score)
            for c, score in zip(candidates[page], scores[page], strict=True)
        ]

    def _nearest(self, op: SearchOp) -> Steps[list[SearchItem] | None]:
        """A page of the items nearest the query, from storage's vector index (pgvector in
        PostgreSQL, an exact scan of the vectors alone in SQLite); None when the nearest
        indexed items cannot fill the page after the filter (the whole prefix is then ranked,
        unindexed items after the scored)."""
        assert op.query is not None
        wanted = op.offset + op.limit
        pool = wanted * (8 if op.filter else 1)
        vector = yield from call(self.embedder.embed_query, op.query)
        nearest = yield from call(
            self.storage.nearest_items, op.namespace_prefix, vector, limit=pool
        )
        items = yield from call(
            self.storage.get_items,
            [(ns, key) for ns, key, _ in nearest],
            refresh_ttl=op.refresh_ttl,
        )
        page = [
            _item(item, SearchItem, score)
            for (_ns, _key, score), item in zip(nearest, items, strict=True)
            if item is not None and (not op.filter or matches(item.value, op.filter))
        ]
        if len(page) < wanted:  # the filter ate the pool, or unindexed items end the page
            return None
        return page[op.offset : wanted]

    def _scores(self, query: str, candidates: list[StoredItem]) -> Steps[list[float | None]]:
        """Cosine of the query with each item's best indexed text (None: not indexed)."""
        texts = [
            self._texts(c.value) if c.namespace[0] == WORKING_MEMORY else [] for c in candidates
        ]
        flat = [t for group in texts for t in group]
        vectors = iter((yield from call(self.embedder.embed_documents, flat)) if flat else [])
        q = np.asarray((yield from call(self.embedder.embed_query, query)), dtype=np.float32)
        q /= np.linalg.norm(q) or 1.0
        scores: list[float | None] = []
        for item, group in zip(candidates, texts, strict=True):
            rows = (
                np.asarray([next(vectors) for _ in group], dtype=np.float32)
                if group
                else _rows(item.vectors, q.size)
            )
            if rows is None or not len(rows):
                scores.append(None)
                continue
            norms = np.linalg.norm(rows, axis=1)
            scores.append(float(np.max(rows @ q / np.where(norms == 0, 1.0, norms))))
        return scores

    def _list_namespaces(self, op: ListNamespacesOp) -> Steps[list[Namespace]]:
        namespaces = set((yield from call(self.storage.item_namespaces)))
        namespaces |= {w.namespace for w in (yield from self._working_memory_items(None))}
        cut = {
            n[: op.max_depth] if op.max_depth is not None else n
            for n in namespaces
            if all(_namespace_matches(n, c) for c in op.match_conditions or ())
        }  # matched whole, then cut to max_depth (as LangGraph's stores do)
        kept = sorted(cut)
        return kept[op.offset : op.offset + op.limit]

    def _texts(
        self, value: dict[str, Any], fields: list[tuple[str, Any]] | None = None
    ) -> list[str]:
        """The texts to embed: each indexed field's (the store's, or a put's own `index`)."""
        texts: list[str] = []
        for _path, tokens in self.fields if fields is None else fields:
            texts += [t for t in get_text_at_path(value, tokens) if t]  # "$": the whole value
        return texts

    def _write(self, puts: list[PutOp]) -> Steps[None]:
        writes: list[ItemWrite] = []
        texts: list[list[str]] = []
        for op in puts:
            ref = self._working_memory_ref(op.namespace, op.key)
            if ref is not None:
                if op.value is None:
                    yield from call(
                        self.storage.modify_working_memory,
                        lambda _old: "",
                        resource_id=ref[0],
                        thread_id=ref[1],
                    )
                else:
                    yield from call(
                        self.memory.working.update,
                        self._working_memory_value(dict(op.value)),
                        resource_id=ref[0],
                        thread_id=ref[1],
                    )
                continue
            value = None if op.value is None else dict(op.value)
            wanted: list[str] = []
            if value is not None and self.embedder is not None and op.index is not False:
                own = None if op.index is None else _tokenized(op.index)
                wanted = self._texts(value, own)
            texts.append(wanted)
            writes.append(ItemWrite(op.namespace, op.key, value, None, op.ttl))
        flat = [t for group in texts for t in group]
        if flat:
            vectors = yield from call(self.embedder.embed_documents, flat)
            rows = iter(np.asarray(vectors, dtype=np.float32))
            writes = [
                w
                if not group
                else ItemWrite(
                    w.namespace,
                    w.key,
                    w.value,
                    np.stack([next(rows) for _ in group]),
                    w.ttl_minutes,
                )
                for w, group in zip(writes, texts, strict=True)
            ]
        if writes:
            yield from call(self.storage.put_items, writes)


def _tokenized(fields: Sequence[str] | str) -> list[tuple[str, Any]]:
    """Index fields as LangGraph's stores keep them: ``"$"`` stands for the whole value (its
    JSON), any other path is tokenized."""
    if isinstance(fields, str):
        fields = [fields]
    return [(f, f if f == "$" else tokenize_path(f)) for f in fields]


def _rows(vectors: np.ndarray | None, dimension: int) -> np.ndarray | None:
    if vectors is None or vectors.size % dimension:
        return None  # not indexed, or indexed by another embedder
    return vectors.reshape(-1, dimension)


def _item(stored: StoredItem, kind: type[Item] = Item, score: float | None = None) -> Any:
    fields: dict[str, Any] = {
        "value": stored.value,
        "key": stored.key,
        "namespace": stored.namespace,
        "created_at": stored.created_at,
        "updated_at": stored.updated_at,
    }
    if kind is SearchItem:
        fields["score"] = score
    return kind(**fields)


__all__ = ["InvalidStoreInputError", "MemoryStore", "check_op", "matches"]


def traced_search(steps: Steps[list[SearchItem]], op: SearchOp) -> Any:
    """A search as a ``retriever`` run of the run it happens in (a graph node's, a tool's):
    its query and namespace in, the items as Documents out (`tracing`)."""
    from langchain_core.documents import Document

    return traced(
        steps,
        "store_search",
        run_type="retriever",
        inputs={"query": op.query or ""},
        metadata={"namespace": "/".join(op.namespace_prefix), "limit": op.limit},
        outputs=lambda items: [
            Document(
                page_content=json.dumps(item.value, default=str),
                id="/".join((*item.namespace, item.key)),
                metadata={"score": item.score, "updated_at": item.updated_at.isoformat()},
            )
            for item in items
        ],
    )
