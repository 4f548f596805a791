"""The `Memory` a LangGraph Server process runs on, read from environment variables."""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigurationError
from ..memory import Memory

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
        from ..storage.postgres.backend import PostgresStorage

        storage: Any = PostgresStorage(chosen.db)
    else:
        from ..storage.sqlite.backend import SQLiteStorage

        storage = SQLiteStorage(chosen.db)
    return Memory(storage=storage, vector=_vector(chosen.vector), options=chosen.options)
