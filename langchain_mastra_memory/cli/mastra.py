"""``import-mastra`` and ``export-mastra``: a Mastra store's threads, messages and working memory
into our SQLite file or PostgreSQL, and back (`storage.mastra.migration`), whole or not at all,
with a progress bar and the counts printed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .shared import DEFAULT_DB, Db, app, console, guard, storage_at

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage

Store = Annotated[
    str,
    typer.Argument(
        help='A Mastra store: its LibSQL file ("file:mastra.db") or its PostgreSQL DSN.'
    ),
]
SchemaName = Annotated[
    str, typer.Option("--schema-name", help="Mastra's PostgresStore schemaName (a DSN's).")
]
Dsn = Annotated[
    str | None,
    typer.Option("--dsn", envvar="LMM_DSN", help="PostgreSQL instead of the --db file."),
]


def _ours(db: Path, dsn: str | None, *, create: bool) -> MemoryStorage:
    if dsn is not None:
        from ..storage.postgres.backend import PostgresStorage

        return PostgresStorage(dsn)
    return storage_at(db, create=create)


def _mastra(url: str, schema: str, *, create: bool) -> MemoryStorage:
    from ..errors import StorageError
    from ..storage.mastra import MastraStorage
    from ..storage.mastra.sqlite import sqlite_path
    from ..storage.mastra.sync import is_dsn

    if not is_dsn(url) and not create and not Path(sqlite_path(url)).exists():
        raise StorageError(f"no Mastra store at {url} (nothing was read)")
    return MastraStorage(url, schema_name=schema) if is_dsn(url) else MastraStorage(url)


def _copy(source: MemoryStorage, target: MemoryStorage, verb: str) -> None:
    from ..storage.mastra.migration import copy_memory

    columns = (TextColumn(verb), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as bar:
        task = bar.add_task(verb, total=None)
        copied = copy_memory(
            source,
            target,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    console.print(
        f"{verb} {copied.threads} threads, {copied.messages} messages, "
        f"{copied.working_memories} working memories, {copied.observation_logs} observation logs"
    )


@app.command("import-mastra")
def import_mastra(
    source: Store, db: Db = DEFAULT_DB, dsn: Dsn = None, schema_name: SchemaName = "public"
) -> None:
    """Copy a Mastra store's threads, messages, working memory and observation logs into --db
    (or --dsn)."""
    guard(
        lambda: _copy(
            _mastra(source, schema_name, create=False), _ours(db, dsn, create=True), "imported"
        )
    )


@app.command("export-mastra")
def export_mastra(
    target: Store, db: Db = DEFAULT_DB, dsn: Dsn = None, schema_name: SchemaName = "public"
) -> None:
    """Copy --db's (or --dsn's) threads, messages, working memory and observation logs into a
    Mastra store (created if missing), which Mastra then reads as its own."""
    guard(
        lambda: _copy(
            _ours(db, dsn, create=False), _mastra(target, schema_name, create=True), "exported"
        )
    )
