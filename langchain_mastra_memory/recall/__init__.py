"""Semantic recall's machinery: the index, the vector store and the embedders.

- `index`: `RecallIndex` (vector, keyword and hybrid search, neighbour windows, keeping vectors
  in step with storage) and `RecallOptions`.
- `vector`: the `VectorStore` protocol and `ChromaVectorStore` (embedded, in memory, or a
  Chroma server); `pgvector`: `PgVectorStore` (in PostgreSQL, beside `PostgresStorage`);
  `qdrant`: `QdrantVectorStore` (Qdrant's local mode, a server or a cluster), `qdrant_edge`:
  `QdrantEdgeVectorStore` (Qdrant's own engine in this process) and `milvus`:
  `MilvusVectorStore` (Milvus Lite, standalone or distributed), imported when asked for (the
  ``qdrant`` and ``milvus`` extras).
- `embeddings`: `MiniLMEmbeddings` (all-MiniLM-L6-v2 offline, numpy) and the shared
  `CachedEmbeddings` LRU.
"""

from .chroma import ChromaVectorStore
from .embeddings import CachedEmbeddings, MiniLMEmbeddings
from .index import RecallHit, RecallIndex, RecallOptions
from .pgvector import PgVectorStore
from .vector import VectorStore


def __getattr__(name: str) -> object:
    if name == "QdrantVectorStore":  # the qdrant extra, loaded when asked for
        from .qdrant import QdrantVectorStore

        return QdrantVectorStore
    if name == "QdrantEdgeVectorStore":  # the qdrant extra too
        from .qdrant_edge import QdrantEdgeVectorStore

        return QdrantEdgeVectorStore
    if name == "MilvusVectorStore":  # the milvus extra, likewise
        from .milvus import MilvusVectorStore

        return MilvusVectorStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CachedEmbeddings",
    "ChromaVectorStore",
    "MilvusVectorStore",
    "MiniLMEmbeddings",
    "PgVectorStore",
    "QdrantEdgeVectorStore",
    "QdrantVectorStore",
    "RecallHit",
    "RecallIndex",
    "RecallOptions",
    "VectorStore",
]
