"""The threads commands (list, show, delete), `forget`, `messages` and `export`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .shared import (
    DEFAULT_DB,
    Db,
    Owner,
    app,
    console,
    err_console,
    memory_at,
    print_messages,
    threads_app,
)


@threads_app.command("list")
def threads_list(
    db: Db = DEFAULT_DB,
    resource: Annotated[str | None, typer.Option(help="Only this resource's threads.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
) -> None:
    """List threads, most recently updated first."""
    with memory_at(db) as memory:
        threads = memory.list_threads(resource_id=resource, limit=limit)
        counts = {t.id: len(memory.storage.list_messages(t.id)) for t in threads}
    table = Table("thread", "resource", "title", "messages", "updated")
    for t in threads:
        table.add_row(
            t.id, t.resource_id, t.title or "", str(counts[t.id]), f"{t.updated_at:%Y-%m-%d %H:%M}"
        )
    console.print(table)


@threads_app.command("show")
def threads_show(thread_id: str, db: Db = DEFAULT_DB, resource: Owner = None) -> None:
    """Show one thread's details."""
    with memory_at(db) as memory:
        thread = memory.get_thread(thread_id, resource_id=resource)
        if thread is None:
            err_console.print(f"[bold red]error:[/] no thread {thread_id!r}")
            raise typer.Exit(1)
        stored = memory.storage.list_messages(thread_id)
    console.print(thread.model_dump(mode="json"))
    tokens = sum(s.token_count or 0 for s in stored)
    console.print(f"{len(stored)} messages, {round(tokens)} tokens (o200k_base, Mastra's rule)")


@threads_app.command("delete")
def threads_delete(
    thread_id: str,
    db: Db = DEFAULT_DB,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete a thread and its messages."""
    if not yes:
        typer.confirm(f"Delete thread {thread_id!r} and all its messages?", abort=True)
    with memory_at(db) as memory:
        deleted = memory.delete_thread(thread_id)
    console.print("deleted" if deleted else f"no thread {thread_id!r}")
    if not deleted:
        raise typer.Exit(1)


@app.command()
def forget(
    resource: str,
    db: Db = DEFAULT_DB,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Erase a resource (a user): every thread, message, vector, working memory, observation,
    checkpoint in the file and store item of it; nothing of anyone else."""
    if not yes:
        typer.confirm(f"Erase everything memory holds of {resource!r}?", abort=True)
    with memory_at(db) as memory:
        erased = memory.delete_resource(resource)
    console.print(f"erased {resource!r}" if erased else f"nothing held of {resource!r}")
    if not erased:
        raise typer.Exit(1)


@app.command()
def messages(
    thread_id: str,
    db: Db = DEFAULT_DB,
    last: Annotated[int | None, typer.Option(help="Only the newest N.")] = None,
    resource: Owner = None,
) -> None:
    """Print a thread's messages, oldest first."""
    with memory_at(db) as memory:
        stored = memory.storage.list_messages(thread_id, last=last, resource_id=resource)
    print_messages(stored)


@app.command()
def export(
    thread_id: str,
    db: Db = DEFAULT_DB,
    out: Annotated[Path | None, typer.Option(help="Write here instead of stdout.")] = None,
    resource: Owner = None,
) -> None:
    """Export a thread as JSON lines (imports back losslessly)."""
    from ..threads.transfer import export_thread, export_to_file

    with memory_at(db) as memory:
        if out is None:
            count = export_thread(memory, thread_id, sys.stdout, resource_id=resource)
        else:  # written beside, renamed over `out` only when complete
            count = export_to_file(memory, thread_id, out, resource_id=resource)
    err_console.print(f"exported {count} messages")
