"""Which browser origins may use the dev server: its own, plus an allow-list.

A browser names the page's origin in the ``Origin`` header of a cross-origin request and of
every WebSocket handshake, and a page may send a POST or open a WebSocket to any site: without
this check, any page open in the browser could start turns on a local agent (and its LLM bill)
or read a conversation over ``/ws`` (cross-site WebSocket hijacking). A request or handshake
whose ``Origin`` is neither the server's own nor allowed is refused before any route runs: 403
with the typed error ``origin_not_allowed``; no socket is opened. A client that sends no
``Origin`` (curl, ``voice-agent chat``, a benchmark) is not a page and is let in. The CORS
headers an allowed foreign origin needs come from Starlette's ``CORSMiddleware``.

The server's own origin is read from the ``Host`` header, so a page on a name rebound to
127.0.0.1 (DNS rebinding) would pass as "its own": requests must also name an allowed host
(loopback names by default, ``--allow-host`` for more), or get 400 ``host_not_allowed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from agent.config import LOOPBACK_HOSTS
from agent.requests import BadRequest

ANY = "*"
OPAQUE = "null"  # the origin of a sandboxed frame or a file:// page
CLOSE_POLICY = 1008  # a refused handshake where the server cannot answer it with a 403


def check_origin(entry: str) -> str:
    """An allow-list entry as a browser writes it: ``scheme://host[:port]``, ``*`` or ``null``.

    Raises ``ValueError`` for anything else (a path, a query, no scheme).
    """
    entry = entry.strip().rstrip("/").lower()
    if entry in (ANY, OPAQUE):
        return entry
    parts = urlsplit(entry)
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # not a number, or out of range
        port_ok = False
    named = parts.scheme and parts.hostname and port_ok and not parts.username
    if not named or parts.path or parts.query or parts.fragment:
        raise ValueError(f"an allowed origin is scheme://host[:port], '*' or 'null': {entry!r}")
    return f"{parts.scheme}://{parts.netloc}"


def check_host(entry: str) -> str:
    """A host name or address (or '*') the server answers to, lower-cased; raises
    ``ValueError``."""
    entry = entry.strip()
    if entry == ANY:
        return ANY
    bare_ipv6 = entry.count(":") > 1 and not entry.startswith("[")
    name = host_name(f"[{entry}]" if bare_ipv6 else entry)
    if not name or " " in name:
        raise ValueError(f"an allowed host is a name or an address, or '*': {entry!r}")
    return name


def host_name(host: str) -> str | None:
    """The name in a ``Host`` header (``[::1]:8000`` -> ``::1``), or None when malformed."""
    try:
        parts = urlsplit(f"//{host}")
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    if parts.username or parts.password or parts.path or parts.query:
        return None
    return parts.hostname or None


def own_origin(scope: Scope) -> str | None:
    """The origin of a page served by this request's server, as its ``Host`` header names it."""
    host = Headers(scope=scope).get("host")
    scheme = {"ws": "http", "wss": "https"}.get(scope["scheme"], scope["scheme"])
    return f"{scheme}://{host}".lower() if host else None


class OriginGuard:
    """ASGI middleware: refuse HTTP requests and WebSocket handshakes that name a host the
    server does not answer to, or come from an unexpected origin."""

    def __init__(
        self, app: ASGIApp, allow: Iterable[str] = (), hosts: Iterable[str] = LOOPBACK_HOSTS
    ) -> None:
        self.app = app
        self.allow = frozenset(check_origin(entry) for entry in allow)
        self.hosts = frozenset(check_host(entry) for entry in hosts)

    def allowed(self, origin: str, scope: Scope) -> bool:
        """Whether a page of ``origin`` may use this server."""
        origin = origin.lower()
        return ANY in self.allow or origin in self.allow or origin == own_origin(scope)

    def refusal(self, scope: Scope) -> tuple[BadRequest, int] | None:
        """Why this request or handshake is refused, with its HTTP status; None: let it in."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if ANY not in self.hosts and host_name(host) not in self.hosts:
            why = f"host {host!r} is not a name of this server (add it with --allow-host)"
            return BadRequest("host_not_allowed", why), 400
        origin = headers.get("origin")
        if origin is None or self.allowed(origin, scope):
            return None
        return BadRequest("origin_not_allowed", f"origin {origin!r} may not use this server"), 403

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refused = self.refusal(scope) if scope["type"] != "lifespan" else None
        if refused is None:
            await self.app(scope, receive, send)
            return
        error, status = refused
        response = JSONResponse(error.to_json(), status_code=status)
        if scope["type"] != "websocket":
            await response(scope, receive, send)
        elif "websocket.http.response" in scope.get("extensions", {}):
            await WebSocket(scope, receive, send).send_denial_response(response)
        else:  # closing before accepting refuses the handshake (a 403 on uvicorn)
            await WebSocket(scope, receive, send).close(CLOSE_POLICY, error.code)
