"""The SageMaker-compatible FastAPI app: ``/ping``, ``/invocations`` and the WebSocket stream.

The engine loads in the background after start-up; ``/ping`` answers 503 until a warm-up
synthesis has gone through the WebSocket decode path, and forever if loading failed. The app's
``Admission`` (``app.state.admission``) limits open sessions and queued segments server-wide;
``/ping`` reports its counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse, Response

from observability.prometheus import METRICS_PATH, HttpErrors, exposition
from observability.request_body import read_bounded
from tts_protocol import (
    BYTES_PER_SAMPLE,
    SAMPLE_RATE,
    WS_PATHS,
    Error,
    ErrorCode,
    ProtocolError,
    Ready,
    Speak,
    encode,
    parse_object,
    samples_ms,
    speak_fields,
    wav_bytes,
)
from tts_server.admission import Admission
from tts_server.connection import SERVICE_RESTART, Ending, SynthesisConnection, frame_payload
from tts_server.drain import Drain
from tts_server.engines import load_engine
from tts_server.engines.base import Engine, UnknownVoice, to_pcm16
from tts_server.health import Readiness, State, warm_up
from tts_server.metrics import TTSMetrics
from tts_server.openai_api import create_router
from tts_server.settings import Settings

log = logging.getLogger("tts_server")

EngineLoader = Callable[[Settings], Engine]
MAX_BODY_BYTES = 64 * 1024
TRY_AGAIN_LATER = 1013  # WebSocket close code
CLOSE_GRACE_S = 2.0  # how long a closing handshake may wait for a client that reads nothing


def _error(
    status: int, code: ErrorCode, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


async def _load(app: FastAPI, settings: Settings, loader: EngineLoader) -> None:
    readiness: Readiness = app.state.readiness
    try:
        engine = await asyncio.to_thread(loader, settings)
        app.state.engine = engine
        readiness.reason = "warming up"
        readiness.details = await warm_up(engine)
    except Exception as exc:  # any load or warm-up failure must keep /ping at 503
        log.exception("engine failed to become ready")
        readiness.fail(f"{type(exc).__name__}: {exc}")
        return
    readiness.state, readiness.reason = State.HEALTHY, "ok"
    log.info("engine %s ready: %s", type(engine).__name__, readiness.details)


def create_app(settings: Settings | None = None, loader: EngineLoader = load_engine) -> FastAPI:
    """Build the app; the engine is loaded by ``loader`` once the server starts."""
    settings = settings or Settings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(_load(app, settings, loader))
        yield
        task.cancel()

    app = FastAPI(title="Kokoro TTS server", lifespan=lifespan)
    app.state.readiness = Readiness()
    app.state.engine = None
    admission = Admission.for_server(
        settings.engine, settings.device, settings.max_sessions, settings.max_queued
    )
    app.state.admission = admission
    drain = app.state.drain = Drain(app.state.readiness, admission)  # on SIGTERM (cli.py)

    def ready_engine() -> Engine | None:
        engine: Engine | None = app.state.engine
        return engine if app.state.readiness.state is State.HEALTHY else None

    metrics = app.state.metrics = TTSMetrics(admission, ready_engine)
    app.add_route(METRICS_PATH, exposition(metrics.registry), include_in_schema=False)
    app.add_middleware(HttpErrors, count=metrics.error)  # every HTTP error, by its code

    @app.get("/ping")
    async def ping() -> JSONResponse:
        readiness: Readiness = app.state.readiness
        body: dict[str, Any] = {
            "status": readiness.state.value,
            **readiness.details,
            **admission.snapshot(),
        }
        if readiness.state is not State.HEALTHY:
            body["reason"] = readiness.reason
        return JSONResponse(body, status_code=200 if readiness.state is State.HEALTHY else 503)

    @app.post("/invocations")
    async def invocations(request: Request) -> Response:
        engine = ready_engine()
        if engine is None:
            code = ErrorCode.SHUTTING_DOWN if drain.started else ErrorCode.INTERNAL
            return _error(503, code, f"not ready: {app.state.readiness.reason}")
        body = await read_bounded(request, MAX_BODY_BYTES)
        if body is None:
            return _error(413, ErrorCode.BODY_TOO_LARGE, f"body exceeds {MAX_BODY_BYTES} bytes")
        try:
            obj = parse_object(body)
            speak = Speak(*speak_fields({**obj, "id": "invocation"}, settings.max_text_chars))
            fmt = obj.get("format", "wav")
            if fmt not in ("wav", "pcm"):
                raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'format' must be 'wav' or 'pcm'")
            voice = engine.resolve_voice(speak.voice)
        except ProtocolError as exc:
            return _error(400, exc.code, exc.message)
        except UnknownVoice as exc:
            return _error(400, ErrorCode.UNKNOWN_VOICE, str(exc))
        if not admission.open_session():  # a request holds a session slot while it synthesizes
            message = f"{admission.max_sessions} sessions are open; try again later"
            return _error(429, ErrorCode.BUSY, message, {"Retry-After": "1"})
        started = time.perf_counter()
        first_audio_ms: float | None = None
        pcm = bytearray()
        try:
            async for chunk in engine.synthesize_resolved(speak.text, voice, speak.speed or 1.0):
                if first_audio_ms is None:
                    first_audio_ms = (time.perf_counter() - started) * 1000
                pcm += to_pcm16(chunk)
        except Exception as exc:
            log.exception("batch synthesis failed")
            return _error(500, ErrorCode.SYNTHESIS_FAILED, f"{exc!r}")
        finally:
            admission.close_session()
        metrics.synthesized(
            engine.name,
            waited_s=None,
            first_audio_s=first_audio_ms and first_audio_ms / 1000,
            synthesis_s=time.perf_counter() - started,
            samples=len(pcm) // BYTES_PER_SAMPLE,
        )
        headers = {
            "X-Sample-Rate": str(SAMPLE_RATE),
            "X-Synthesis-Ms": f"{(time.perf_counter() - started) * 1000:.1f}",
            "X-First-Audio-Ms": f"{first_audio_ms or 0.0:.1f}",
            "X-Audio-Ms": f"{samples_ms(len(pcm) // BYTES_PER_SAMPLE)}",
        }
        if fmt == "pcm":
            return Response(bytes(pcm), media_type="audio/L16", headers=headers)
        return Response(wav_bytes(bytes(pcm)), media_type="audio/wav", headers=headers)

    async def stream(websocket: WebSocket) -> None:
        await websocket.accept()
        if drain.started:
            metrics.error(ErrorCode.SHUTTING_DOWN)
            reason = "the server is shutting down; connect again"
            return await _refuse(websocket, ErrorCode.SHUTTING_DOWN, reason, SERVICE_RESTART)
        engine = ready_engine()
        if engine is None:
            reason = f"not ready: {app.state.readiness.reason}"
            metrics.error(ErrorCode.INTERNAL)
            return await _refuse(websocket, ErrorCode.INTERNAL, reason)
        if not admission.open_session():
            reason = f"{admission.max_sessions} sessions are open; try again later"
            metrics.error(ErrorCode.BUSY)
            return await _refuse(websocket, ErrorCode.BUSY, reason)
        try:
            await serve_connection(websocket, engine, settings, admission, metrics, drain)
        finally:
            admission.close_session()

    for path in WS_PATHS:
        app.add_api_websocket_route(path, stream)
    app.include_router(create_router())  # OpenAI's /v1/audio/speech, voices, models
    return app


async def _refuse(
    websocket: WebSocket, code: ErrorCode, reason: str, close_code: int = TRY_AGAIN_LATER
) -> None:
    """Answer an accepted WebSocket with one ``error`` (no ``ready``), then close (1013)."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):  # the peer may be gone already
        await websocket.send_text(encode(Error(id=None, code=code, message=reason)))
        await websocket.close(close_code, reason[:120])


