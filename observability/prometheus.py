"""What both servers' ``/metrics`` share: the exposition route and HTTP errors counted by code.

Each app owns a ``CollectorRegistry`` (not the process-wide default), so tests that build
many apps never collide and one process can serve two apps.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

METRICS_PATH = "/metrics"
MAX_ERROR_BODY = 4096  # an error body longer than this is counted by its status alone
HEALTH_PATHS = ("/ping",)  # a 503 there is a readiness answer, not an error


def exposition(registry: CollectorRegistry) -> Callable[[Request], Response]:
    """The ``GET /metrics`` endpoint: ``registry`` in Prometheus' text format."""

    def metrics(_: Request) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return metrics


def error_code(status: int, body: bytes) -> str:
    """The code of ``{"error": {"code" (or "type"): ...}}``, else ``http_<status>``."""
    try:
        error = json.loads(body).get("error")
        code = error.get("code") or error.get("type")
    except (ValueError, AttributeError, RecursionError):
        code = None
    return code if isinstance(code, str) and code else f"http_{status}"


class HttpErrors:
    """ASGI middleware: every HTTP response with a status of 400 or more, and every refused
    WebSocket handshake (a denial response, or a close before accepting), counted by its code
    (health checks aside)."""

    def __init__(self, app: ASGIApp, count: Callable[[str], None]) -> None:
        self.app = app
        self.count = count

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in HEALTH_PATHS:
            return await self.app(scope, receive, send)
        prefix = "http" if scope["type"] == "http" else "websocket.http"
        status = 0
        body = bytearray()
        counted = accepted = False

        async def sending(message: Message) -> None:
            nonlocal status, counted, accepted
            kind = message["type"]
            if kind == f"{prefix}.response.start":
                status = message["status"]
            elif kind == f"{prefix}.response.body" and status >= 400 and not counted:
                if len(body) <= MAX_ERROR_BODY:
                    body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    counted = True
                    self.count(error_code(status, bytes(body[: MAX_ERROR_BODY + 1])))
            elif kind == "websocket.accept":
                accepted = True
            elif kind == "websocket.close" and not accepted and not counted:
                counted = True  # a handshake refused by closing: its reason names the code
                self.count(message.get("reason") or "websocket_refused")
            await send(message)

        await self.app(scope, receive, sending)
