"""What the commands share: the Typer apps, the consoles, opening a database, errors in the
CLI's terms, the embedder `--precision` picks, progress bars."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

if TYPE_CHECKING:  # the rest loads inside the commands: --help starts fast
    from ..memory import Memory
    from ..recall.embedders import CachedEmbeddings
    from ..storage.base import MemoryStorage
    from ..storage.sqlite.backend import SQLiteStorage

from ..errors import InvalidMessageError, MastraMemoryError, StorageError, ThreadNotFoundError

app = typer.Typer(
    help="Mastra-style agent memory for LangChain: inspect and manage it.", no_args_is_help=True
)
threads_app = typer.Typer(help="List, show and delete threads.", no_args_is_help=True)
app.add_typer(threads_app, name="threads")
wm_app = typer.Typer(help="Show and set working memory.", no_args_is_help=True)
app.add_typer(wm_app, name="working-memory")
console = Console()
err_console = Console(stderr=True)

Db = Annotated[Path, typer.Option("--db", envvar="LMM_DB", help="SQLite database file.")]
Dsn = Annotated[
    str | None,
    typer.Option("--dsn", envvar="LMM_DSN", help="PostgreSQL instead of the --db file."),
]
MastraUrl = Annotated[
    str | None,
    typer.Option(
        "--mastra",
        envvar="LMM_MASTRA",
        help="A Mastra store instead of --db, shared with Mastra: its LibSQL file "
        '("file:mastra.db") or its PostgreSQL DSN (with --schema-name).',
    ),
]
SchemaName = Annotated[
    str, typer.Option("--schema-name", help="Mastra's PostgresStore schemaName (a DSN's).")
]
DEFAULT_DB = Path("memory.db")
SAMPLE = "sample_conversation.jsonl"
T = TypeVar("T")


def storage_at(db: Path, *, create: bool = False) -> SQLiteStorage:
    """The database at `db`; a command that only reads never creates one (a mistyped --db is
    an error, not a new empty file)."""
    from ..storage.sqlite.backend import SQLiteStorage

    if not create and str(db) != ":memory:" and not Path(db).exists():
        msg = (
            f"no database at {db} (nothing was created): check --db / $LMM_DB, or start one with "
            f"`langchain-mastra-memory import FILE --db {db}`"
        )
        raise StorageError(msg)
    return SQLiteStorage(db)


def mastra_at(url: str, schema_name: str = "public", *, create: bool = False) -> MemoryStorage:
    """Memory on the Mastra store at `url` (`MastraStorage`); a file that is not there is an
    error unless `create`."""
    from ..storage.mastra import MastraStorage
    from ..storage.mastra.sqlite import sqlite_path
    from ..storage.mastra.sync import is_dsn

    if is_dsn(url):
        return cast("MemoryStorage", MastraStorage(url, schema_name=schema_name))
    if not create and not Path(sqlite_path(url)).exists():
        raise StorageError(f"no Mastra store at {url} (nothing was read)")
    return cast("MemoryStorage", MastraStorage(url))


def storage_of(
    db: Path,
    dsn: str | None = None,
    mastra: str | None = None,
    schema_name: str = "public",
    *,
    create: bool = False,
) -> MemoryStorage:
    """The storage a command names: a Mastra store (`mastra`), PostgreSQL (`dsn`), else the
    SQLite file `db`."""
    if mastra is not None:
        return mastra_at(mastra, schema_name, create=create)
    if dsn is not None:
        from ..storage.postgres.backend import PostgresStorage

        return PostgresStorage(dsn)
    return storage_at(db, create=create)


def fail(exc: MastraMemoryError) -> typer.Exit:
    """Print the error in the CLI's terms (commands, not Python methods); exit status 1."""
    text = str(exc)
    if isinstance(exc, ThreadNotFoundError):
        text = text.split(";")[0] + (
            ": `langchain-mastra-memory threads list` shows the threads there are, and "
            "`langchain-mastra-memory import FILE --thread ID` creates one"
        )
    err_console.print(f"[bold red]error:[/] {text}", highlight=False)
    return typer.Exit(1)


