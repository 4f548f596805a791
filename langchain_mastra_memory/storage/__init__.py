"""Storage backends for threads, messages and resources."""

from .base import MemoryStorage
from .postgres import PostgresStorage
from .records import StoredMessage
from .sqlite import SQLiteStorage

__all__ = ["MemoryStorage", "PostgresStorage", "SQLiteStorage", "StoredMessage"]
