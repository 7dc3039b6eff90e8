"""The local dev server: the AgentCore routes (``POST /invocations``, ``GET /ping``, ``/ws``)
with FastAPI, plus the browser voice chat at ``/``. Same turns, same events, same SSE response
(``agent.sse``), with a keep-alive comment every ``KEEPALIVE_S``; same WebSocket leg
(``agent.ws``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles

from agent.config import AgentConfig
from agent.pipeline import BadRequest
from agent.service import DEFAULT_CONVERSATION, VoiceAgent
from agent.sse import event_stream
from agent.ws import SESSION_HEADER, VoiceSocket, conversation_of, local_turns

WEB = Path(__file__).parent / "web"
TRANSPORTS = ("websocket", "sse")  # what /config offers the browser, preferred first
MAX_BODY_BYTES = 64 * 1024
KEEPALIVE_S = 15


def create_app(config: AgentConfig | None = None) -> FastAPI:
    """The dev server around one ``VoiceAgent``."""
    voice_agent = VoiceAgent(config)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with contextlib.suppress(Exception):  # speech may come up later
            await voice_agent.conversations.preconnect(DEFAULT_CONVERSATION)
        yield
        await voice_agent.aclose()

    app = FastAPI(title="kokoro-voice-agent (dev)", lifespan=lifespan)
    app.state.voice_agent = voice_agent

    @app.post("/invocations")
    async def invocations(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            too_large = BadRequest("body_too_large", f"the body is over {MAX_BODY_BYTES} bytes")
            return JSONResponse(too_large.to_json(), status_code=413)
        try:
            payload = json.loads(body)
            conversation = request.headers.get(SESSION_HEADER) or DEFAULT_CONVERSATION
            turn = await voice_agent.start(payload, conversation)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            not_json = BadRequest("invalid_json", f"the body is not JSON: {exc}")
            return JSONResponse(not_json.to_json(), status_code=400)
        except BadRequest as exc:
            return JSONResponse(exc.to_json(), status_code=400)
        return event_stream(turn.run(), keepalive_s=KEEPALIVE_S)

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await VoiceSocket(websocket, local_turns(voice_agent), conversation_of(websocket)).serve()

    @app.get("/ping")
    async def ping() -> dict[str, str]:
        return {"status": "HealthyBusy" if voice_agent.conversations.busy else "Healthy"}

    @app.get("/config")
    async def client_config(request: Request) -> dict[str, object]:
        """What the voice chat offers: the model and the TTS voices ([] while speech is down).

        Asking also warms up the conversation's TTS connection.
        """
        voices: list[str] = []
        default_voice: str | None = None
        key = request.headers.get(SESSION_HEADER) or DEFAULT_CONVERSATION
        with contextlib.suppress(Exception):
            session = await asyncio.wait_for(voice_agent.conversations.get(key).session(), 3)
            voices, default_voice = list(session.ready.voices), session.ready.default_voice
        model = voice_agent.config.model
        if model.startswith("openai:"):  # do not show the server's address
            model = "openai:" + model.rpartition("#")[2]
        return {
            "model": model,
            "voices": voices,
            "default_voice": default_voice,
            "transports": list(TRANSPORTS),
        }

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(WEB / "index.html")

    app.mount("/web", StaticFiles(directory=WEB), name="web")
    return app
