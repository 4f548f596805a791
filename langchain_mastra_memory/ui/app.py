"""The memory explorer's web app: Starlette routes over `views`, server-rendered Jinja pages.

Read-only unless made with ``write=True`` (then working memory is editable, through the same
validation as the tool). Behind `guard.LocalWebGuard`: only loopback Host headers (and `hosts`),
no state change from another origin, a CSRF token in every form, and with a `token` every
request must carry it (``?token=`` once, then a cookie). Every page is scoped to one resource in
its URL (``/r/<resource>/...``) and reads through the library's scoped calls: another
resource's thread is a 404.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..browsing import MAX_PAGE
from ..errors import ConfigurationError, MastraMemoryError, ThreadNotFoundError
from ..memory import Memory
from ..messages import mastra_role, message_text
from ..storage.records import scope_key
from . import views
from .guard import COOKIE, LocalWebGuard, genuine_form

TEMPLATES = Path(__file__).with_name("templates")


class RoutedByRawPath:
    """Route on the path as sent, each id still percent-encoded (`arg` decodes it): ids are any
    string, and one holding ``/`` (sent as ``%2F``) would otherwise split into two segments
    after Starlette decodes the path, and match no route."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path") or quote(scope["path"]).encode("ascii")
            scope = {**scope, "path": raw.decode("latin-1")}
        await self.app(scope, receive, send)


def arg(request: Request, name: str) -> str:
    """A path parameter (an id), decoded (`RoutedByRawPath`)."""
    return unquote(request.path_params[name])


