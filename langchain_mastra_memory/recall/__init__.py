"""Semantic recall: search stored messages by meaning, by words, or both.

The front: `index` (`RecallIndex`: vector, keyword and hybrid search, neighbour windows),
`second_stage` (the pool reordered: context, a reranker), `options` (`RecallOptions`),
`vector` (the `VectorStore` contract every engine meets, the records it writes and the hits it
returns), `writer` (`BacklogWriter`: embedding behind the turn), `upkeep` (vectors kept in step
with storage); the writes that keep the index in step are the turn's (`turn.writes`).
Behind it, by part:

- `engines`: where vectors live (Chroma, pgvector, Qdrant, Qdrant Edge, Milvus, any LangChain
  vector store, Mastra's own index);
- `exact`: hot partitions searched exactly in memory, and their snapshots on disk;
- `embedders`: the offline default model and the process-wide embedding cache;
- `ranking`: the stages from pieces to messages (fusion, context, dates, rerank).

The parts import the contract and each other downward (`engines` -> `exact`; `ranking` ->
`embedders`), never the front; the front imports them all.
"""

from importlib import import_module

from .embedders import CachedEmbeddings, MiniLMEmbeddings
from .engines.chroma import ChromaVectorStore
from .engines.pgvector import PgVectorStore
from .index import RecallHit, RecallIndex, RecallOptions
from .vector import VectorStore

_LAZY = {  # the optional engines' extras, loaded when their store is asked for
    "QdrantVectorStore": ".engines.qdrant",
    "QdrantEdgeVectorStore": ".engines.qdrant_edge",
    "MilvusVectorStore": ".engines.milvus",
    "LangChainVectorStore": ".engines.langchain_store",
    "MastraVectorStore": ".engines.mastra",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_LAZY[name], __name__), name)


__all__ = [
    "CachedEmbeddings",
    "ChromaVectorStore",
    "LangChainVectorStore",
    "MastraVectorStore",
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
