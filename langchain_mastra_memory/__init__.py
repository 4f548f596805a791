"""Mastra's agent memory for LangChain/LangGraph: history, recall, working memory, processors."""

from .chat_history import MemoryChatMessageHistory
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
    WorkingMemoryError,
)
from .memory import Memory
from .options import MemoryOptions
from .processors import (
    FunctionProcessor,
    MemoryProcessor,
    TokenLimiter,
    TokenLimiterProcessor,
    ToolCallFilter,
    WorkingMemory,
    processor,
)
from .storage import MemoryStorage, SQLiteStorage, StoredMessage
from .thread import Thread
from .token_counting import TokenCounter
from .working_memory import WorkingMemoryConfig

__all__ = [
    "ConfigurationError",
    "EncodingNotAvailableError",
    "FunctionProcessor",
    "InvalidMessageError",
    "MastraMemoryError",
    "Memory",
    "MemoryChatMessageHistory",
    "MemoryOptions",
    "MemoryProcessor",
    "MemoryStorage",
    "MessageConflictError",
    "MessageNotFoundError",
    "OrphanToolResultWarning",
    "ResourceMismatchError",
    "SQLiteStorage",
    "SchemaVersionError",
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
    "WorkingMemory",
    "WorkingMemoryConfig",
    "WorkingMemoryError",
    "processor",
]