def create_app(
    memory: Memory,
    *,
    write: bool = False,
    token: str | None = None,
    hosts: Sequence[str] = (),
) -> Starlette:
    """The explorer over `memory` (see the module docstring).

    Examples:
        >>> from langchain_mastra_memory import Memory, SQLiteStorage
        >>> app = create_app(Memory(storage=SQLiteStorage(":memory:")))
        >>> sorted(r.path for r in app.routes)[:2]
        ['/', '/r/{resource}']
    """
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    env.globals.update(role=mastra_role, text=message_text, quote=lambda s: quote(s, safe=""))
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False)
    env.globals["stores"] = f"{memory.storage!r} · vectors: {memory.vector!r}"

    def page(request: Request, name: str, status: int = 200, **data: Any) -> HTMLResponse:
        csrf = request.scope.get("state", {}).get("csrf_token", "")
        backlog = memory.vector_backlog()
        retention = memory.pruner.summary()
        html = env.get_template(name).render(
            request=request, write=write, csrf=csrf, backlog=backlog, retention=retention, **data
        )
        response = HTMLResponse(html, status_code=status)
        given = request.query_params.get("token")
        if token is not None and given is not None:  # remembered for the next pages
            response.set_cookie(COOKIE, given, httponly=True, samesite="strict")
        return response

    def number(request: Request, name: str) -> int:
        """A page number from the URL: a malformed or negative one is the first page; one past
        what a query can reach (10^30, say) is clamped (`at_most_last` then shows the last)."""
        try:
            return min(MAX_PAGE, max(0, int(request.query_params.get(name, "0"))))
        except ValueError:
            return 0

    def at_most_last(fetch: Any, wanted: int) -> Any:
        """``fetch(page)``, or the last page when `wanted` is past it."""
        found = fetch(wanted)
        if not found.items and found.total and wanted:
            found = fetch((found.total - 1) // (found.per_page or found.total))
        return found

    async def index(request: Request) -> Response:
        query = request.query_params.get("q", "")
        found = at_most_last(
            lambda n: views.resources(memory, query=query, page=n), number(request, "page")
        )
        return page(request, "index.html", resources=found, q=query)

    async def resource(request: Request) -> Response:
        owner, query = arg(request, "resource"), request.query_params.get("q", "")
        found = at_most_last(
            lambda n: views.threads(memory, owner, query=query, page=n), number(request, "page")
        )
        return page(request, "threads.html", resource=owner, threads=found, q=query)

    async def thread(request: Request) -> Response:
        owner, thread_id = arg(request, "resource"), arg(request, "thread")
        shown = views.thread(memory, owner, thread_id)
        first = views.messages(memory, owner, thread_id, page=0)
        om = memory.writes.observations
        limits = [("observe at", float(om.config.message_tokens))] if om is not None else []
        chart = views.tokens_chart(views.tokens_per_turn(memory, owner, thread_id), limits)
        return page(
            request, "thread.html", resource=owner, thread=shown, messages=first, chart=chart
        )

    async def more_messages(request: Request) -> Response:
        owner, thread_id = arg(request, "resource"), arg(request, "thread")
        found = at_most_last(
            lambda n: views.messages(memory, owner, thread_id, page=n), number(request, "page")
        )
        return page(request, "messages.html", resource=owner, thread_id=thread_id, messages=found)

    async def working_memory(request: Request) -> Response:
        owner = arg(request, "resource")
        thread_id = request.query_params.get("thread") or None
        if thread_id is not None:
            views.thread(memory, owner, thread_id)
        config = memory.working_memory
        error = saved = None
        draft: str | None = None
        if request.method == "POST":
            if not write:
                return PlainTextResponse("read-only: start the explorer with --write", 403)
            form = await request.form()
            if not genuine_form(request, form.get("csrf_token")):
                return PlainTextResponse("the form's CSRF token is missing or wrong", 403)
            draft = str(form.get("memory", ""))
            try:
                value: Any = json.loads(draft) if config.mode == "schema" else draft
                memory.update_working_memory(value, resource_id=owner, thread_id=thread_id)
                saved = "Saved."
            except (ValueError, MastraMemoryError) as exc:
                error = str(exc)
        current = memory.get_working_memory(resource_id=owner, thread_id=thread_id)
        if draft is None or saved:
            draft = (
                json.dumps(current or {}, indent=2)
                if config.mode == "schema"
                else (current or config.template or "")
            )
        return page(
            request,
            "working_memory.html",
            400 if error else 200,
            resource=owner,
            thread_id=thread_id,
            config=config,
            current=current,
            draft=draft,
            error=error,
            saved=saved,
        )

    async def observations(request: Request) -> Response:
        owner, thread_id = arg(request, "resource"), arg(request, "thread")
        shown = views.thread(memory, owner, thread_id)
        logs = []
        for scope in ("thread", "resource"):
            key = scope_key(scope, resource_id=owner, thread_id=thread_id)
            history = memory.storage.observation_history(key)  # type: ignore[attr-defined]
            logs.append((scope, key, history))
        return page(request, "observations.html", resource=owner, thread=shown, logs=logs)

    async def recall(request: Request) -> Response:
        owner = arg(request, "resource")
        query = request.query_params.get("q", "")
        modes = ["hybrid", "keyword", "vector"] if memory.searcher.vector else ["keyword"]
        mode = request.query_params.get("mode", modes[0])
        if mode not in modes:
            mode = modes[0]
        rows = views.recall(memory, owner, query, mode)
        by_thread = Counter(r.thread_title or r.thread_id for r in rows)
        by_day = Counter(f"{r.created_at:%Y-%m-%d}" for r in rows)
        charts = [views.bars(by_thread.most_common()), views.bars(sorted(by_day.items()))]
        return page(
            request,
            "recall.html",
            resource=owner,
            q=query,
            mode=mode,
            modes=modes,
            rows=rows,
            charts=charts,
        )

    async def context(request: Request) -> Response:
        owner, thread_id = arg(request, "resource"), arg(request, "thread")
        shown = views.thread(memory, owner, thread_id)
        question = request.query_params.get("q", "")
        preview = views.context(memory, owner, thread_id, question)
        return page(
            request, "context.html", resource=owner, thread=shown, q=question, preview=preview
        )

    routes = [
        Route("/", index),
        Route("/r/{resource}", resource),
        Route("/r/{resource}/recall", recall),
        Route("/r/{resource}/working-memory", working_memory, methods=["GET", "POST"]),
        Route("/r/{resource}/t/{thread}", thread),
        Route("/r/{resource}/t/{thread}/messages", more_messages),
        Route("/r/{resource}/t/{thread}/observations", observations),
        Route("/r/{resource}/t/{thread}/context", context),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return page(request, "error.html", 404, message=str(exc))

    async def bad_request(request: Request, exc: Exception) -> Response:
        return page(request, "error.html", 400, message=str(exc))

    app = Starlette(
        routes=routes,
        exception_handlers={ThreadNotFoundError: not_found, ConfigurationError: bad_request},
    )
    app.add_middleware(LocalWebGuard, token=token, hosts=hosts)
    app.add_middleware(RoutedByRawPath)
    return app
