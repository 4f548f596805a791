"""Semantic recall's machinery: the index, the vector store and the embedders.

- `index`: `RecallIndex` (vector, keyword and hybrid search, neighbour windows, keeping vectors
  in step with storage) and `RecallOptions`.
- `vector`: `ChromaVectorStore` (embedded, in memory, or a Chroma server).
- `embeddings`: `MiniLMEmbeddings` (all-MiniLM-L6-v2 offline, numpy) and the shared
  `CachedEmbeddings` LRU.
"""

from .embeddings import CachedEmbeddings, MiniLMEmbeddings
from .index import RecallHit, RecallIndex, RecallOptions
from .vector import ChromaVectorStore

__all__ = [
    "CachedEmbeddings",
    "ChromaVectorStore",
    "MiniLMEmbeddings",
    "RecallHit",
    "RecallIndex",
    "RecallOptions",
]
