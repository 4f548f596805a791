"""Mastra's agent memory for LangChain/LangGraph: history, recall, working memory, processors."""

from .chat_history import MemoryChatMessageHistory
from .checkpointer import MemoryCheckpointer
from .embeddings import CachedEmbeddings, MiniLMEmbeddings
from .errors import (
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
from .memory import Memory
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
from .storage import MemoryStorage, PostgresStorage, SQLiteStorage, StoredMessage
from .thread import Thread
from .token_counting import TokenCounter
from .vector import ChromaVectorStore
from .working_memory import WorkingMemoryConfig

__all__ = [
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
