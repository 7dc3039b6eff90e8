"""The agent on Amazon Bedrock AgentCore Runtime: ``POST /invocations`` streams SSE events.

The SDK runs every async entrypoint on its own worker event loop (a thread of its own, so a
busy handler never delays ``/ping``). A TTS session is bound to the loop it was opened on, so
sessions are opened, used and closed on that loop: the default conversation's session is
pre-connected there at start-up and closed there at shutdown. Reaching the loop outside a
request takes the SDK's private ``_ensure_worker_loop()``; ``sdk_worker_loop`` is the one
place that calls it, and tests/agent/test_app.py fails if the SDK renames it or stops running
async entrypoints on it. ``/ping`` reports ``HealthyBusy`` while a turn streams.

The entrypoint returns the same sse-starlette response as the dev server (``agent.sse``),
not the turn's generator: the SDK would write its own SSE encoding (and its own untyped error
event), and it bridges a generator through a thread-pool thread that learns of a client that
went away only when that generator is closed, which Starlette leaves to the garbage collector.
Here the response, served on the main loop, listens for ``http.disconnect`` and cancels its
body, ``relay_from_loop``, whose clean-up cancels the turn on the worker loop at once.

``CheckedBody`` reads and decodes the body by the dev server's rules before the SDK does, so both
doors refuse the same requests with the same typed errors (docs/agent.md, "Limits").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp, PingStatus
from bedrock_agentcore.runtime.context import RequestContext
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from agent.config import AgentConfig
from agent.core.service import DEFAULT_CONVERSATION, VoiceAgent
from agent.doors.agui import agui_invocation
from agent.doors.protocols import Protocol, ProtocolSettingError, protocol_from_env
from agent.doors.wiring import FrontDoor, Relay
from agent.events import Event
from agent.leg.agui_input import MAX_RUN_INPUT_BYTES
from agent.leg.hooks import (
    TurnEvents,
    TurnStarter,
    TurnWithdrawal,
    VoiceCheck,
    conversation_of,
)
from agent.leg.sse import event_stream
from agent.listening.recognizer import Recognizer
from agent.requests import (
    MAX_BODY_BYTES,
    BadRequest,
    PlaybackReport,
    TurnRequest,
    decode_json,
    http_error,
    read_body,
    refusal,
)
from observability import logs, tracing
from observability.prometheus import METRICS_PATH, HttpErrors, exposition
from tts_protocol import VoiceMix

log = logging.getLogger("agent")


def sdk_worker_loop(app: BedrockAgentCoreApp) -> asyncio.AbstractEventLoop:
    """The SDK's worker loop, which runs every async entrypoint (private SDK API)."""
    ensure = getattr(app, "_ensure_worker_loop", None)
    if ensure is None:
        raise RuntimeError(
            "bedrock_agentcore no longer has BedrockAgentCoreApp._ensure_worker_loop: "
            "TTS sessions cannot be opened on the loop that runs the entrypoint (docs/agent.md)"
        )
    loop: asyncio.AbstractEventLoop = ensure()
    return loop


async def relay_from_loop(
    events: AsyncGenerator[Event, None], loop: asyncio.AbstractEventLoop
) -> AsyncGenerator[Event, None]:
    """Iterate ``events``, which runs on ``loop``, from the running loop.

    Closing or cancelling this iterator cancels ``events`` on ``loop`` at once.
    """
    here = asyncio.get_running_loop()
    received: asyncio.Queue[Event | None] = asyncio.Queue()

    async def pump() -> None:  # on `loop`, where the turn and its session live
        try:
            async for event in events:
                here.call_soon_threadsafe(received.put_nowait, event)
        finally:
            here.call_soon_threadsafe(received.put_nowait, None)

    pumping = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(pump(), loop))
    try:
        while (event := await received.get()) is not None:
            yield event
        await pumping  # re-raise what ended it, if anything did
    finally:
        pumping.cancel()  # cancels the turn on its loop; a no-op once it has ended


class CheckedBody:
    """ASGI middleware: ``POST /invocations``' body within ``limit`` bytes (``MAX_BODY_BYTES``;
    an AG-UI run's, ``MAX_RUN_INPUT_BYTES``) and JSON, or refused.

    The SDK reads any body whole, answers bad JSON with its own untyped error and lets a
    ``RecursionError`` out as a 500. A body that passes is handed on to the SDK as it came.
    """

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["method"], scope["path"]) != ("POST", "/invocations"):
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(Request(scope, receive), self.limit)
            decode_json(body, "the body")
        except BadRequest as exc:
            await refusal(exc)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:  # the body once, then the client's own messages
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def worker_turns(voice_agent: VoiceAgent, worker: asyncio.AbstractEventLoop) -> TurnStarter:
    """Turns started and run on ``worker``, their events relayed to the running loop."""

    async def start(request: TurnRequest, conversation: str) -> TurnEvents:
        starting = voice_agent.start(request, conversation)
        turn = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(starting, worker))
        return relay_from_loop(turn.run(), worker)

    return start


def worker_relay() -> Relay:
    """A turn's events relayed from the running loop, the SDK's worker loop where the entrypoint
    and its turns run, to the loop that streams the response."""
    worker = asyncio.get_running_loop()
    return lambda events: relay_from_loop(events, worker)


