"""What keeps a local web server of memory to its own user: no other web page, no other host.

A server on 127.0.0.1 is reachable from every page the user's browser opens. `LocalWebGuard`
(an ASGI middleware) does what Jupyter and the MCP specification ask of local servers:

- **Host**: only the loopback names (and the hosts the server was started for) are served, so a
  page on a domain that re-resolves to 127.0.0.1 (DNS rebinding) gets a 400, not memory;
- **Origin**: a state-changing request (POST, PUT, PATCH, DELETE) from a browser must come from
  the server's own origin (``Origin``, else ``Referer``; ``Sec-Fetch-Site: cross-site`` is
  refused outright), so a form on another site cannot post to it (403);
- **CSRF token**: every form of the explorer carries `csrf_token`, checked on each post;
- **access token** (optional, on by default in the CLI, as Jupyter's): every request carries
  it (``?token=`` once, then an HttpOnly ``SameSite=Strict`` cookie, or
  ``Authorization: Bearer``), so other local users of a shared machine cannot read memory.

Examples:
    >>> guard = LocalWebGuard(app=None, token=None, hosts=["memory.internal"])
    >>> sorted(guard.hosts)
    ['127.0.0.1', '::1', 'localhost', 'memory.internal']
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

LOOPBACK = ("127.0.0.1", "localhost", "::1")
COOKIE = "lmm_token"
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


def host_name(value: str) -> str:
    """The host of a ``Host`` header or URL netloc, without its port (``[::1]:80`` -> ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class LocalWebGuard:
    """The checks of the module doc, before any route (see there). `token` None: no access
    token; `hosts`: names served besides the loopback ones (``--host``, ``--allow-host``)."""

    def __init__(self, app: Any, *, token: str | None, hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.token = token
        self.hosts = {*LOOPBACK, *(host_name(h) for h in hosts if h)}
        self.csrf_token = secrets.token_urlsafe(24)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self.refusal(request)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        scope.setdefault("state", {})["csrf_token"] = self.csrf_token
        await self.app(scope, receive, send)

    def refusal(self, request: Request) -> Response | None:
        """The response refusing `request`, or None when it may go on."""
        host = request.headers.get("host", "")
        if host_name(host) not in self.hosts:
            return PlainTextResponse(
                f"host {host!r} is not served here (a page re-resolving its domain to this "
                "machine cannot read memory): open http://127.0.0.1:<port>/ or start with "
                "--allow-host",
                400,
            )
        if self.token is not None and not self.authorized(request):
            return PlainTextResponse("a token is needed: ?token=...", 401)
        if request.method in UNSAFE:
            if request.headers.get("sec-fetch-site") == "cross-site":
                return PlainTextResponse("cross-site requests may not change memory", 403)
            source = request.headers.get("origin") or request.headers.get("referer")
            if source is not None and source != "null":
                parts = urlsplit(source)
                if parts.netloc.lower() != host.lower() or parts.scheme != request.url.scheme:
                    return PlainTextResponse("cross-origin requests may not change memory", 403)
            elif source == "null":
                return PlainTextResponse("requests of an opaque origin may not change memory", 403)
        return None

    def authorized(self, request: Request) -> bool:
        bearer = request.headers.get("authorization", "")
        given = (
            request.query_params.get("token")
            or request.cookies.get(COOKIE)
            or (bearer[7:] if bearer.lower().startswith("bearer ") else "")
        )
        return hmac.compare_digest(given.encode(), str(self.token).encode())


def genuine_form(request: Request, submitted: object) -> bool:
    """Whether a form posted through `LocalWebGuard` carries the server's CSRF token."""
    expected = request.scope.get("state", {}).get("csrf_token")
    return (
        isinstance(submitted, str)
        and isinstance(expected, str)
        and hmac.compare_digest(submitted.encode(), expected.encode())
    )
