"""The local dev server: the AgentCore routes (``POST /invocations``, ``GET /ping``, ``/ws``)
with FastAPI, plus the browser voice chat at ``/``. Same turns, same events, same SSE response
(``agent.sse``), with a keep-alive comment every ``KEEPALIVE_S``; same WebSocket leg
(``agent.ws``).

Only pages of the server's own origin, or of those ``AgentConfig.allow_origins`` names, may use
it (``agent.origins``); files are served from ``agent/web/`` only, beside one generated module,
``/web/browser-leg.js``: the browser leg's constants (``agent.browser_leg``) for the page.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from fastapi import FastAPI, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware

from agent.browser_leg import SESSION_HEADER, page_module
from agent.config import AgentConfig
from agent.core.service import DEFAULT_CONVERSATION, VoiceAgent
from agent.doors.agui import agui_invocation
from agent.doors.origins import OriginGuard, check_host, check_origin
from agent.doors.protocols import Protocol, protocol_from_env
from agent.doors.wiring import FrontDoor
from agent.leg.agui_input import MAX_RUN_INPUT_BYTES
from agent.leg.hooks import conversation_of
from agent.leg.sse import event_stream
from agent.listening.recognizer import Recognizer
from agent.requests import BadRequest, decode_json, http_error, read_body, refusal
from observability.prometheus import METRICS_PATH, HttpErrors, exposition
from observability.unknown_socket import answer_unknown_sockets

WEB = Path(__file__).parents[1] / "web"  # agent/web/
LEG_MODULE = "/web/browser-leg.js"
TRANSPORTS = ("websocket", "sse")  # what /config offers the browser, preferred first
KEEPALIVE_S = 15
PAGE = "index.html"  # the voice chat, on our protocol
AGUI_PAGE = "agui.html"  # a small AG-UI client that plays the voice (docs/agui.md)


async def invalid_request(_request: Request, exc: Exception) -> Response:
    """FastAPI's validation error (422 ``{"detail": [...]}``) as the typed 400 of a bad request."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
    return JSONResponse(BadRequest("invalid_request", where).to_json(), status_code=400)


def create_app(
    config: AgentConfig | None = None,
    recognizer: Recognizer | None = None,
    protocol: Protocol | None = None,
) -> FastAPI:
    """The dev server around one ``VoiceAgent``; ``/ws`` listens with ``recognizer``
    (default: the process's shared Whisper, ``agent.listening.whisper``). ``protocol``: what
    its turn routes speak (default: ``VOICE_AGENT_PROTOCOL``, else ours; ``agui``: AG-UI, with
    the AG-UI page at ``/``)."""
    protocol = protocol or protocol_from_env()
    door = FrontDoor(config, recognizer)
    app = FastAPI(
        title="kokoro-voice-agent (dev)",
        lifespan=_lifespan(door.voice_agent),
        exception_handlers={HTTPException: http_error, RequestValidationError: invalid_request},
    )
    app.state.voice_agent = door.voice_agent
    app.state.protocol = protocol
    app.add_route(METRICS_PATH, exposition(door.metrics.registry), include_in_schema=False)
    if protocol == "agui":
        _add_agui_routes(app, door)
    else:
        _add_turn_routes(app, door)
    _add_status_routes(app, door)
    _add_page_routes(app, AGUI_PAGE if protocol == "agui" else PAGE)
    _add_guards(app, door)
    return app


def _lifespan(voice_agent: VoiceAgent) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Open a speech session at start, close the agent at exit."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        with contextlib.suppress(Exception):  # speech may come up later
            await voice_agent.conversations.preconnect()
        yield
        await voice_agent.aclose()

    return lifespan


