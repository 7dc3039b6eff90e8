"""The SageMaker-compatible FastAPI app: ``/ping``, ``/invocations``, the WebSocket stream, the
OpenAI routes and ``/metrics``, wired around one ``SynthesisService`` (``app.state.service``).

The engine loads in the background after start-up; ``/ping`` answers 503 until a warm-up
synthesis has gone through the WebSocket decode path, and forever if loading failed. The
service's ``Admission`` limits open sessions and queued segments server-wide; ``/ping``
reports its counts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from observability.prometheus import METRICS_PATH, HttpErrors, exposition
from observability.unknown_socket import answer_unknown_sockets
from tts_protocol import PING_PATH, WS_PATHS
from tts_server import http_errors, invocations, stream
from tts_server.engines import load_engine
from tts_server.health import State
from tts_server.openai_api import routes as openai_routes
from tts_server.service import EngineLoader, SynthesisService, service_of
from tts_server.settings import Settings


async def ping(request: Request) -> JSONResponse:
    """Readiness, 200 once Healthy (503 before, after a failure and while draining)."""
    service = service_of(request)
    readiness = service.readiness
    healthy = readiness.state is State.HEALTHY
    body: dict[str, Any] = {
        "status": readiness.state.value,
        **readiness.details,
        **service.admission.snapshot(),
    }
    if not healthy:
        body["reason"] = readiness.reason
    return JSONResponse(body, status_code=200 if healthy else 503)


def _no_socket(path: str) -> dict[str, Any]:
    message = f"there is no WebSocket at {path}; the stream is at {' or '.join(WS_PATHS)}"
    return {"error": {"code": "not_found", "message": message}}


def create_app(settings: Settings | None = None, loader: EngineLoader = load_engine) -> FastAPI:
    """Build the app; the engine is loaded by ``loader`` once the server starts."""
    service = SynthesisService(settings or Settings())

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(service.load(loader))
        yield
        task.cancel()

    app = FastAPI(title="Kokoro TTS server", lifespan=lifespan)
    app.state.service = service
    http_errors.install(app)  # {"error": {...}} on every status, never FastAPI's {"detail"}
    app.add_route(METRICS_PATH, exposition(service.metrics.registry), include_in_schema=False)
    app.add_middleware(HttpErrors, count=service.metrics.error)  # every HTTP error, by its code
    app.add_api_route(PING_PATH, ping, methods=["GET"])
    app.include_router(invocations.create_router())
    for path in WS_PATHS:
        app.add_api_websocket_route(path, stream.stream)
    answer_unknown_sockets(app.router, _no_socket)  # 404, not uvicorn's 403
    app.include_router(openai_routes.create_router())  # /v1/audio/speech, voices, models
    return app
