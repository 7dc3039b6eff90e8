"""A WebSocket handshake on a path no route serves: HTTP 404, as for any other request.

Starlette's router closes such a handshake before accepting it, and uvicorn answers a close
before the accept with 403 Forbidden: the client is sent looking for a permission problem
instead of a wrong path. Both servers answer it with 404 and their typed error body instead,
through the ASGI WebSocket denial-response extension (uvicorn has it; without it, the close).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import JSONResponse
from starlette.routing import Router
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

DENIAL_EXTENSION = "websocket.http.response"


def answer_unknown_sockets(router: Router, body: Callable[[str], dict[str, Any]]) -> None:
    """Make ``router`` answer a handshake on an unknown path with 404 and ``body(path)``."""
    fallback = router.default

    async def default(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and DENIAL_EXTENSION in scope.get("extensions", {}):
            response = JSONResponse(body(scope["path"]), status_code=404)
            await WebSocket(scope, receive, send).send_denial_response(response)
            return
        await fallback(scope, receive, send)

    router.default = default