def worker_withdrawal(voice_agent: VoiceAgent, worker: asyncio.AbstractEventLoop) -> TurnWithdrawal:
    """``VoiceAgent.withdraw`` on ``worker``, where the conversations' turns run."""

    async def withdraw(turn_id: str, conversation: str, heard: PlaybackReport | None) -> str | None:
        withdrawing = voice_agent.withdraw(turn_id, conversation, heard)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(withdrawing, worker))

    return withdraw


def worker_voice_check(voice_agent: VoiceAgent, worker: asyncio.AbstractEventLoop) -> VoiceCheck:
    """``VoiceAgent.check_voice`` on ``worker``, where the TTS sessions live."""

    async def check(voice: VoiceMix) -> VoiceMix:
        checking = voice_agent.check_voice(voice)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(checking, worker))

    return check


def create_app(
    config: AgentConfig | None = None,
    recognizer: Recognizer | None = None,
    protocol: Protocol | None = None,
) -> BedrockAgentCoreApp:
    """The AgentCore app around one ``VoiceAgent``; ``/ws`` listens with ``recognizer``
    (default: the process's shared Whisper, ``agent.listening.whisper``). ``protocol``: what
    ``/invocations`` and ``/ws`` speak (default: ``VOICE_AGENT_PROTOCOL``, else ours)."""
    protocol = protocol or protocol_from_env()
    door = FrontDoor(config, recognizer)
    voice_agent = door.voice_agent

    async def preconnect() -> None:
        try:
            await voice_agent.conversations.preconnect()
        except Exception as exc:  # speech may come up later; turns reconnect on demand
            log.warning("TTS pre-connect failed: %s", exc)

    @contextlib.asynccontextmanager
    async def lifespan(app: BedrockAgentCoreApp) -> AsyncIterator[None]:
        worker = sdk_worker_loop(app)  # sessions must live where the entrypoint runs
        asyncio.run_coroutine_threadsafe(preconnect(), worker)
        yield
        closing = asyncio.run_coroutine_threadsafe(voice_agent.aclose(), worker)
        await asyncio.wrap_future(closing)

    limit = MAX_RUN_INPUT_BYTES if protocol == "agui" else MAX_BODY_BYTES
    app = BedrockAgentCoreApp(lifespan=lifespan, middleware=[Middleware(CheckedBody, limit=limit)])
    app.add_exception_handler(HTTPException, http_error)  # 404, 405: the typed error shape
    for handler in list(app.logger.handlers):  # the SDK's own, besides the root's: lines twice
        app.logger.removeHandler(handler)
    app.logger.setLevel(logging.NOTSET)  # the root's level and format (observability.logs)
    app.add_route(METRICS_PATH, exposition(door.metrics.registry), methods=["GET"])
    app.add_middleware(HttpErrors, count=door.metrics.error)  # outermost: every refusal counted

    (_add_agui_routes if protocol == "agui" else _add_turn_routes)(app, door)

    @app.ping
    def ping() -> PingStatus:
        return PingStatus.HEALTHY_BUSY if door.busy else PingStatus.HEALTHY

    app.state.voice_agent = voice_agent
    app.state.protocol = protocol
    return app


def _add_turn_routes(app: BedrockAgentCoreApp, door: FrontDoor) -> None:
    """Our protocol: ``POST /invocations`` (SSE) and ``/ws``, turns on the SDK's worker loop."""
    voice_agent = door.voice_agent

    @app.entrypoint
    async def invoke(payload: dict[str, Any], context: RequestContext) -> Response:
        try:
            conversation = context.session_id or DEFAULT_CONVERSATION
            events = await door.stream(payload, conversation, worker_relay())
        except BadRequest as exc:
            return refusal(exc)
        return event_stream(events)

    @app.websocket
    async def ws(websocket: WebSocket, context: RequestContext) -> None:
        conversation = context.session_id or conversation_of(websocket)
        worker = sdk_worker_loop(app)
        await door.serve_socket(
            websocket,
            worker_turns(voice_agent, worker),
            conversation,
            worker_voice_check(voice_agent, worker),
            worker_withdrawal(voice_agent, worker),
        )


def _add_agui_routes(app: BedrockAgentCoreApp, door: FrontDoor) -> None:
    """AG-UI (docs/agui.md): a ``RunAgentInput`` on ``POST /invocations`` (SSE) and on ``/ws``;
    the thread is the conversation, turns on the SDK's worker loop."""

    @app.entrypoint
    async def invoke(payload: dict[str, Any]) -> Response:
        return await agui_invocation(door, payload, worker_relay())

    @app.websocket
    async def ws(websocket: WebSocket, context: RequestContext) -> None:
        worker_loop = sdk_worker_loop(app)
        await door.serve_agui_socket(websocket, worker_turns(door.voice_agent, worker_loop))


EXIT_BAD_SETTING = 2  # as voice-agent dev: a refused setting is a usage error


def main() -> int:
    """Serve on 0.0.0.0:8080, as AgentCore Runtime expects. A setting the app refuses (a
    variable's value, the model, the agent factory, the protocol) is one line on stderr and
    exit 2, not a traceback."""
    logs.configure("INFO")  # LOG_FORMAT=json in the image
    tracing.configure("voice-agent")  # on with the OTEL_* variables (or the ADOT distro)
    try:
        app = create_app(AgentConfig.from_env())
    except (ValueError, ProtocolSettingError) as exc:  # config, ModelSpecError, factory
        print(f"voice-agent (AgentCore): {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_SETTING
    app.run(port=8080, host="0.0.0.0")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