async def _close(websocket: WebSocket, ending: Ending) -> None:
    """Close with the server's reason; a client that reads nothing gets ``CLOSE_GRACE_S``."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, TimeoutError):  # peer gone
        async with asyncio.timeout(CLOSE_GRACE_S):
            await websocket.close(ending.code, ending.reason[:120])


async def serve_connection(
    websocket: WebSocket,
    engine: Engine,
    settings: Settings,
    admission: Admission,
    metrics: TTSMetrics | None = None,
    drain: Drain | None = None,
) -> None:
    """Run one accepted WebSocket: every frame, text or binary, goes through ``feed``."""
    connection = SynthesisConnection(
        engine,
        websocket.send_text,
        websocket.send_bytes,
        max_queue=settings.max_queue,
        max_text_chars=settings.max_text_chars,
        admission=admission,
        metrics=metrics,
        send_timeout_s=settings.send_timeout_s,
        idle_timeout_s=settings.idle_timeout_s,
    )
    if drain is not None:
        drain.add(connection)
    await connection.send(Ready(voices=engine.voices, default_voice=engine.default_voice))
    worker = asyncio.create_task(connection.run(), name=f"synthesis-{uuid.uuid4().hex[:8]}")
    try:
        while not connection.closing:
            receive = asyncio.ensure_future(websocket.receive())
            done, _ = await asyncio.wait({receive, worker}, return_when=asyncio.FIRST_COMPLETED)
            if receive not in done:  # the worker died (the peer is gone): stop reading
                receive.cancel()
                break
            message = receive.result()
            if message["type"] == "websocket.disconnect":
                return
            await connection.feed(frame_payload(message))
        if not worker.done():  # 'close' received: finish the queue, then close normally
            await worker
        if connection.ending is not None:  # closed, drained, idle or stuck: say why
            await _close(websocket, connection.ending)
    finally:
        if drain is not None:
            drain.discard(connection)
        await connection.abort()
        worker.cancel()
        if worker.done() and not worker.cancelled() and worker.exception():
            log.info("connection ended: %r", worker.exception())
