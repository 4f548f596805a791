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

import importlib
import json
import os
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigurationError
from .integrations.checkpointer import MemoryCheckpointer
from .integrations.store import MemoryStore
from .memory import Memory

# its old submodules (a package until 0.2) still import, with a warning (`MOVED`)
__path__: list[str] = []

DB, VECTOR, OPTIONS = "LMM_DB", "LMM_VECTOR", "LMM_OPTIONS"

_CONNINFO = re.compile(r"(?:^|\s)(?:host|hostaddr|dbname|user|port|service)\s*=")


@dataclass(frozen=True)
class Settings:
    """What the environment asks for (`settings` reads it; every name is checked there).

    Examples:
        >>> settings({"LMM_DB": "postgresql://db/app", "LMM_OPTIONS": '{"last_messages": 20}'})
        Settings(db='postgresql://db/app', vector='default', options={'last_messages': 20})
        >>> settings({"LMM_DB": "host=db-a,db-b dbname=app target_session_attrs=any"}).postgres
        True
    """

    db: str = "memory.db"
    vector: str = "default"
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def postgres(self) -> bool:
        """Whether `db` is a PostgreSQL DSN: a URL, or libpq's ``key=value`` form (a
        multi-host DSN for failover is often written so)."""
        return self.db.startswith(("postgresql://", "postgres://")) or bool(
            _CONNINFO.search(self.db)
        )


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """`Settings` from `environ` (default ``os.environ``); a bad value is a
    `ConfigurationError` naming its variable."""
    env = os.environ if environ is None else environ
    raw_options = env.get(OPTIONS, "").strip()
    try:
        options = json.loads(raw_options) if raw_options else {}
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"${OPTIONS} is not JSON: {exc}") from exc
    if not isinstance(options, dict):
        raise ConfigurationError(f"${OPTIONS} must be a JSON object of Memory's options")
    vector = env.get(VECTOR, "").strip() or "default"
    if vector != "default" and ":" not in vector:
        msg = f"${VECTOR} is 'default' or 'module:attribute' naming a vector store, not {vector!r}"
        raise ConfigurationError(msg)
    return Settings(db=env.get(DB, "").strip() or "memory.db", vector=vector, options=options)


def _vector(spec: str) -> Any:
    if spec == "default":
        return None
    module_name, _, attribute = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"${VECTOR}={spec!r} names nothing importable: {exc}") from exc
    return found() if callable(found) else found


def memory_from_environment(environ: Mapping[str, str] | None = None) -> Memory:
    """The `Memory` the environment describes (`settings`)."""
    chosen = settings(environ)
    if chosen.postgres:
        from .storage.postgres.backend import PostgresStorage

        storage: Any = PostgresStorage(chosen.db)
    else:
        from .storage.sqlite.backend import SQLiteStorage

        storage = SQLiteStorage(chosen.db)
    return Memory(storage=storage, vector=_vector(chosen.vector), options=chosen.options)


memory: Memory = memory_from_environment()


@asynccontextmanager
async def checkpointer() -> AsyncIterator[MemoryCheckpointer]:
    """The server's checkpointer: ``memory.checkpointer(trust_thread_reads=True)``."""
    yield memory.checkpointer(trust_thread_reads=True)


@asynccontextmanager
async def store() -> AsyncIterator[MemoryStore]:
    """The server's store: ``memory.store()`` (items, ``query=`` search, working memory)."""
    yield memory.store()


__all__ = ["Settings", "checkpointer", "memory", "memory_from_environment", "settings", "store"]
