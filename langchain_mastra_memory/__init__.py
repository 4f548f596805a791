"""Mastra's agent memory for LangChain/LangGraph: history, recall, working memory, processors.

The map, layers pointing one way (storage <- recall <- processors <- Memory <- integrations):

- `storage/`: `MemoryStorage` (the interface, async twins, the blocking-call test mode),
  `sql.SQLStorage` (every SQL algorithm once, over a `Dialect`), `SQLiteStorage`,
  `PostgresStorage`, their schema migrations, and `records` (rows, times, validation).
- `recall/`: `RecallIndex` (vector / keyword / hybrid search, neighbour windows, vectors kept in
  step with storage), `SyncedStorage` (writes followed by the index), `ChromaVectorStore`,
  `MiniLMEmbeddings` and the shared embedding cache.
- `working_memory/`: `WorkingMemoryConfig`, the update `rules`, the `prompt`, the
  `WorkingMemoryStore` and the ``update_working_memory`` `tool`.
- `processors/`: the `Runnable` processors (`TokenLimiter`, `ToolCallFilter`,
  `TokenLimiterProcessor`, `MessageHistory`, `SemanticRecall`, `WorkingMemory`).
- `memory.Memory`: the facade over those parts; `turn.TurnContext` assembles a turn's context.
- `integrations/`: the shapes built on `Memory`: LCEL (`as_runnable`, `wrap`), the LangGraph
  hook/node, `MemoryCheckpointer`, `MemoryMiddleware`, `MemoryChatMessageHistory`.
- Cross-cutting, small: `ids` (who owns a thread), `injected` (the tag on messages memory adds),
  `provider_rules` (the input shape providers accept), `messages`, `token_counting`,
  `tokenizers`, `params` (shared keyword arguments), `errors`, `testing` (a provider-strict
  scripted model), `transfer` and `cli`.
"""

from .errors import (
    BlockingCallError,
    ConfigurationError,
    EncodingNotAvailableError,
    InvalidMessageError,
    MastraMemoryError,
    MessageConflictError,
    MessageNotFoundError,
    OrphanToolResultWarning,
    ResourceMismatchError,
    SchemaVersionError,
    StorageError,
    ThreadExistsError,
    ThreadNotFoundError,
    TripWire,
    UnsavedTurnWarning,
    VectorStoreError,
    WorkingMemoryError,
)
from .integrations.chat_history import MemoryChatMessageHistory
from .integrations.checkpointer import MemoryCheckpointer
from .memory import Memory
from .messages import MessageList
from .options import MemoryOptions
from .processors import (
    FunctionProcessor,
    MemoryProcessor,
    MessageHistory,
    TokenLimiter,
    TokenLimiterProcessor,
    ToolCallFilter,
    WorkingMemory,
    processor,
)
from .processors.semantic_recall import SemanticRecall
from .recall import CachedEmbeddings, ChromaVectorStore, MiniLMEmbeddings
from .storage import MemoryStorage, PostgresStorage, SQLiteStorage, StoredMessage
from .thread import Thread
from .token_counting import TokenCounter
from .working_memory import WorkingMemoryConfig

__all__ = [
    "BlockingCallError",
    "CachedEmbeddings",
    "ChromaVectorStore",
    "ConfigurationError",
    "EncodingNotAvailableError",
    "FunctionProcessor",
    "InvalidMessageError",
    "MastraMemoryError",
    "Memory",
    "MemoryChatMessageHistory",
    "MemoryCheckpointer",
    "MemoryOptions",
    "MemoryProcessor",
    "MemoryStorage",
    "MessageConflictError",
    "MessageHistory",
    "MessageList",
    "MessageNotFoundError",
    "MiniLMEmbeddings",
    "OrphanToolResultWarning",
    "PostgresStorage",
    "ResourceMismatchError",
    "SQLiteStorage",
    "SchemaVersionError",
    "SemanticRecall",
    "StorageError",
    "StoredMessage",
    "Thread",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "TokenCounter",
    "TokenLimiter",
    "TokenLimiterProcessor",
    "ToolCallFilter",
    "TripWire",
    "UnsavedTurnWarning",
    "VectorStoreError",
    "WorkingMemory",
    "WorkingMemoryConfig",
    "WorkingMemoryError",
    "processor",
]
