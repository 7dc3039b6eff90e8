"""The WebSocket route (``/invocations-bidirectional-stream`` and ``/ws``): protocol v1 sessions.

A socket is refused with one ``error`` and a close while the server drains (1012), is not
ready or has ``max_connections`` open (1013), before any ``ready``. An admitted socket holds a
connection slot until it ends, and a session slot only while it has work; its frames go to a
``SynthesisConnection``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from fastapi import WebSocket, WebSocketDisconnect

from tts_protocol import Error, ErrorCode, Ready, encode
from tts_server.connection import SERVICE_RESTART, Ending, SynthesisConnection, frame_payload
from tts_server.engines.base import Engine
from tts_server.service import SynthesisRefused, SynthesisService, service_of

log = logging.getLogger("tts_server")

TRY_AGAIN_LATER = 1013  # WebSocket close code
CLOSE_GRACE_S = 2.0  # how long a closing handshake may wait for a client that reads nothing


async def stream(websocket: WebSocket) -> None:
    """Accept, refuse or admit; an admitted socket is served until it ends."""
    await websocket.accept()
    service = service_of(websocket)
    if service.drain.started:
        service.metrics.error(ErrorCode.SHUTTING_DOWN)
        reason = "the server is shutting down; connect again"
        return await _refuse(websocket, ErrorCode.SHUTTING_DOWN, reason, SERVICE_RESTART)
    try:
        engine = service.ready_engine()
        slot = service.connect()
    except SynthesisRefused as refused:
        service.metrics.error(refused.code)
        return await _refuse(websocket, refused.code, refused.message)
    with slot:
        await serve_connection(websocket, engine, service)


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


async def serve_connection(websocket: WebSocket, engine: Engine, service: SynthesisService) -> None:
    """Run one accepted WebSocket: every frame, text or binary, goes through ``feed``."""
    settings = service.settings
    connection = SynthesisConnection(
        engine,
        websocket.send_text,
        websocket.send_bytes,
        max_queue=settings.max_queue,
        max_text_chars=settings.max_text_chars,
        admission=service.admission,
        metrics=service.metrics,
        send_timeout_s=settings.send_timeout_s,
        idle_timeout_s=settings.idle_timeout_s,
    )
    service.drain.add(connection)
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
        service.drain.discard(connection)
        await connection.abort()
        worker.cancel()
        if worker.done() and not worker.cancelled() and worker.exception():
            log.info("connection ended: %r", worker.exception())
