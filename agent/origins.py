"""Which browser origins may use the dev server: its own, plus an allow-list.

A browser names the page's origin in the ``Origin`` header of a cross-origin request and of
every WebSocket handshake, and a page may send a POST or open a WebSocket to any site: without
this check, any page open in the browser could start turns on a local agent (and its LLM bill)
or read a conversation over ``/ws`` (cross-site WebSocket hijacking). A request or handshake
whose ``Origin`` is neither the server's own nor allowed is refused before any route runs: 403
with the typed error ``origin_not_allowed``; no socket is opened. A client that sends no
``Origin`` (curl, ``voice-agent chat``, a benchmark) is not a page and is let in. The CORS
headers an allowed foreign origin needs come from Starlette's ``CORSMiddleware``.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from agent.pipeline import BadRequest

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


def own_origin(scope: Scope) -> str | None:
    """The origin of a page served by this request's server, as its ``Host`` header names it."""
    host = Headers(scope=scope).get("host")
    scheme = {"ws": "http", "wss": "https"}.get(scope["scheme"], scope["scheme"])
    return f"{scheme}://{host}".lower() if host else None


class OriginGuard:
    """ASGI middleware: refuse HTTP requests and WebSocket handshakes from unexpected origins."""

    def __init__(self, app: ASGIApp, allow: Iterable[str] = ()) -> None:
        self.app = app
        self.allow = frozenset(check_origin(entry) for entry in allow)

    def allowed(self, origin: str, scope: Scope) -> bool:
        """Whether a page of ``origin`` may use this server."""
        origin = origin.lower()
        return ANY in self.allow or origin in self.allow or origin == own_origin(scope)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = Headers(scope=scope).get("origin") if scope["type"] != "lifespan" else None
        if origin is None or self.allowed(origin, scope):
            await self.app(scope, receive, send)
            return
        refused = BadRequest("origin_not_allowed", f"origin {origin!r} may not use this server")
        response = JSONResponse(refused.to_json(), status_code=403)
        if scope["type"] != "websocket":
            await response(scope, receive, send)
        elif "websocket.http.response" in scope.get("extensions", {}):
            await WebSocket(scope, receive, send).send_denial_response(response)
        else:  # closing before accepting refuses the handshake (a 403 on uvicorn)
            await WebSocket(scope, receive, send).close(CLOSE_POLICY, refused.code)
