"""`ChromaVectorStore`: message embeddings in Chroma (embedded, in memory, or a server).

Vectors are partitioned by resource: one cosine collection per index (embedding model and
dimension, ``memory_messages_<model>_<dim>``, or the ``index_name`` given) and resource
(``<index>-r<digest of the resource id>``), so a query searches only its owner's vectors and
never filters a whole store; a thread filter applies inside the partition. HNSW is built and
searched with a wide beam (``ef`` 256 to build, 1,600 to search, 32 links; a collection made
with a narrower beam gets this one), and an embedded store searches a hot partition of up to
582k pieces of 384 dimensions in memory instead (`ExactPartitions`): Chroma's graph over one
resource of 300k chat pieces misses some of the true nearest neighbours at any affordable
beam. Each
vector is one piece of a message (its id the message id, ``#n`` after it for later pieces)
with metadata ``message_id, thread_id, resource_id, role, created_at``; the text lives in
storage. A store written by an earlier version (one collection for every resource) is split
into partitions the first time the index is used (`split_legacy`). A partition loaded for exact
search is read a page at a time (`read_in_pages`: 300k pieces come back from Chroma as float64
and metadata dicts, several GB at once otherwise).

Examples:
    >>> store = ChromaVectorStore()  # in memory
    >>> store.upsert("demo", [VectorRecord("m1", [1.0, 0.0], "t1", "alice", "user", 0.0)])
    >>> [h.message_id for h in store.query("demo", [1.0, 0.1], top_k=3, resource_id="alice")]
    ['m1']
    >>> store.query("demo", [1.0, 0.1], top_k=3, resource_id="bob")
    []
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigurationError, VectorStoreError
from ...messages import MAX_PIECES, PIECE_SUFFIXES
from ...pools import in_io_pool
from ...storage.records import TimeWindow
from ..exact.matrix import Loaded, unit
from ..exact.partitions import EXACT_LIMIT, EXACT_MIN, shared_partitions
from ..exact.snapshots import FOLDER as SNAPSHOTS
from ..exact.snapshots import Snapshots
from ..vector import (
    DEFAULT_TIMEOUT,
    AsyncTwinsWithVectors,
    MessageVectors,
    VectorHit,
    VectorRecord,
    check_name,
    only_threads,
    pieces_by_message,
)

logger = logging.getLogger(__name__)

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


# -- the collections: one per index and resource ---------------------------------------------------
# HNSW beam at query time. On 300,011 real chat pieces in one collection (LoCoMo, 60 questions,
# M 32, efConstruction 256) ef 400 / 800 / 1,200 / 1,600 / 2,000 found 0.920 / 0.935 / 0.965 /
# 0.977 / 0.982 of the exact top-10 at 1.9 / 2.3 / 2.7 / 3.3 / 4.2 ms p50 (2026-11-25)
SEARCH_EF = 1600
HNSW = {
    "hnsw:space": "cosine",
    "hnsw:search_ef": SEARCH_EF,
    "hnsw:construction_ef": 256,
    "hnsw:M": 32,
}


def widen_beam(col: Any) -> None:
    """Give a collection made with a narrower query beam this version's (Chroma keeps the
    setting with the collection; a process that has it loaded sees it after a restart)."""
    try:
        hnsw = (getattr(col, "configuration", None) or {}).get("hnsw") or {}
        if int(hnsw.get("ef_search", SEARCH_EF)) < SEARCH_EF:
            col.modify(configuration={"hnsw": {"ef_search": SEARCH_EF}})
    except Exception as exc:  # an older server or client: keep the collection's own beam
        logger.debug("could not widen the HNSW beam of %s: %s", getattr(col, "name", col), exc)


def check_dimension(col: Any, name: str, dimension: int) -> None:
    stored = (col.metadata or {}).get("dimension")
    if stored is not None and int(stored) != dimension:
        msg = (
            f"vector collection {name!r} holds {stored}-dimensional vectors but the "
            f"embedder makes {dimension}: use another index_name, or the same embedder"
        )
        raise VectorStoreError(msg)


def set_http_timeout(client: Any, seconds: float) -> None:
    """Bound every request of a Chroma ``HttpClient``: its httpx session is made with no timeout
    at all (chromadb 1.x, ``FastAPI._session``); other clients are left as they are."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if session is not None and hasattr(session, "timeout"):
        import httpx

        session.timeout = httpx.Timeout(seconds)