class Precision(str, Enum):
    float32 = "float32"
    int8 = "int8"


_embedder_precision = Precision.float32


@app.callback()
def _options(
    precision: Annotated[
        Precision,
        typer.Option(
            envvar="LMM_EMBEDDER_PRECISION",
            help="The default embedder's precision; use the one your application's Memory uses "
            "(its vectors are indexed apart).",
        ),
    ] = Precision.float32,
) -> None:
    global _embedder_precision
    _embedder_precision = precision


def embedder() -> CachedEmbeddings | None:
    """The embedder `--precision` asks for (None: Memory's default, float32)."""
    if _embedder_precision is Precision.float32:
        return None
    from ..recall.embedders import CachedEmbeddings, MiniLMEmbeddings

    return CachedEmbeddings(MiniLMEmbeddings(precision=_embedder_precision.value))


@contextmanager
def memory_at(db: Path, *, create: bool = False) -> Iterator[Memory]:
    from ..memory import Memory

    try:
        memory = Memory(storage=storage_at(db, create=create), embedder=embedder())
        yield memory
    except MastraMemoryError as exc:
        raise fail(exc) from exc


def guard(func: Callable[[], T]) -> T:
    try:
        return func()
    except MastraMemoryError as exc:
        raise fail(exc) from exc


def embed_with_progress(memory: Memory, what: str) -> int:
    """`backfill_embeddings` with a live count (the backlog's size is found as it goes)."""
    columns = (
        SpinnerColumn(),
        TextColumn(what),
        TextColumn("{task.completed} messages"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err_console, transient=not sys.stderr.isatty()) as bar:
        task = bar.add_task(what, total=None)
        return guard(lambda: memory.backfill_embeddings(lambda n: bar.advance(task, n)))


def print_messages(stored: list[Any]) -> None:
    from ..messages import mastra_role, message_text

    table = Table("time", "role", "text", "tokens", show_lines=False)
    for item in stored:
        message = item.message
        text = message_text(message)
        calls = getattr(message, "tool_calls", None)
        if calls:
            text = (text + " " if text else "") + " ".join(
                f"→ {c['name']}({c['args']})" for c in calls
            )
        table.add_row(
            f"{item.created_at:%Y-%m-%d %H:%M:%S}",
            mastra_role(message),
            text,
            "" if item.token_count is None else str(round(item.token_count)),
        )
    console.print(table)


def recall_memory(db: Path, mode: str, top_k: int, message_range: int) -> Memory:
    from ..memory import Memory

    options = {"mode": mode, "top_k": top_k, "message_range": message_range}
    return Memory(storage=storage_at(db), embedder=embedder(), options={"semantic_recall": options})


def import_with_progress(
    memory: Memory, file: Path, thread: str | None, resource: str | None
) -> int:
    from ..threads.transfer import import_lines, split_lines

    raw = file.read_bytes()
    try:
        lines = split_lines(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        msg = f"nothing was imported: {file} is not UTF-8 (line {line}, byte {exc.start})"
        raise InvalidMessageError(msg) from None
    columns = (TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=not sys.stdout.isatty()) as bar:
        task = bar.add_task("import", total=sum(1 for line in lines if line.strip()))
        return import_lines(
            memory,
            lines,
            thread_id=thread,
            resource_id=resource,
            progress=lambda n: bar.advance(task, n),
        )


Owner = Annotated[
    str | None,
    typer.Option(
        "--resource", help="The owner: another resource's thread is refused (default: any)."
    ),
]


Resource = Annotated[str, typer.Option("--resource", help="The resource (owner).")]
ThreadOpt = Annotated[
    str | None, typer.Option("--thread", help="A thread, for thread-scoped working memory.")
]
