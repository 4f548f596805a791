"""The vector engines recall's vectors live in, each behind the `VectorStore` contract
(`recall.vector`):

- `chroma`: `ChromaVectorStore` (embedded, in memory or a server; the default), its
  collections, the split of a collection written before partitioning, and paged reads;
- `pgvector`: `PgVectorStore`, in PostgreSQL beside `PostgresStorage`'s tables;
- `qdrant`: `QdrantVectorStore` (local mode, a server or a cluster), `qdrant_edge`:
  `QdrantEdgeVectorStore` (Qdrant's engine in this process), `milvus`: `MilvusVectorStore`
  (Milvus Lite, standalone or distributed), over their shared `base` (`EngineStore`);
- `langchain_store`: `LangChainVectorStore`, any LangChain `VectorStore`.

An engine imports the contract (`recall.vector`), `recall.exact` and storage's records and SQL;
never the front (`index`, `writer`, `upkeep`) or the ranking stages. Nothing is
imported here: the qdrant and milvus extras load when their store is asked for.
"""
