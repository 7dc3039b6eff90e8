"""The browser leg over WebSocket (``/ws``): one socket per conversation, binary audio, barge-in.

Both front doors serve ``/ws`` with ``VoiceSocket``; each only says how a turn starts (the dev
server calls ``VoiceAgent.start`` in place, the AgentCore app on the SDK's worker loop), so a
turn here is the same ``Turn`` the SSE route runs: there is no second pipeline.

Client → server: JSON objects, in text or binary frames, at most ``MAX_MESSAGE_BYTES``:
``prompt`` (the POST body's fields), ``cancel`` (barge-in), ``config`` (defaults for later
prompts). Server → client: the turn's events as JSON text frames, except ``audio.delta``, which
is one binary frame: ``AUDIO_HEADER`` (the segment's ``seq``) then raw PCM s16le (the
constants: ``agent.browser_leg``). Turns never interleave on the socket: a new prompt
supersedes the running turn, whose events end (with ``turn.end``) before the new turn's first.
A socket with no message and no turn for ``idle_s`` gets an ``idle_timeout`` error and is
closed (1000, reason ``idle_timeout``); a page opens a new one on its next prompt. Contract:
docs/events.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from starlette.types import Message
from starlette.websockets import WebSocket

from agent.browser_leg import IDLE_CLOSE, MAX_MESSAGE_BYTES, SESSION_HEADER, audio_frame
from agent.events import (
    AudioDelta,
    ConfigApplied,
    ErrorEvent,
    Event,
    Refused,
    SocketReady,
    TurnCancelled,
    TurnStart,
)
from agent.requests import OPTION_FIELDS, BadRequest, check_options, decode_json
from agent.service import DEFAULT_CONVERSATION, VoiceAgent

log = logging.getLogger("agent.ws")

MESSAGE_TYPES = ("prompt", "cancel", "config")

TurnEvents = AsyncGenerator[Event, None]
TurnStarter = Callable[[dict[str, Any], str], Awaitable[TurnEvents]]
"""Starts a turn of ``payload`` in a conversation and returns its events; raises ``BadRequest``."""


def local_turns(voice_agent: VoiceAgent) -> TurnStarter:
    """Turns started and run on the running loop (the dev server)."""

    async def start(payload: dict[str, Any], conversation: str) -> TurnEvents:
        return (await voice_agent.start(payload, conversation)).run()

    return start


def conversation_of(websocket: WebSocket) -> str:
    """The conversation a socket belongs to: the session header, or the same-named query
    parameter (a browser cannot set headers on a WebSocket), else ``default``."""
    return (
        websocket.headers.get(SESSION_HEADER)
        or websocket.query_params.get(SESSION_HEADER)
        or DEFAULT_CONVERSATION
    )


def parse_message(data: str | bytes) -> dict[str, Any]:
    """A client message, from a text or a binary frame; raises ``BadRequest``."""
    # a lone surrogate (only a caller in-process can send one) is kept, then is not JSON below
    raw = data.encode(errors="surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_MESSAGE_BYTES:
        raise BadRequest("message_too_large", f"a message is at most {MAX_MESSAGE_BYTES} bytes")
    message = decode_json(raw, "the message")
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise BadRequest("invalid_message", "a message is a JSON object with a string 'type'")
    if message["type"] not in MESSAGE_TYPES:
        known = ", ".join(MESSAGE_TYPES)
        raise BadRequest("unknown_type", f"unknown message type {message['type']!r}; try {known}")
    return message


def parse_config(message: dict[str, Any]) -> dict[str, Any]:
    """The prompt defaults a ``config`` message sets, as sent; a field set to null is unset
    (None). Checked by the rules of a prompt's fields (``check_options``)."""
    unknown = sorted(set(message) - {"type", *OPTION_FIELDS})
    if unknown:
        raise BadRequest("invalid_config", f"unknown config fields {unknown}; try {OPTION_FIELDS}")
    config = {field: message[field] for field in OPTION_FIELDS if field in message}
    check_options({field: value for field, value in config.items() if value is not None})
    return config


