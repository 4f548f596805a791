"""The local servers: `ui` (the memory explorer) and `mcp` (memory for MCP clients)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .shared import (
    DEFAULT_DB,
    Db,
    Dsn,
    MastraUrl,
    SchemaName,
    app,
    console,
    embedder,
    err_console,
    guard,
    storage_of,
)

if TYPE_CHECKING:
    from ..memory import Memory


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _server_token(token: str | None, *, no_token: bool, host: str) -> str | None:
    """The token a local server (explorer, MCP over HTTP) asks of every request: the one given,
    else a random one; None with ``--no-token``, which only 127.0.0.1 may use."""
    if no_token and host not in LOOPBACK:
        err_console.print(
            f"[red]refusing to listen on {host} without a token[/red] (anyone "
            "who reaches it would read every resource's memory)"
        )
        raise typer.Exit(2)
    if no_token:
        return None
    import secrets

    return token or secrets.token_urlsafe(24)


def _served_memory(
    db: Path, dsn: str | None, mastra: str | None, schema_name: str, *, create: bool = False
) -> Memory:
    """The memory a server (explorer, MCP) serves: a Mastra store's (`mastra`), PostgreSQL at
    `dsn`, else the SQLite file; hybrid recall and working memory on."""
    from ..memory import Memory

    def build() -> Memory:
        storage = storage_of(db, dsn, mastra, schema_name, create=create)
        options = {"semantic_recall": {"mode": "hybrid"}, "working_memory": {"enabled": True}}
        return Memory(storage=storage, embedder=embedder(), options=options)

    return guard(build)


@app.command()
def ui(
    db: Db = DEFAULT_DB,
    dsn: Dsn = None,
    mastra: MastraUrl = None,
    schema_name: SchemaName = "public",
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

        from ..ui import create_app
    except ImportError as exc:
        console.print(
            f"[red]the explorer needs the 'ui' extra:[/red] pip install "
            f"'langchain-mastra-memory[ui]' ({exc})"
        )
        raise typer.Exit(1) from exc
    memory = _served_memory(db, dsn, mastra, schema_name)
    url = f"http://{host}:{port}/" + ("" if token is None else f"?token={token}")
    console.print(
        f"memory explorer on [bold]{url}[/bold] ({'read-write' if write else 'read-only'})"
    )
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    uvicorn.run(
        create_app(memory, write=write, token=token, hosts=[host, *(allow_host or [])]),
        host=host,
        port=port,
        log_level="warning",
    )


@app.command("mcp")
def mcp_server(
    db: Db = DEFAULT_DB,
    dsn: Dsn = None,
    mastra: MastraUrl = None,
    schema_name: SchemaName = "public",
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
        from ..integrations.mcp_server import create_mcp_server
    except ImportError as exc:  # pragma: no cover - depends on the install
        err.print(
            f"[red]the MCP server needs the 'mcp' extra:[/red] pip install "
            f"'langchain-mastra-memory[mcp]' ({exc})"
        )
        raise typer.Exit(1) from exc
    memory = _served_memory(db, dsn, mastra, schema_name, create=True)
    server = create_mcp_server(memory, resource_id=resource, multi_resource=multi_resource)
    if not http:
        server.run("stdio")
        return
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from ..ui.guard import LocalWebGuard

    names = [*LOOPBACK, host, *(allow_host or [])]
    security = TransportSecuritySettings(
        allowed_hosts=[f"{n}:*" if ":" not in n else f"[{n}]:*" for n in names] + names,
        allowed_origins=[f"http://{n}:*" for n in names],
    )
    asgi = LocalWebGuard(
        server.streamable_http_app(transport_security=security, host=host), token=token, hosts=names
    )
    err.print(
        f"MCP server on http://{host}:{port}/mcp"
        + ("" if token is None else f" (Authorization: Bearer {token})")
    )
    sys.stderr.flush()
    uvicorn.run(asgi, host=host, port=port, log_level="warning")
