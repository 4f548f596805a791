"""``import-mastra`` and ``export-mastra``: a Mastra store's threads, messages and working memory
into our SQLite file or PostgreSQL, and back (`storage.mastra.migration`), whole or not at all,
with a progress bar and the counts printed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .shared import DEFAULT_DB, Db, Dsn, SchemaName, app, console, guard, mastra_at, storage_of

if TYPE_CHECKING:
    from ..storage.base import MemoryStorage

Store = Annotated[
    str,
    typer.Argument(
        help='A Mastra store: its LibSQL file ("file:mastra.db") or its PostgreSQL DSN.'
    ),
]


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
        lambda: _copy(mastra_at(source, schema_name), storage_of(db, dsn, create=True), "imported")
    )


@app.command("export-mastra")
def export_mastra(
    target: Store, db: Db = DEFAULT_DB, dsn: Dsn = None, schema_name: SchemaName = "public"
) -> None:
    """Copy --db's (or --dsn's) threads, messages, working memory and observation logs into a
    Mastra store (created if missing), which Mastra then reads as its own."""
    guard(
        lambda: _copy(storage_of(db, dsn), mastra_at(target, schema_name, create=True), "exported")
    )
