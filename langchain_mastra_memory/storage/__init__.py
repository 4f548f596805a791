"""Storage: threads, messages, resources and what memory keeps beside them.

The front: `base` (`MemoryStorage`, the interface every backend implements: the
conversation's contract, and `side_records`, what is kept beside it by `sql`'s subjects: store
items, withheld ids, checkpoint lists, retention, the observation log), `records` (the rows and
pure helpers every backend shares), `keywords` (a keyword query's words), `validation` (what
storage accepts, checked once at its boundary), `filters` (LangGraph's filter semantics) and
`blocking` (no sync call on an event loop). Behind it, by part:

- `sql`: the SQL both databases share (`SQLStorage` over a small `Dialect`, and its rooms:
  threads, messages, search, working memory, store items, observations, withheld ids);
- `sqlite`: `SQLiteStorage`, the embedded default, and its schema;
- `mastra`: `MastraStorage`, memory on a Mastra (TypeScript) store's own tables (a LibSQL
  file), shared with a running Mastra agent: `content` (Mastra's rows and LangChain messages,
  both ways), `layout` (its tables, times and JSONB), `sqlite` (the backend);
- `postgres`: `PostgresStorage`, its schema, its keyword search, and pgvector's SQL (shared
  with recall's `PgVectorStore`).

`sqlite` and `postgres` import `sql` (and `keywords`); `sql` imports the front; nothing here
imports recall.
"""

from .base import MemoryStorage
from .mastra import MastraStorage
from .postgres import PostgresStorage
from .records import StoredMessage
from .sqlite import SQLiteStorage

__all__ = ["MastraStorage", "MemoryStorage", "PostgresStorage", "SQLiteStorage", "StoredMessage"]
