"""LangGraph Server (``langgraph dev``, a LangSmith deployment) with memory as its checkpointer
and its store.

Name them in ``langgraph.json``::

    {
      "dependencies": ["."],
      "graphs": {"agent": "./agent.py:graph"},
      "checkpointer": {"path": "langchain_mastra_memory.langgraph_server.checkpointer"},
      "store": {"path": "langchain_mastra_memory.langgraph_server.store"}
    }

and compile the graph without a checkpointer (the server gives it this one). One `Memory` per
process, `memory`, is built from the environment (`settings`):

- ``LMM_DB``: a SQLite file (default ``memory.db``) or a PostgreSQL DSN (``postgresql://...``);
- ``LMM_VECTOR``: ``default`` (embedded Chroma beside a SQLite file, pgvector in PostgreSQL), or
  ``module:attribute`` naming a vector store (or a function returning one);
- ``LMM_OPTIONS``: `Memory`'s options as JSON (``{"semantic_recall": true, ...}``).

The owner of a run is the caller's identity from the server's auth (``langgraph_auth_user_id``);
a config naming another owner is refused. The server's own reads of a thread by its id (its
state, history, copy; Studio's too) name no owner: they are answered for the thread's stored
owner (``trust_thread_reads=True``), which is safe behind the server because its auth has
decided who may reach the thread before it reads. A graph outside the server keeps the strict
default. The checkpointer offers ``adelete_for_runs``, ``acopy_thread`` and ``aprune``, so the
server warns of nothing missing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..integrations.checkpointer import MemoryCheckpointer
from ..integrations.store import MemoryStore
from ..memory import Memory
from .environment import Settings, memory_from_environment, settings

__all__ = ["Settings", "checkpointer", "memory", "memory_from_environment", "settings", "store"]

memory: Memory = memory_from_environment()


@asynccontextmanager
async def checkpointer() -> AsyncIterator[MemoryCheckpointer]:
    """The server's checkpointer: ``memory.checkpointer(trust_thread_reads=True)``."""
    yield memory.checkpointer(trust_thread_reads=True)


@asynccontextmanager
async def store() -> AsyncIterator[MemoryStore]:
    """The server's store: ``memory.store()`` (items, ``query=`` search, working memory)."""
    yield memory.store()
