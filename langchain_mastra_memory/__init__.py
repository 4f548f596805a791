"""Mastra's agent memory for LangChain/LangGraph: history, recall, working memory, processors.

The map, layers pointing one way (the list `docs/architecture.md` states and the tests hold):

- `storage/`: the front (`MemoryStorage` in `base`, `side_records`, `records` (rows, times,
  the `Thread` record), `validation`, `filters`, `blocking`: the blocking-call test mode) and its
  parts: `sql/` (`SQLStorage`, every SQL algorithm once over a `Dialect`, in rooms),
  `sqlite/`, `postgres/`, `mastra/` (memory on a Mastra store's own tables).
- `recall/`: search only: the front (`RecallIndex`, `options`, the `VectorStore` contract, the
  backlog `writer`, `upkeep`: vectors kept in step with storage) and its parts: `engines/`,
  `exact/` (hot partitions searched exactly in memory), `embedders/` (`MiniLMEmbeddings`, the
  shared embedding cache), `ranking` (from pieces to messages).
- `turn/`: a turn's context (`context`), its writes (`writes`: `MemoryWrites`), the history
  it shows (`history`) and the recall block (`recall_block`).
- `conversation/`: how a graph's state becomes the stored conversation (checkpoint state only).
- `lifecycle/`: `Erasure`, retention, and memory's own database as the checkpoint store.
- `working_memory/`, `observational/`, `titles`, `processors/` (the `Runnable` processors).
- `memory.Memory`: the facade over those parts, built in its own ``__init__``.
- `integrations/`: the shapes built on `Memory` (LCEL, the LangGraph hook and node,
  `MemoryCheckpointer`, the middleware, the chat history, the store, the retriever, the MCP
  tools, the ``search_memory`` tool); `langgraph_server`, `ui`, `cli/`.
- Small and cross-cutting: `errors`, `messages` (and the tag on what memory adds),
  `provider_rules`, `twins` (sync and async from one algorithm), `pools` (memory's own
  threads), `tracing`, `browsing` (pages), `threads/` (`ids`, summaries, JSON Lines transfer),
  `tokens/`, `config/` and `testing` (a provider-strict scripted model).
  Modules moved in 0.2 (``token_counting``, ``ids``, ``paging``, ...) and the flat modules of
  `recall` and `storage` before they were split by part (``recall.qdrant``,
  ``storage.observations``, ...) still import from their old names, with a
  `DeprecationWarning`, for one release (`MOVED`).

Importing the package loads nothing heavy: each public name is imported from its module on
first use (PEP 562), so ``import langchain_mastra_memory`` and the CLI's ``--help`` start fast
and chromadb, ONNX Runtime and the tokenizers load only when something uses them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time, `__getattr__` below
    from .browsing import MessagePage, Page, SearchHit
    from .config.options import MemoryOptions
    from .errors import (
        BlockingCallError,
        ConfigurationError,
        EncodingNotAvailableError,
        InvalidMessageError,
        MastraMemoryError,
        MessageConflictError,
        MessageNotFoundError,
        OrphanToolResultWarning,
        ReadOnlyError,
        ReadOnlyHistoryWarning,
        ResourceMismatchError,
        SchemaVersionError,
        StorageError,
        ThreadExistsError,
        ThreadNotFoundError,
        TripWire,
        UnsavedTurnWarning,
        VectorStoreError,
        VolatileCheckpointsWarning,
        WorkingMemoryError,
    )
    from .integrations.chat_history import MemoryChatMessageHistory
    from .integrations.checkpointer import MemoryCheckpointer
    from .memory import Memory
    from .messages import MessageList
    from .observational.config import ObservationEvent
    from .observational.extractors import (
        Extracted,
        Extractor,
        ExtractorContext,
        WorkingMemoryExtractor,
    )
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
    from .recall import CachedEmbeddings, ChromaVectorStore, MiniLMEmbeddings, PgVectorStore
    from .storage import MastraStorage, MemoryStorage, PostgresStorage, SQLiteStorage, StoredMessage
    from .storage.records import Thread
    from .tokens.counting import TokenCounter
    from .working_memory import WorkingMemoryConfig

_WHERE = {  # public name -> the module defining it
    "BlockingCallError": ".errors",
    "CachedEmbeddings": ".recall",
    "ChromaVectorStore": ".recall",
    "ConfigurationError": ".errors",
    "EmbedderChangedError": ".errors",
    "EncodingNotAvailableError": ".errors",
    "FunctionProcessor": ".processors",
    "InvalidMessageError": ".errors",
    "LangChainVectorStore": ".recall",
    "MastraMemoryError": ".errors",
    "Memory": ".memory",
    "MemoryChatMessageHistory": ".integrations.chat_history",
    "MemoryCheckpointer": ".integrations.checkpointer",
    "MemoryOptions": ".config.options",
    "MemoryProcessor": ".processors",
    "MemoryRetriever": ".integrations.retriever",
    "MemoryStorage": ".storage",
    "MessageConflictError": ".errors",
    "MessageHistory": ".processors",
    "MessageList": ".messages",
    "MessagePage": ".browsing",
    "MessageNotFoundError": ".errors",
    "MilvusVectorStore": ".recall",
    "MiniLMEmbeddings": ".recall",
    "ModelByInputTokens": ".observational.runnables",
    "ObservationEvent": ".observational.config",
    "Extracted": ".observational.extractors",
    "Extractor": ".observational.extractors",
    "ExtractorContext": ".observational.extractors",
    "WorkingMemoryExtractor": ".observational.extractors",
    "OrphanToolResultWarning": ".errors",
    "Page": ".browsing",
    "MastraVectorStore": ".recall",
    "PgVectorStore": ".recall",
    "PostgresStorage": ".storage",
    "QdrantEdgeVectorStore": ".recall",
    "QdrantVectorStore": ".recall",
    "processor": ".processors",
    "ReadOnlyError": ".errors",
    "ReadOnlyHistoryWarning": ".errors",
    "ResourceMismatchError": ".errors",
    "SchemaVersionError": ".errors",
    "SearchHit": ".browsing",
    "SemanticRecall": ".processors.semantic_recall",
    "SQLiteStorage": ".storage",
    "MastraStorage": ".storage",
    "StorageError": ".errors",
    "StoredMessage": ".storage",
    "Thread": ".storage.records",
    "ThreadExistsError": ".errors",
    "ThreadNotFoundError": ".errors",
    "ThreadSummary": ".threads.summaries",
    "TokenCounter": ".tokens.counting",
    "TokenLimiter": ".processors",
    "TokenLimiterProcessor": ".processors",
    "ToolCallFilter": ".processors",
    "TripWire": ".errors",
    "UnsavedTurnWarning": ".errors",
    "VolatileCheckpointsWarning": ".errors",
    "VectorStoreError": ".errors",
    "WorkingMemory": ".processors",
    "WorkingMemoryConfig": ".working_memory",
    "WorkingMemoryError": ".errors",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its module the first time it is asked for."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # asked once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


MOVED = dict(  # old module -> where it lives now (0.2); the old name works for one more release
    line.split()
    for line in """
    token_counting tokens.counting
    tokenizers tokens.tokenizers
    registry_files tokens.registry_files
    ids threads.ids
    thread storage.records
    threads.thread storage.records
    storage.contract storage.base
    transfer threads.transfer
    browse browsing
    paging browsing
    options config.options
    params config.params
    call_options config.call_options
    state_mirror conversation.suffix
    branches conversation.branches
    shutdown pools
    recall.engine recall.engines.base
    wiring memory
    integrations.checkpointer.configs integrations.checkpointer.saver_io
    integrations.checkpointer.io integrations.checkpointer.saver_io
    integrations.checkpointer.deletes integrations.checkpointer.saver_io
    integrations.checkpointer.one_file integrations.checkpointer.saver_io
    integrations.checkpointer.refs integrations.checkpointer.channel
    integrations.checkpointer.messages integrations.checkpointer.channel
    integrations.checkpointer.first_puts integrations.checkpointer.owners
    integrations.checkpointer.listing integrations.checkpointer.main
    integrations.checkpointer.upkeep integrations.checkpointer.maintenance
    recall.chroma recall.engines.chroma
    recall.chroma_legacy recall.engines.chroma
    recall.engines.chroma_legacy recall.engines.chroma
    recall.engines.chroma_collections recall.engines.chroma
    recall.engines.chroma_pages recall.engines.chroma
    recall.pgvector recall.engines.pgvector
    recall.qdrant recall.engines.qdrant
    recall.qdrant_edge recall.engines.qdrant_edge
    recall.milvus recall.engines.milvus
    recall.langchain_store recall.engines.langchain_store
    recall.exact_matrix recall.exact.matrix
    recall.snapshots recall.exact.snapshots
    recall.embeddings recall.embedders
    recall.bert_graph recall.embedders.minilm
    recall.model_files recall.embedders.minilm
    recall.context recall.ranking
    recall.dates recall.ranking
    recall.rerank recall.ranking
    recall.synced turn.writes
    conversation.windows turn.history
    conversation.token_budget turn.history
    storage.sql_messages storage.sql.messages
    storage.sql_search storage.sql.search
    storage.sql_threads storage.sql.threads
    storage.sql_working_memory storage.sql.working_memory
    storage.statements storage.sql.statements
    storage.items storage.sql.items
    storage.observations storage.sql.observations
    storage.withheld storage.sql.messages
    storage.sqlite_schema storage.sqlite.schema
    storage.postgres_items storage.postgres.items
    storage.postgres_schema storage.postgres.schema
    storage.postgres_text storage.postgres.text
    storage.pgvector_sql storage.postgres.pgvector
    tokens.startup tokens.counting
    processors.limiting processors.token_limiter
    processors.token_limiter_processor processors.token_limiter
    cli.mastra cli.commands
    conversation.lineage conversation.mirroring
    working_memory.rules working_memory.config
    working_memory.prompt working_memory.config
    observational.models observational.runnables
    observational.hooks observational.runnables
    storage.thread storage.records
    injected messages
    storage.sql.observation_history storage.sql.observations
    storage.sql.observation_archives storage.sql.observations
    storage.sql.extracted storage.sql.observations
    storage.sql.withheld storage.sql.messages
    storage.postgres.poolers storage.postgres.connections
    lifecycle.checkpoint_file lifecycle.checkpoint_store
    lifecycle.checkpoint_postgres lifecycle.checkpoint_store
    config.retention config.options
    integrations.model_budget integrations.middleware
    observational.extracting observational.extractors
    observational.working_extractor observational.extractors
    observational.parse observational.replies
    observational.checks observational.replies
    recall.embedders.model_files recall.embedders.minilm
    recall.embedders.bert_graph recall.embedders.minilm
    turn.windows turn.history
    turn.budget turn.history
    ui.plots ui.views
    langgraph_server.environment langgraph_server
    recall.exact.scan recall.exact.matrix
    recall.exact.shared recall.exact.partitions
    browsing.paging browsing
    browsing.browse browsing
    tracing.runs tracing
    recall.ranking.dates recall.ranking
    recall.ranking.fusion recall.ranking
    recall.ranking.context recall.ranking
    recall.ranking.rerank recall.ranking
    pools.executors pools
    pools.waits pools
    pools.shutdown pools
    pools.worker pools
    """.strip().splitlines()
)


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import langchain_mastra_memory.token_counting`` (an old path) gives the module at its
    new path, with a `DeprecationWarning` naming it."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        old = fullname.removeprefix(f"{__name__}.")
        if old == fullname or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: Any) -> Any:
        import warnings

        new = f"{__name__}.{MOVED[spec.name.removeprefix(f'{__name__}.')]}"
        warnings.warn(
            f"{spec.name} moved to {new}; the old name goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: Any) -> None:
        """The module is the moved one, already executed."""


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())


__all__ = [
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
