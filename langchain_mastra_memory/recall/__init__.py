"""Semantic recall's machinery: the index, the vector store and the embedders.

- `index`: `RecallIndex` (vector, keyword and hybrid search, neighbour windows, keeping vectors
  in step with storage) and `RecallOptions`.
- `vector`: the `VectorStore` protocol and `ChromaVectorStore` (embedded, in memory, or a
  Chroma server); `pgvector`: `PgVectorStore` (in PostgreSQL, beside `PostgresStorage`).
- `embeddings`: `MiniLMEmbeddings` (all-MiniLM-L6-v2 offline, numpy) and the shared
  `CachedEmbeddings` LRU.
"""

from .embeddings import CachedEmbeddings, MiniLMEmbeddings
from .index import RecallHit, RecallIndex, RecallOptions
from .pgvector import PgVectorStore
from .vector import ChromaVectorStore, VectorStore

__all__ = [
    "CachedEmbeddings",
    "ChromaVectorStore",
    "MiniLMEmbeddings",
    "PgVectorStore",
    "RecallHit",
    "RecallIndex",
    "RecallOptions",
    "VectorStore",
]
