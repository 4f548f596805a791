"""The public face: the top-level names are pinned, and every docstring example runs."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import langchain_mastra_memory

EXPECTED = [
    "BlockingCallError",
    "CachedEmbeddings",
    "ChromaVectorStore",
    "ConfigurationError",
    "EmbedderChangedError",
    "EncodingNotAvailableError",
    "Extracted",
    "Extractor",
    "ExtractorContext",
    "FunctionProcessor",
    "InvalidMessageError",
    "LangChainVectorStore",
    "MastraMemoryError",
    "MastraStorage",
    "MastraVectorStore",
    "Memory",
    "MemoryChatMessageHistory",
    "MemoryCheckpointer",
    "MemoryOptions",
    "MemoryProcessor",
    "MemoryRetriever",
    "MemoryStorage",
    "MessageConflictError",
    "MessageHistory",
    "MessageList",
    "MessageNotFoundError",
    "MessagePage",
    "MilvusVectorStore",
    "MiniLMEmbeddings",
    "ModelByInputTokens",
    "ObservationEvent",
    "OrphanToolResultWarning",
    "Page",
    "PgVectorStore",
    "PostgresStorage",
    "QdrantEdgeVectorStore",
    "QdrantVectorStore",
    "ReadOnlyError",
    "ReadOnlyHistoryWarning",
    "ResourceMismatchError",
    "SQLiteStorage",
    "SchemaVersionError",
    "SearchHit",
    "SemanticRecall",
    "StorageError",
    "StoredMessage",
    "Thread",
    "ThreadExistsError",
    "ThreadNotFoundError",
    "ThreadSummary",
    "TokenCounter",
    "TokenLimiter",
    "TokenLimiterProcessor",
    "ToolCallFilter",
    "TripWire",
    "UnsavedTurnWarning",
    "VectorStoreError",
    "VolatileCheckpointsWarning",
    "WorkingMemory",
    "WorkingMemoryConfig",
    "WorkingMemoryError",
    "WorkingMemoryExtractor",
    "processor",
]


def test_all_is_pinned_and_sorted() -> None:
    assert langchain_mastra_memory.__all__ == EXPECTED
    assert sorted(EXPECTED) == EXPECTED
    for name in EXPECTED:
        assert getattr(langchain_mastra_memory, name)


def test_every_error_derives_from_the_package_base() -> None:
    base = langchain_mastra_memory.MastraMemoryError
    for name in EXPECTED:
        obj = getattr(langchain_mastra_memory, name)
        if isinstance(obj, type) and issubclass(obj, Exception) and not issubclass(obj, Warning):
            assert issubclass(obj, base), name


MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(langchain_mastra_memory.__path__, "langchain_mastra_memory.")
)


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name: str) -> None:
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
