"""The agent on Amazon Bedrock AgentCore Runtime: ``POST /invocations`` streams SSE events.

The SDK runs async handlers on its own worker event loop, so the TTS sessions are created on,
and kept for, that loop; the default conversation's session is pre-connected at start-up.
``/ping`` reports ``HealthyBusy`` while a turn streams.

The turn's events are streamed by ``WorkerLoopEventStream`` rather than by returning the
generator to the SDK: the SDK bridges generators through a thread that only notices a
client that went away once the generator ends, so the turn (LLM and synthesis) would run
to completion for nobody. This response watches for ``http.disconnect`` and cancels the
turn on the worker loop at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from bedrock_agentcore.runtime import BedrockAgentCoreApp, PingStatus
from bedrock_agentcore.runtime.context import RequestContext
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from agent.config import AgentConfig
from agent.events import Event
from agent.pipeline import BadRequest
from agent.service import DEFAULT_CONVERSATION, VoiceAgent

log = logging.getLogger("agent")


class WorkerLoopEventStream(Response):
    """SSE of an async generator that lives on another event loop; disconnect cancels it."""

    def __init__(self, events: AsyncIterator[Event], loop: asyncio.AbstractEventLoop) -> None:
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        self._events = events
        self._loop = loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        here = asyncio.get_running_loop()
        lines: asyncio.Queue[bytes | None] = asyncio.Queue()

        async def pump() -> None:  # on the worker loop, where the turn and its session live
            try:
                async for event in self._events:
                    line = f"data: {json.dumps(event, separators=(',', ':'))}\n\n".encode()
                    here.call_soon_threadsafe(lines.put_nowait, line)
            finally:
                here.call_soon_threadsafe(lines.put_nowait, None)

        async def relay() -> None:
            while (line := await lines.get()) is not None:
                await send({"type": "http.response.body", "body": line, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        pumping = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(pump(), self._loop))
        tasks = {asyncio.ensure_future(relay()), asyncio.ensure_future(_disconnected(receive))}
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in (*tasks, pumping):
            task.cancel()  # cancelling `pumping` cancels the turn on the worker loop
        for outcome in await asyncio.gather(*tasks, pumping, return_exceptions=True):
            if isinstance(outcome, Exception):
                log.warning("event stream ended with %r", outcome)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def create_app(config: AgentConfig | None = None) -> BedrockAgentCoreApp:
    """The AgentCore app around one ``VoiceAgent``."""
    voice_agent = VoiceAgent(config)

    async def preconnect() -> None:
        try:
            await voice_agent.conversations.preconnect(DEFAULT_CONVERSATION)
        except Exception as exc:  # speech may come up later; turns reconnect on demand
            log.warning("TTS pre-connect failed: %s", exc)

    @contextlib.asynccontextmanager
    async def lifespan(app: BedrockAgentCoreApp) -> AsyncIterator[None]:
        # The SDK's worker loop runs every async handler: sessions must live there.
        worker = app._ensure_worker_loop()
        asyncio.run_coroutine_threadsafe(preconnect(), worker)
        yield
        closing = asyncio.run_coroutine_threadsafe(voice_agent.aclose(), worker)
        await asyncio.wrap_future(closing)

    app = BedrockAgentCoreApp(lifespan=lifespan)

    @app.entrypoint
    async def invoke(payload: dict[str, Any], context: RequestContext) -> Response:
        try:
            turn = await voice_agent.start(payload, context.session_id or DEFAULT_CONVERSATION)
        except BadRequest as exc:
            return JSONResponse(exc.to_json(), status_code=400)
        return WorkerLoopEventStream(turn.run(), asyncio.get_running_loop())

    @app.ping
    def ping() -> PingStatus:
        return PingStatus.HEALTHY_BUSY if voice_agent.conversations.busy else PingStatus.HEALTHY

    app.state.voice_agent = voice_agent
    return app


def main() -> None:
    """Serve on 0.0.0.0:8080, as AgentCore Runtime expects."""
    logging.basicConfig(level=logging.INFO)
    create_app().run(port=8080, host="0.0.0.0")


if __name__ == "__main__":
    main()