def _add_turn_routes(app: FastAPI, door: FrontDoor) -> None:
    """The turns: ``POST /invocations`` (SSE) and ``/ws``; a socket on any other path, 404."""
    voice_agent = door.voice_agent

    @app.post("/invocations")
    async def invocations(request: Request) -> Response:
        try:
            payload = decode_json(await read_body(request), "the body")
            conversation = request.headers.get(SESSION_HEADER) or DEFAULT_CONVERSATION
            events = await door.stream(payload, conversation)
        except BadRequest as exc:
            return refusal(exc)
        return event_stream(events, keepalive_s=KEEPALIVE_S)

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await door.serve_socket(
            websocket,
            door.local_turns(),
            conversation_of(websocket),
            voice_agent.check_voice,
            voice_agent.withdraw,
        )

    answer_unknown_sockets(  # 404, not the 403 of a handshake closed unaccepted
        app.router,
        lambda path: BadRequest("not_found", f"no WebSocket at {path}; use /ws").to_json(),
    )


def _add_agui_routes(app: FastAPI, door: FrontDoor) -> None:
    """The turns in AG-UI: ``POST /invocations`` (a ``RunAgentInput``, SSE) and ``/ws``."""

    @app.post("/invocations")
    async def invocations(request: Request) -> Response:
        try:
            payload = decode_json(await read_body(request, MAX_RUN_INPUT_BYTES), "the body")
        except BadRequest as exc:
            return refusal(exc)
        return await agui_invocation(door, payload, keepalive_s=KEEPALIVE_S)

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await door.serve_agui_socket(websocket, door.local_turns())

    answer_unknown_sockets(
        app.router,
        lambda path: BadRequest("not_found", f"no WebSocket at {path}; use /ws").to_json(),
    )


def _add_status_routes(app: FastAPI, door: FrontDoor) -> None:
    """``GET /ping`` (busy while a turn runs) and ``GET /config`` (what the voice chat offers)."""
    voice_agent = door.voice_agent

    @app.get("/ping")
    async def ping() -> dict[str, str]:
        return {"status": "HealthyBusy" if door.busy else "Healthy"}

    @app.get("/config")
    async def client_config() -> dict[str, object]:
        """What the voice chat offers: the model and the TTS voices ([] while speech is down),
        from the latest ``ready`` seen (the first ask opens a warm session to learn them)."""
        voices: list[str] = []
        default_voice: str | None = None
        with contextlib.suppress(Exception):
            ready = await asyncio.wait_for(voice_agent.conversations.pool.ready(), 3)
            voices, default_voice = list(ready.voices), ready.default_voice
        return {
            "model": _shown_model(voice_agent.factory.name),
            "voices": voices,
            "default_voice": default_voice,
            "transports": list(TRANSPORTS),
        }


def _shown_model(name: str) -> str:
    """The model spec (or the agent factory's name) as the page sees it: an ``openai:`` spec
    without the server's address."""
    if name.startswith("openai:"):
        return "openai:" + name.rpartition("#")[2]
    return name


def _add_page_routes(app: FastAPI, page: str) -> None:
    """The voice chat: ``/`` (``page``), the generated browser-leg module and ``agent/web/``'s
    files."""

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(WEB / page)

    @app.get(LEG_MODULE, include_in_schema=False)  # before the mount, which would answer 404
    async def leg_module() -> Response:
        return Response(page_module(), media_type="text/javascript")

    app.mount("/web", StaticFiles(directory=WEB), name="web")


def _add_guards(app: FastAPI, door: FrontDoor) -> None:
    """Who may use the server: CORS for the allowed origins, the Host/Origin guard, and the
    refusals counted (the last added runs first)."""
    config = door.voice_agent.config
    allow = [check_origin(origin) for origin in config.allow_origins]
    if allow:  # the headers an allowed page of another origin needs to read the answers
        app.add_middleware(
            CORSMiddleware,
            allow_origins=allow,
            allow_methods=["GET", "POST"],
            allow_headers=["Content-Type", SESSION_HEADER],
        )
    hosts = [check_host(host) for host in config.allow_hosts]  # fails at start
    app.add_middleware(OriginGuard, allow=allow, hosts=hosts)  # after CORS: runs before it
    app.add_middleware(HttpErrors, count=door.metrics.error)  # outside it: counts its refusals too