def partition_name(index_name: str, resource_id: str) -> str:
    """The collection holding `resource_id`'s vectors of `index_name`."""
    digest = hashlib.sha256(resource_id.encode("utf-8")).hexdigest()[:24]
    return f"{index_name[:480]}-r{digest}"


# -- a collection written before partitioning, split once ------------------------------------------
MIGRATE_PAGE = 2000  # vectors moved a call when an unpartitioned collection is split


def split_legacy(
    legacy: Any,
    call: Callable[..., Any],
    target_of: Callable[[str], Any],
    writing: Callable[[Any], AbstractContextManager[None]],
) -> int:
    """Move every vector of `legacy` into its resource's partition (`target_of(resource)`,
    each write inside `writing(partition)`), page by page, deleting what was moved; the
    number moved. `call(what, func, ...)` runs the store's calls (errors as the store's).

    Examples:
        >>> from contextlib import nullcontext
        >>> import chromadb
        >>> client = chromadb.EphemeralClient()
        >>> legacy = client.create_collection("legacy-doc", embedding_function=None)
        >>> legacy.add(ids=["m1"], embeddings=[[1.0, 0.0]], metadatas=[{"resource_id": "alice"}])
        >>> parts = {}
        >>> def target_of(owner):
        ...     return parts.setdefault(owner, client.get_or_create_collection(
        ...         f"part-{owner}", embedding_function=None))
        >>> call = lambda what, func, *a, **k: func(*a, **k)
        >>> split_legacy(legacy, call, target_of, lambda col: nullcontext())
        1
        >>> parts["alice"].count(), legacy.count()
        (1, 0)
    """
    moved = 0
    while True:
        page = call("migrate", legacy.get, limit=MIGRATE_PAGE, include=["embeddings", "metadatas"])
        if not page["ids"]:
            return moved
        groups: dict[str, list[int]] = {}
        for i, meta in enumerate(page["metadatas"]):
            groups.setdefault(str(meta["resource_id"]), []).append(i)
        for resource_id, rows in groups.items():
            target = target_of(resource_id)
            with writing(target):
                call(
                    "migrate",
                    target.upsert,
                    ids=[page["ids"][i] for i in rows],
                    embeddings=[page["embeddings"][i] for i in rows],
                    metadatas=[page["metadatas"][i] for i in rows],
                )
        call("migrate", legacy.delete, ids=list(page["ids"]))
        moved += len(page["ids"])


# -- a partition read for exact search, a page at a time -------------------------------------------
# pieces read at a time when a partition is loaded for exact search: Chroma holds the GIL while
# it converts a page (10,000 pieces: ~250 ms in which no search could run; 1,000: ~15 ms)
LOAD_PAGE = 1_000


def read_in_pages(
    col: Any,
    call: Callable[..., Any],
    count: int,
    precision: Any,
    stopping: threading.Event,
) -> Loaded | None:
    """Every piece of `col` (about `count`), through `call(what, method, **kwargs)` (the
    store's error handling), as unit rows of `precision`; None when `stopping` is set part way
    (never a partition with pieces missing).

    Examples:
        >>> import chromadb, threading
        >>> col = chromadb.EphemeralClient().create_collection("pages_demo")
        >>> col.add(ids=["a", "b"], embeddings=[[3.0, 4.0], [1.0, 0.0]],
        ...         metadatas=[{"message_id": "a", "thread_id": "t"}] * 2)
        >>> call = lambda what, f, **kw: f(**kw)
        >>> read = read_in_pages(col, call, 2, np.float32, threading.Event())
        >>> read.ids, read.vectors.tolist()
        (['a', 'b'], [[0.6000000238418579, 0.800000011920929], [1.0, 0.0]])
    """
    ids: list[str] = []
    message_ids: list[str] = []
    thread_ids: list[str] = []
    vectors: np.ndarray | None = None
    while not stopping.is_set():  # (exit stops a load between pages)
        page = call(
            "load", col.get, limit=LOAD_PAGE, offset=len(ids), include=["embeddings", "metadatas"]
        )
        found = unit(np.asarray(page["embeddings"], dtype=np.float32), own=True)
        if not len(found):
            break
        if vectors is None or len(vectors) < len(ids) + len(found):
            grown = np.empty((max(count, len(ids) + len(found)), found.shape[1]), precision)
            if vectors is not None:
                grown[: len(ids)] = vectors[: len(ids)]
            vectors = grown
        vectors[len(ids) : len(ids) + len(found)] = found
        ids += page["ids"]
        message_ids += [str(m["message_id"]) for m in page["metadatas"]]
        thread_ids += [str(m["thread_id"]) for m in page["metadatas"]]
        if len(found) < LOAD_PAGE:
            break
    if stopping.is_set():
        return None
    return Loaded(
        ids,
        vectors[: len(ids)] if vectors is not None else [],
        message_ids,
        thread_ids,
        paged=len(ids) > LOAD_PAGE,
        is_unit=True,
    )


