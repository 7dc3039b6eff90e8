"""The browser leg over WebSocket (``/ws``): one socket per conversation, binary audio, barge-in.

Both front doors serve ``/ws`` with ``VoiceSocket``; each only says how a turn starts (the dev
server calls ``VoiceAgent.start`` in place, the AgentCore app on the SDK's worker loop), so a
turn here is the same ``Turn`` the SSE route runs: there is no second pipeline.

Client → server: JSON objects, in text or binary frames, at most ``MAX_MESSAGE_BYTES``:
``prompt`` (the POST body's fields), ``cancel`` (barge-in), ``config`` (defaults for later
prompts), and to speak instead of typing ``listen``, ``listen.stop``, ``talk.start`` and
``talk.end``; microphone audio is a binary frame that starts with ``MIC_MAGIC`` (no JSON text
can), fed to the socket's ``Listener`` (``agent.listening``). An utterance's transcript is sent,
then starts a turn exactly as a ``prompt`` of that text would; user speech over a running turn
cancels it as a ``cancel`` does. Server → client: the turn's events as JSON text frames,
except ``audio.delta``, which is one binary frame: ``AUDIO_HEADER`` (the segment's ``seq``)
then raw PCM s16le (the constants: ``agent.browser_leg``). Turns never interleave on the
socket: a new prompt supersedes the running turn, whose events end (with ``turn.end``) before
the new turn's first.
A socket with no message and no turn for ``idle_s`` gets an ``idle_timeout`` error and is
closed (1000, reason ``idle_timeout``); a page opens a new one on its next prompt. A client that
goes away, even in the middle of a send, ends the socket quietly: its turn is cancelled and
nothing is logged. Contract: docs/events.md.

A ``heard`` message (where the client stopped playing a turn's audio) goes with the socket's
next prompt, typed or spoken, so that the conversation keeps only what the user heard
(``agent/memory.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from starlette.types import Message
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from agent.browser_leg import IDLE_CLOSE, MIC_MAGIC, SESSION_HEADER, audio_frame
from agent.events import (
    AudioDelta,
    ConfigApplied,
    ErrorEvent,
    Event,
    Refused,
    SocketReady,
    Transcript,
    TurnCancelled,
    TurnEnd,
    TurnStart,
)
from agent.listening.listener import (
    BargeIn,
    Heard,
    Listener,
    ListeningService,
    Utterance,
    check_frame,
    parse_listen,
)
from agent.listening.playback import Playback
from agent.listening.recognizer import RecognitionError
from agent.requests import (
    HEARD_FIELDS,
    BadRequest,
    check_fields,
    parse_heard,
)
from agent.service import DEFAULT_CONVERSATION, VoiceAgent
from agent.ws_messages import parse_config, parse_message
from tts_protocol import BYTES_PER_SAMPLE

log = logging.getLogger("agent.ws")

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


class VoiceSocket:
    """One client's socket: reads its messages in order, sends its turns' events.

    ``on_error`` is told the code of each error sent (refused messages and frames,
    ``idle_timeout``, recognition's); ``on_heard`` each ``speech.end`` and ``transcript``.
    Without ``listening``, a ``listen`` is refused (``listening_unavailable``).
    """

    def __init__(
        self,
        websocket: WebSocket,
        start_turn: TurnStarter,
        conversation: str,
        idle_s: float,
        on_error: Callable[[str], None] | None = None,
        *,
        listening: ListeningService | None = None,
        on_heard: Callable[[Event], None] | None = None,
    ) -> None:
        self.conversation = conversation
        self.idle_s = idle_s
        self._websocket = websocket
        self._start_turn = start_turn
        self._on_error = on_error
        self._defaults: dict[str, Any] = {}
        self._played: dict[str, Any] | None = None  # the last playback report, for the next prompt
        self._sending = asyncio.Lock()  # the receive loop and the turn's task both send
        self._turn: asyncio.Task[None] | None = None
        self._turn_id: str | None = None
        self._used_at = 0.0  # the loop's clock when the last message came or the last turn ended
        self._listening = listening
        self._on_heard = on_heard
        self._listener: Listener | None = None
        self._playback = Playback()

    async def serve(self) -> None:
        """Accept, say ``ready``, answer messages until the client goes; then stop the turn."""
        with contextlib.suppress(WebSocketDisconnect):  # the client went: a normal end
            await self._serve()

    async def _serve(self) -> None:
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
                    reason = "idle_timeout"
                    await self._send_message(
                        {"type": "websocket.close", "code": IDLE_CLOSE, "reason": reason}
                    )
                    return
                if received["type"] == "websocket.disconnect":
                    return
                text = received.get("text")
                data = received.get("bytes") or b""
                if text is None and data.startswith(MIC_MAGIC):
                    await self._audio(data[len(MIC_MAGIC) :])
                else:
                    await self._answer(text if text is not None else data)
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
                check_fields(message, ("type",))  # a prompt's are parse_request's
                await self._send(TurnCancelled(await self._stop_turn()))
            elif message_type == "config":
                merged = self._defaults | parse_config(message)
                self._defaults = {k: v for k, v in merged.items() if v is not None}
                await self._send(ConfigApplied(self._defaults))
            elif message_type == "heard":
                check_fields(message, ("type", *HEARD_FIELDS))
                report = {k: v for k, v in message.items() if k != "type"}
                parse_heard(report)  # refused now, not with the next prompt
                self._played = report
            elif message_type == "prompt":
                await self._prompt({k: v for k, v in message.items() if k != "type"})
            else:
                await self._listen(message)
        except BadRequest as exc:
            await self._refuse(exc, message_type)

    async def _refuse(self, exc: BadRequest, in_reply_to: str | None) -> None:
        if self._on_error is not None:
            self._on_error(exc.code)
        await self._send(Refused(exc.code, exc.message, in_reply_to))

    # --- listening ----------------------------------------------------------------------

    async def _listen(self, message: dict[str, Any]) -> None:
        """``listen``, ``listen.stop``, ``talk.start``, ``talk.end``; raises ``BadRequest``."""
        message_type, listening = message["type"], self._listening
        if listening is None:
            raise BadRequest("listening_unavailable", "this server does not listen")
        if message_type == "listen":
            mode = parse_listen(message)
            try:
                await listening.recognizer.load()  # on the first listen of the process
            except RecognitionError as exc:
                raise BadRequest(exc.code, str(exc)) from exc
            await self._stop_listening()
            try:
                self._listener = Listener(listening.config, mode)
            except ImportError as exc:  # an install without the `listen` extra
                raise BadRequest("listening_unavailable", f"no VAD here: {exc}") from exc
            await self._send(listening.state(mode))
            return
        check_fields(message, ("type",))
        if message_type == "listen.stop":
            await self._stop_listening()
            await self._send(listening.state(None))
            return
        listener = self._listening_now(message_type)
        if message_type == "talk.start":
            await self._heard(listener.talk_start(self._agent_speaking))
        else:
            await self._heard(listener.talk_end())

    def _listening_now(self, what: str) -> Listener:
        if self._listener is None:
            raise BadRequest("not_listening", f"{what} before 'listen'; send 'listen' first")
        return self._listener

    async def _stop_listening(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            await self._heard(listener.stop())

    async def _audio(self, pcm: bytes) -> None:
        """One microphone frame (its PCM, the magic taken off)."""
        try:
            listener = self._listening_now("audio")
            assert self._listening is not None  # a listener exists only with it
            check_frame(pcm, self._listening.config)
        except BadRequest as exc:
            await self._refuse(exc, "audio")
            return
        await self._heard(listener.feed(pcm, self._agent_speaking))

    @property
    def _turn_running(self) -> bool:
        return self._turn is not None and not self._turn.done()

    @property
    def _agent_speaking(self) -> bool:
        """A turn runs, or the page is still playing audio it was sent."""
        return self._turn_running or self._playback.playing(asyncio.get_running_loop().time())

    async def _heard(self, heard: list[Heard]) -> None:
        """Do what the listener says, in order."""
        for item in heard:
            if isinstance(item, BargeIn):
                now = asyncio.get_running_loop().time()
                playing = self._playback.turn_id if self._playback.playing(now) else None
                if self._turn_running:  # the same stop as a `cancel`
                    stopped = await self._stop_turn()  # None if its `turn.end` went out
                    await self._send(TurnCancelled(stopped or playing))
                elif playing is not None:  # its turn has ended; its audio still plays
                    self._playback.stop()
                    await self._send(TurnCancelled(playing))
            elif isinstance(item, Utterance):
                await self._recognize(item)
            else:
                if isinstance(item, ErrorEvent) and self._on_error is not None:
                    self._on_error(item.code)
                elif self._on_heard is not None:
                    self._on_heard(item)
                await self._send(item)

    async def _recognize(self, utterance: Utterance) -> None:
        """Send the utterance's transcript, then start its turn as a typed prompt would."""
        assert self._listening is not None
        try:
            recognition = await self._listening.recognizer.recognize(utterance.pcm)
        except RecognitionError as exc:
            if self._on_error is not None:
                self._on_error(exc.code)
            await self._send(ErrorEvent(exc.code, str(exc)))
            return
        transcript = Transcript(recognition.text, utterance.audio_ms, recognition.asr_ms)
        if self._on_heard is not None:
            self._on_heard(transcript)
        await self._send(transcript)
        if transcript.text:
            try:
                await self._prompt({"prompt": transcript.text})
            except BadRequest as exc:  # e.g. a voice in the defaults the TTS server lost
                await self._refuse(exc, "transcript")

    async def _prompt(self, fields: dict[str, Any]) -> None:
        """Start a turn; the running one is superseded, and its events end before these start."""
        if self._played is not None and "heard" not in fields:
            fields = fields | {"heard": self._played}
        turn_events = await self._start_turn(self._defaults | fields, self.conversation)
        self._played = None
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
                    now = asyncio.get_running_loop().time()
                    self._playback.sent(now, len(event.pcm) // BYTES_PER_SAMPLE, self._turn_id)
                    continue
                if isinstance(event, TurnStart):
                    self._turn_id = event.turn_id
                    self._playback.stop()  # the page drops what an older turn left
                await self._send(event)
                if isinstance(event, TurnEnd):
                    self._turn_id = None  # ended: a `cancel` now stops nothing, names no turn

    async def _stop_turn(self) -> str | None:
        """Cancel the running turn, if any, and wait until nothing more of it can be sent.

        Returns its ``turn_id``, or None if no turn was running.
        """
        task, self._turn = self._turn, None
        self._playback.stop()  # the page stops playing on `cancelled`
        if task is None:
            return None
        running = not task.done()
        task.cancel()
        await asyncio.wait([task])  # not `await task`: that would swallow our own cancellation
        self._retrieve(task)
        return self._turn_id if running else None  # None once its `turn.end` went out

    def _ended(self, _task: asyncio.Task[None]) -> None:
        self._used_at = asyncio.get_running_loop().time()  # idle counts from a turn's end

    @staticmethod
    def _retrieve(task: asyncio.Task[None]) -> None:
        if task.cancelled() or isinstance(exc := task.exception(), WebSocketDisconnect | None):
            return  # a client that went away is no news
        log.info("a turn's relay ended early: %s: %s", type(exc).__name__, exc)

    async def _send(self, event: Event) -> None:
        await self._send_message({"type": "websocket.send", "text": event.to_json()})

    async def _send_bytes(self, frame: bytes) -> None:
        await self._send_message({"type": "websocket.send", "bytes": frame})

    async def _send_message(self, message: Message) -> None:
        """Send a frame; raises ``WebSocketDisconnect`` once either side has closed, however
        Starlette learnt of it (a failed send, a close received or sent)."""
        websocket = self._websocket
        async with self._sending:
            if WebSocketState.DISCONNECTED in (websocket.client_state, websocket.application_state):
                raise WebSocketDisconnect(1006)
            await websocket.send(message)