class VoiceSocket:
    """One client's socket: reads its messages in order, sends its turns' events.

    ``on_error`` is told the code of each refused message, and ``idle_timeout``.
    """

    def __init__(
        self,
        websocket: WebSocket,
        start_turn: TurnStarter,
        conversation: str,
        idle_s: float,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.conversation = conversation
        self.idle_s = idle_s
        self._websocket = websocket
        self._start_turn = start_turn
        self._on_error = on_error
        self._defaults: dict[str, Any] = {}
        self._sending = asyncio.Lock()  # the receive loop and the turn's task both send
        self._turn: asyncio.Task[None] | None = None
        self._turn_id: str | None = None
        self._used_at = 0.0  # the loop's clock when the last message came or the last turn ended

    async def serve(self) -> None:
        """Accept, say ``ready``, answer messages until the client goes; then stop the turn."""
        await self._websocket.accept()
        await self._send(SocketReady(self.conversation))
        self._used_at = asyncio.get_running_loop().time()
        try:
            while True:
                received = await self._receive()
                if received is None:
                    if self._on_error is not None:
                        self._on_error("idle_timeout")
                    await self._send(ErrorEvent("idle_timeout", f"no use for {self.idle_s} s"))
                    await self._websocket.close(IDLE_CLOSE, "idle_timeout")
                    return
                if received["type"] == "websocket.disconnect":
                    return
                text = received.get("text")
                await self._answer(text if text is not None else received.get("bytes") or b"")
        finally:
            await self._stop_turn()

    async def _receive(self) -> Message | None:
        """The client's next message, or None once the socket has been idle for ``idle_s``."""
        loop = asyncio.get_running_loop()
        while True:
            idle = loop.time() - self._used_at
            if self._turn is None or self._turn.done():
                if idle >= self.idle_s:
                    return None
                wait = self.idle_s - idle
            else:  # a turn is streaming: the socket is in use
                wait = self.idle_s
            with contextlib.suppress(TimeoutError):
                received = await asyncio.wait_for(self._websocket.receive(), wait)
                self._used_at = loop.time()
                return received

    async def _answer(self, data: str | bytes) -> None:
        message_type: str | None = None
        try:
            message = parse_message(data)
            message_type = message["type"]
            if message_type == "cancel":
                await self._send(TurnCancelled(await self._stop_turn()))
            elif message_type == "config":
                merged = self._defaults | parse_config(message)
                self._defaults = {k: v for k, v in merged.items() if v is not None}
                await self._send(ConfigApplied(self._defaults))
            else:
                await self._prompt({k: v for k, v in message.items() if k != "type"})
        except BadRequest as exc:
            if self._on_error is not None:
                self._on_error(exc.code)
            await self._send(Refused(exc.code, exc.message, message_type))

    async def _prompt(self, fields: dict[str, Any]) -> None:
        """Start a turn; the running one is superseded, and its events end before these start."""
        turn_events = await self._start_turn(self._defaults | fields, self.conversation)
        if self._turn is not None:
            await asyncio.wait([self._turn])  # it ends with `turn.end` once superseded
            self._retrieve(self._turn)
        self._turn_id = None
        self._turn = asyncio.create_task(self._relay(turn_events), name="ws-turn")
        self._turn.add_done_callback(self._ended)

    async def _relay(self, turn_events: TurnEvents) -> None:
        async with contextlib.aclosing(turn_events):  # closing it stops the turn
            async for event in turn_events:
                if isinstance(event, AudioDelta):
                    await self._send_bytes(audio_frame(event.seq, event.pcm))
                    continue
                if isinstance(event, TurnStart):
                    self._turn_id = event.turn_id
                await self._send(event)

    async def _stop_turn(self) -> str | None:
        """Cancel the running turn, if any, and wait until nothing more of it can be sent.

        Returns its ``turn_id``, or None if no turn was running.
        """
        task, self._turn = self._turn, None
        if task is None:
            return None
        running = not task.done()
        task.cancel()
        await asyncio.wait([task])  # not `await task`: that would swallow our own cancellation
        self._retrieve(task)
        return self._turn_id if running else None

    def _ended(self, _task: asyncio.Task[None]) -> None:
        self._used_at = asyncio.get_running_loop().time()  # idle counts from a turn's end

    @staticmethod
    def _retrieve(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.info("a turn's relay ended early: %s: %s", type(exc).__name__, exc)

    async def _send(self, event: Event) -> None:
        async with self._sending:
            await self._websocket.send_text(event.to_json())

    async def _send_bytes(self, frame: bytes) -> None:
        async with self._sending:
            await self._websocket.send_bytes(frame)
