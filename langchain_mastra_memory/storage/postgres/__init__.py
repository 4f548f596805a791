"""`PostgresStorage`, for many app processes on one database: `backend`, `schema` (its
migrations), `text` (BM25 keyword search over the GIN index), `items` (`memory.store()`'s item
vectors) and `pgvector` (the vector SQL shared with recall's `PgVectorStore`). Imports
`storage.sql` and the front; psycopg loads when a storage is opened."""

from .backend import PostgresStorage

__all__ = ["PostgresStorage"]