class ChromaVectorStore(AsyncTwinsWithVectors):
    """Message vectors in Chroma: ``path`` for an embedded ``PersistentClient``, nothing for an
    in-memory client, or ``client=chromadb.HttpClient(...)`` (or `from_url`) for a Chroma
    server, whose calls then give up after `timeout` seconds.

    An embedded store (no ``client``) searches its hot partitions of up to `exact_limit`
    pieces in memory (`ExactPartitions`, at most 640 MiB together: float32 rows up to 349k
    pieces of 384 dimensions, float16 up to 582k, each beside an int8 copy scanned for
    candidates): ~10x faster than HNSW up to 20k pieces (~100x on a small partition just
    written to, as a conversation's is every turn), as fast beyond (~3-5 ms at 300-500k) and
    exact where the graph is not (float16: up to ties within 5e-4); `exact_min` keeps smaller
    ones in HNSW. Pass ``exact_limit=0`` to
    always search HNSW (or a lower limit to trade exactness for speed and memory); with
    ``client=`` it is off by default (another process may write to a server).

    Every method has an ``a``-prefixed async twin (run in a worker thread).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        client: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
        exact_limit: int | None = None,
        exact_min: int = EXACT_MIN,
    ) -> None:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False, allow_reset=False)
        if not timeout > 0:
            raise ConfigurationError(
                f"timeout must be a positive number of seconds, got {timeout!r}"
            )
        try:
            if client is not None:
                self.client = client
                set_http_timeout(client, timeout)
            elif path is not None:
                self.client = chromadb.PersistentClient(path=str(path), settings=settings)
            else:
                self.client = chromadb.EphemeralClient(settings=settings)
        except Exception as exc:
            raise VectorStoreError(f"cannot open Chroma: {exc}") from exc
        self.path = None if path is None else str(path)
        self._own_client = client is None  # (a client given to it is the caller's to close)
        # Chroma's in-memory clients share one process-wide system: give each store its own
        # namespace so two in-memory stores never see each other's vectors.
        in_memory = client is None and path is None
        self._namespace = f"e{uuid.uuid4().hex[:12]}_" if in_memory else ""
        self._collections: dict[str, Any] = {}  # by full collection name
        self._migrated: set[str] = set()
        self._lock = threading.RLock()
        limit = (EXACT_LIMIT if client is None else 0) if exact_limit is None else exact_limit
        self._exact = (
            None if limit <= 0 else shared_partitions(path, self._load_partition, limit, exact_min)
        )
        # a store with exact search off still removes the snapshots another store saved here
        self._snapshots = None if path is None else Snapshots(Path(path) / SNAPSHOTS)

    @classmethod
    def from_url(cls, url: str, *, timeout: float = DEFAULT_TIMEOUT) -> ChromaVectorStore:
        """Connect to a Chroma server (``http://host:port``); `VectorStoreError` if it is down.

        Every call to the server gives up after `timeout` seconds (Chroma's client waits
        forever), so a frozen server costs a search `timeout` and then a `VectorStoreError`;
        saves never wait on it (the background writer keeps the backlog and retries).
        """
        import chromadb
        from chromadb.config import Settings

        match = re.fullmatch(r"(https?)://([^:/]+)(?::(\d+))?/?", url)
        if not match:
            raise ConfigurationError(f"not a Chroma server URL: {url!r}")
        scheme, host, port = match.groups()
        try:
            client = chromadb.HttpClient(
                host=host,
                port=int(port or 8000),
                ssl=scheme == "https",
                settings=Settings(anonymized_telemetry=False),
            )
        except Exception as exc:
            raise VectorStoreError(f"the Chroma server at {url} is not reachable: {exc}") from exc
        return cls(client=client, timeout=timeout)

    def __repr__(self) -> str:
        return f"ChromaVectorStore(path={self.path!r})"

    def close(self) -> None:
        """Release the Chroma client this store opened (Chroma runs one engine per folder in
        a process and stops it when the last client over the folder closes); a client given
        to the store is left open. `Memory.close` calls it."""
        self._collections.clear()
        if self._own_client:
            self.client.close()

    def collection(self, name: str, dimension: int, resource_id: str | None = None) -> Any:
        """Get or create the cosine collection of `resource_id`'s vectors (the bare index
        without one); a collection of another dimension is an error."""
        check_name(name)
        self._migrate(name, dimension)
        full = name if resource_id is None else partition_name(name, resource_id)
        cached = self._collections.get(full)
        if cached is not None:
            check_dimension(cached, name, dimension)
            return cached
        with self._lock:
            try:
                col = self.client.get_or_create_collection(
                    self._namespace + full,
                    metadata={**HNSW, "dimension": dimension},
                    embedding_function=None,
                )
            except Exception as exc:
                raise VectorStoreError(f"Chroma is unavailable: {exc}") from exc
            check_dimension(col, name, dimension)
            widen_beam(col)
            if self._exact is not None and resource_id is not None and col.count() == 0:
                self._exact.start_empty(str(col.id), dimension)  # (before a search sees it)
            self._collections[full] = col
            return col

    def _existing(self, full_name: str) -> Any | None:
        """The collection if it exists (None otherwise); never creates one."""
        if (cached := self._collections.get(full_name)) is not None:
            return cached
        try:
            found = self.client.get_collection(self._namespace + full_name)
        except Exception as exc:
            if "does not exist" in str(exc) or "not found" in str(exc).lower():
                return None
            raise VectorStoreError(f"Chroma is unavailable: {exc}") from exc
        widen_beam(found)
        self._collections[full_name] = found
        return found

    def _load_partition(self, collection_id: str) -> Loaded | None:
        """A partition's vectors for exact search (None if gone, or too small or too big to be
        worth holding)."""
        col = next((c for c in self._collections.values() if str(c.id) == collection_id), None)
        if col is None:  # opened by another store over the same folder (shared partitions)
            listed = self._call("list", self.client.list_collections)
            col = next((c for c in listed if str(getattr(c, "id", "")) == collection_id), None)
        assert self._exact is not None
        count = 0 if col is None else int(self._call("count", col.count))
        dimension = 0 if col is None else int((col.metadata or {}).get("dimension") or 0)
        precision = None if col is None else self._exact.precision(count, dimension)
        if col is None or count < self._exact.minimum or precision is None:
            return None  # too small to be worth it, or could never be held: not even read
        return read_in_pages(col, self._call, count, precision, self._exact.stopping)

    def partitions(self, index_name: str) -> list[Any]:
        """Every resource partition of `index_name`."""
        prefix = self._namespace + check_name(index_name)[:480] + "-r"
        try:
            names = [getattr(c, "name", c) for c in self.client.list_collections()]
        except Exception as exc:
            raise VectorStoreError(f"Chroma is unavailable (list): {exc}") from exc
        found = [n for n in names if n.startswith(prefix) and len(n) == len(prefix) + 24]
        return [self.client.get_collection(n) for n in found]

    def _migrate(self, name: str, dimension: int) -> None:
        """Split a collection written before partitioning (every resource's vectors in one)
        into per-resource partitions, once per index and store, then drop it."""
        if name in self._migrated:
            return
        with self._lock:
            if name in self._migrated:
                return
            legacy = self._existing(name)
            if legacy is not None and (legacy.metadata or {}).get("dimension") == dimension:
                moved = split_legacy(
                    legacy, self._call, partial(self._partition, name, dimension), self._writing
                )
                self._call("migrate", self.client.delete_collection, self._namespace + name)
                logger.info("moved %d vectors of %r into per-resource partitions", moved, name)
            self._migrated.add(name)

    def _partition(self, name: str, dimension: int, resource_id: str) -> Any:
        """`resource_id`'s partition of `name`, made if missing (the legacy split's target)."""
        return self.client.get_or_create_collection(
            self._namespace + partition_name(name, resource_id),
            metadata={**HNSW, "dimension": dimension},
            embedding_function=None,
        )

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            if "dimension" in str(exc):
                raise VectorStoreError(f"{what}: {exc}") from exc
            raise VectorStoreError(f"Chroma is unavailable ({what}): {exc}") from exc

    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) vectors by piece (the first under the message id), each into
        its resource's partition."""
        by_resource: dict[str, list[VectorRecord]] = {}
        for record in records:
            by_resource.setdefault(record.resource_id, []).append(record)
        for resource_id, group in by_resource.items():
            col = self.collection(index_name, len(group[0].vector), resource_id)
            ids = [r.vector_id for r in group]
            embeddings = [list(map(float, r.vector)) for r in group]
            with self._writing(col):
                self._call(
                    "upsert",
                    col.upsert,
                    ids=ids,
                    embeddings=embeddings,
                    metadatas=[
                        {
                            "message_id": r.message_id,
                            "thread_id": r.thread_id,
                            "resource_id": r.resource_id,
                            "role": r.role,
                            "created_at": r.created_at,
                        }
                        for r in group
                    ],
                )
                if self._exact is not None:
                    self._exact.upsert(
                        str(col.id),
                        ids,
                        embeddings,
                        [r.message_id for r in group],
                        [r.thread_id for r in group],
                    )

    def query(
        self,
        index_name: str,
        vector: Sequence[float],
        *,
        top_k: int,
        resource_id: str,
        thread_id: str | None = None,
        thread_ids: Sequence[str] | None = None,
        window: TimeWindow | None = None,
    ) -> list[VectorHit]:
        """The `top_k` nearest pieces of `resource_id`'s messages (and `thread_id`'s, or those
        of `thread_ids`, when given: filtered inside the search), one hit per piece."""
        check_name(index_name)
        threads = only_threads(thread_id, thread_ids)
        if threads is not None and not threads:
            return []
        self._migrate(index_name, len(vector))
        col = self._existing(partition_name(index_name, resource_id))
        if col is None:
            return []  # this resource has no vectors yet
        check_dimension(col, index_name, len(vector))
        if self._exact is not None and window is None:  # (the matrices hold no times)
            found = self._exact.search(str(col.id), vector, top_k=top_k, threads=threads)
            if found is not None:
                return [
                    VectorHit(vector_id.split("#", 1)[0], resource_id, similarity)
                    for vector_id, similarity in found
                ]
        conditions: list[dict[str, Any]] = []
        if threads is not None:
            conditions.append(
                {"thread_id": next(iter(threads))}
                if len(threads) == 1
                else {"thread_id": {"$in": sorted(threads)}}
            )
        if window is not None and window.start is not None:
            conditions.append({"created_at": {"$gte": window.start}})
        if window is not None and window.end is not None:
            conditions.append({"created_at": {"$lt": window.end}})
        where = (
            None
            if not conditions
            else (conditions[0] if len(conditions) == 1 else {"$and": conditions})
        )
        try:
            result = col.query(
                query_embeddings=[list(map(float, vector))],
                n_results=top_k,
                where=where,
                include=["distances"],
            )
        except Exception as exc:  # a partition made a moment ago whose first write is not
            if "Nothing found on disk" in str(exc):  # persisted yet: nothing to find yet
                return []
            raise VectorStoreError(f"Chroma is unavailable (query): {exc}") from exc
        return [
            VectorHit(vector_id.split("#", 1)[0], resource_id, 1.0 - distance)
            for vector_id, distance in zip(result["ids"][0], result["distances"][0], strict=True)
        ]

    def warm(self, index_name: str, resource_id: str) -> bool:
        """Load `resource_id`'s partition for exact search now, instead of after its first
        searches; True if it is held in memory (False: over the limit, absent, or exact
        search off)."""
        col = self._existing(partition_name(check_name(index_name), resource_id))
        return self._exact is not None and col is not None and self._exact.load(str(col.id))

    def delete(
        self,
        index_name: str,
        *,
        ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Delete every piece of these messages, or every vector of a thread, in
        `resource_id`'s partition (in every partition when the owner is not known)."""
        check_name(index_name)
        if resource_id is not None:
            col = self._existing(partition_name(index_name, resource_id))
            targets = [col] if col is not None else []
        else:
            targets = self.partitions(index_name)
        ids = list(ids)
        for col in targets:
            with self._writing(col):
                for start in range(0, len(ids), 500):
                    chunk = ids[start : start + 500]
                    self._call("delete", col.delete, where={"message_id": {"$in": chunk}})
                if thread_id is not None:
                    self._call("delete", col.delete, where={"thread_id": thread_id})
                if self._exact is not None:
                    self._exact.delete(str(col.id), message_ids=ids, thread_id=thread_id)

    def _writing(self, col: Any) -> AbstractContextManager[None]:
        """Around a write to a partition: its exact snapshot is dropped first (`snapshots`)."""
        if self._exact is not None:
            return self._exact.writing(str(col.id))
        if self._snapshots is not None:
            self._snapshots.drop(str(col.id))
        return nullcontext()

    def present(self, index_name: str, resource_id: str, message_ids: Sequence[str]) -> set[str]:
        """Which of these messages have their (first) vector in `resource_id`'s partition."""
        col = self._existing(partition_name(check_name(index_name), resource_id))
        if col is None or not message_ids:
            return set()
        found = self._call("get", col.get, ids=list(message_ids), include=[])
        return set(found["ids"])

    def vectors(
        self, index_name: str, resource_id: str, message_ids: Sequence[str]
    ) -> MessageVectors:
        """The stored vectors of these messages of `resource_id`, each message's pieces in
        order (what a clone copies instead of embedding again)."""
        return self._vectors(index_name, resource_id, message_ids, rounded=False)

    def _vectors(
        self, index_name: str, resource_id: str, message_ids: Sequence[str], *, rounded: bool
    ) -> MessageVectors:
        """`vectors`; `rounded`: a partition held in float16 answers too."""
        col = self._existing(partition_name(check_name(index_name), resource_id))
        ids = list(dict.fromkeys(message_ids))
        if col is None or not ids:
            return {}
        if self._exact is not None:  # a hot partition held in memory answers at once (its
            # vectors at unit length: the same in the cosine space they are searched in)
            held = self._exact.pieces(str(col.id), ids, MAX_PIECES, rounded=rounded)
            if held is not None:
                return held
        pieces = [i + suffix for i in ids for suffix in PIECE_SUFFIXES]
        rows: list[tuple[str, Sequence[float]]] = []
        for start in range(0, len(pieces), 4000):  # by id: a key lookup, not a metadata scan
            chunk = pieces[start : start + 4000]
            found = self._call("get", col.get, ids=chunk, include=["embeddings"])
            rows += zip(found["ids"], found["embeddings"], strict=True)
        return pieces_by_message(rows)

    def ranking_vectors(
        self, index_name: str, resource_id: str, message_ids: Sequence[str]
    ) -> MessageVectors:
        """`vectors` as a ranking stage reads them (the context stage's windows): from a
        partition held in float16 too (a cosine off by < 2^-11), where `vectors` reads Chroma
        (500 pieces: ~10 ms)."""
        return self._vectors(index_name, resource_id, message_ids, rounded=True)

    async def aranking_vectors(
        self, index_name: str, resource_id: str, message_ids: Sequence[str]
    ) -> MessageVectors:
        """Async `ranking_vectors`."""
        return await in_io_pool(self.ranking_vectors, index_name, resource_id, message_ids)

    def count(self, index_name: str, dimension: int, resource_id: str | None = None) -> int:
        """How many vectors (pieces) the index holds, for one resource or in all."""
        self._migrate(check_name(index_name), dimension)
        if resource_id is not None:
            col = self._existing(partition_name(index_name, resource_id))
            return 0 if col is None else int(self._call("count", col.count))
        return sum(int(self._call("count", col.count)) for col in self.partitions(index_name))
