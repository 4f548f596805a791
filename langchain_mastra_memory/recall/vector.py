"""What recall asks of a vector store (`VectorStore`), the records it writes and the hits it
reads, and the helpers every store shares (piece ids, thread filters, index names).

A vector is one piece of a message (its id the message id, ``#n`` after it for later pieces)
with metadata ``message_id, thread_id, resource_id, role, created_at``; the text lives in
storage. `ChromaVectorStore` (``engines/chroma.py``), `PgVectorStore`, `QdrantVectorStore`,
`MilvusVectorStore` and `LangChainVectorStore` implement it.

Examples:
    >>> index_name_for("sentence-transformers/all-MiniLM-L6-v2", 384)
    'memory_messages_sentence_transformers_all_minilm_l6_v2_384'
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar, runtime_checkable

from ..errors import ConfigurationError
from ..pools import in_io_pool
from ..storage.records import TimeWindow

if TYPE_CHECKING:
    import numpy as np

_V = TypeVar("_V")

# each message's stored vectors in piece order: lists, or one float32 array (pieces x dimension)
MessageVectors: TypeAlias = Mapping[str, "Sequence[Sequence[float]] | np.ndarray"]

logger = logging.getLogger(__name__)

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@dataclass(frozen=True)
class VectorRecord:
    """The embedding of one piece of a message, and the metadata stored beside it."""

    message_id: str
    vector: Sequence[float]
    thread_id: str
    resource_id: str
    role: str
    created_at: float  # seconds since the epoch
    piece: int = 0  # which piece (sentence) of the message; 0 is stored under the message id
    text: str = ""  # the piece's text (for a store that embeds it itself: LangChain's)

    @property
    def vector_id(self) -> str:
        return self.message_id if self.piece == 0 else f"{self.message_id}#{self.piece}"

    def metadata(self) -> dict[str, Any]:
        """What an engine stores beside the vector: the piece id (``vid``) and the message's
        thread, owner, role and time (filtered on inside searches)."""
        return {
            "vid": self.vector_id,
            "message_id": self.message_id,
            "thread_id": self.thread_id,
            "resource_id": self.resource_id,
            "role": self.role,
            "created_at": float(self.created_at),
        }


@dataclass(frozen=True)
class VectorHit:
    """A search result: cosine similarity in [-1, 1] (1 is identical). The thread is not
    fetched (metadata would triple a deep query's cost): storage knows it."""

    message_id: str
    resource_id: str
    score: float


@runtime_checkable
class VectorStore(Protocol):
    """What recall needs of a vector store (`ChromaVectorStore`, `PgVectorStore`): pieces
    written, searched and deleted per resource, each method with an ``a``-prefixed twin.
    `query` filters inside the search by resource, threads and creation time (`window`,
    passed only when a caller gives one)."""

    def upsert(self, index_name: str, records: Sequence[VectorRecord]) -> None: ...
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
    ) -> list[VectorHit]: ...
    def delete(
        self,
        index_name: str,
        *,
        ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None: ...
    def present(
        self, index_name: str, resource_id: str, message_ids: Sequence[str]
    ) -> set[str]: ...
    def count(self, index_name: str, dimension: int, resource_id: str | None = None) -> int: ...
    def warm(self, index_name: str, resource_id: str) -> bool: ...
    async def aupsert(self, index_name: str, records: Sequence[VectorRecord]) -> None: ...
    async def aquery(
        self,
        index_name: str,
        vector: Sequence[float],
        *,
        top_k: int,
        resource_id: str,
        thread_id: str | None = None,
        thread_ids: Sequence[str] | None = None,
        window: TimeWindow | None = None,
    ) -> list[VectorHit]: ...
    async def adelete(
        self,
        index_name: str,
        *,
        ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None: ...
    async def awarm(self, index_name: str, resource_id: str) -> bool: ...


class AsyncTwins:
    """The ``a``-prefixed twins of a vector store's methods, each run in a worker thread (the
    clients underneath are synchronous)."""

    async def aupsert(self, index_name: str, records: Sequence[VectorRecord]) -> None:
        """Async `upsert`."""
        await in_io_pool(self.upsert, index_name, records)  # type: ignore[attr-defined]

    async def aquery(
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
        """Async `query`."""
        return await in_io_pool(
            lambda: self.query(  # type: ignore[attr-defined]
                index_name,
                vector,
                top_k=top_k,
                resource_id=resource_id,
                thread_id=thread_id,
                thread_ids=thread_ids,
                window=window,
            )
        )

    async def awarm(self, index_name: str, resource_id: str) -> bool:
        """Async `warm`."""
        return await in_io_pool(self.warm, index_name, resource_id)  # type: ignore[attr-defined]

    async def adelete(
        self,
        index_name: str,
        *,
        ids: Sequence[str] = (),
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> None:
        """Async `delete`."""
        await in_io_pool(
            lambda: self.delete(  # type: ignore[attr-defined]
                index_name, ids=ids, thread_id=thread_id, resource_id=resource_id
            )
        )

    async def apresent(
        self, index_name: str, resource_id: str, message_ids: Sequence[str]
    ) -> set[str]:
        """Async `present`."""
        return await in_io_pool(self.present, index_name, resource_id, message_ids)  # type: ignore[attr-defined]

    async def acount(self, index_name: str, dimension: int, resource_id: str | None = None) -> int:
        """Async `count`."""
        return await in_io_pool(self.count, index_name, dimension, resource_id)  # type: ignore[attr-defined]


class AsyncTwinsWithVectors(AsyncTwins):
    """`AsyncTwins`, and the twin of `vectors` for a store that hands its vectors back."""

    async def avectors(
        self, index_name: str, resource_id: str, message_ids: Sequence[str]
    ) -> MessageVectors:
        """Async `vectors`."""
        return await in_io_pool(self.vectors, index_name, resource_id, message_ids)  # type: ignore[attr-defined]


PIECES = uuid.UUID("5b0f2c1e-8a57-4d0c-9c3e-6f1f3f1d2a90")  # namespace of the piece UUIDs


def piece_uuid(vector_id: str) -> str:
    """A piece's id as a UUID (derived from ``message id`` or ``message id#n``): what engines
    that take only UUIDs or integers as ids store it under (Qdrant, LangChain stores)."""
    return str(uuid.uuid5(PIECES, vector_id))


def only_threads(thread_id: str | None, thread_ids: Sequence[str] | None) -> frozenset[str] | None:
    """The threads a search may return (None: all of the resource's): `thread_id`, those of
    `thread_ids`, or both's intersection."""
    if thread_ids is None:
        return None if thread_id is None else frozenset([thread_id])
    allowed = frozenset(thread_ids)
    return allowed if thread_id is None else allowed & {thread_id}


def pieces_by_message(rows: Iterable[tuple[str, Sequence[float]]]) -> dict[str, list[list[float]]]:
    """``(vector id, vector)`` rows as each message's vectors in piece order (a message whose
    pieces are not all there is left out: it is embedded again instead)."""
    return _in_piece_order(
        (vector_id, vector.tolist() if hasattr(vector, "tolist") else [float(x) for x in vector])
        for vector_id, vector in rows  # (numpy's tolist: 10x faster)
    )


def piece_arrays(rows: Iterable[tuple[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """`pieces_by_message` for rows of arrays: each message's pieces as one float32 array
    (pieces x dimension), no Python float made (a ranking stage reads hundreds of pieces)."""
    import numpy as np

    return {
        message_id: np.stack(pieces).astype(np.float32, copy=False)
        for message_id, pieces in _in_piece_order(rows).items()
    }


def _in_piece_order(rows: Iterable[tuple[str, _V]]) -> dict[str, list[_V]]:
    """Rows keyed ``message`` or ``message#piece`` grouped by message in piece order; a message
    missing a piece is left out."""
    found: dict[str, dict[int, _V]] = {}
    for vector_id, vector in rows:
        message_id, _, piece = vector_id.partition("#")
        found.setdefault(message_id, {})[int(piece or 0)] = vector
    return {
        message_id: [pieces[n] for n in range(len(pieces))]
        for message_id, pieces in found.items()
        if set(pieces) == set(range(len(pieces)))
    }


def index_name_for(model: str, dimension: int) -> str:
    """The default collection name for an embedding model and dimension."""
    slug = re.sub(r"[^a-zA-Z0-9]+", "_", model).strip("_").lower() or "model"
    return f"memory_messages_{slug}_{dimension}"[:500]


def check_name(name: str) -> str:
    if not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]", name):
        msg = f"index_name must be 3-512 characters of letters, digits, '.', '_', '-', got {name!r}"
        raise ConfigurationError(msg)
    return name


DEFAULT_TIMEOUT = 5.0  # seconds a call to a vector server may take (Chroma, Qdrant)
