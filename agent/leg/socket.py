"""The browser leg over WebSocket (``/ws``), its asyncio shell: one socket per conversation.

Both front doors serve ``/ws`` with ``VoiceSocket``; each only says how a turn starts (the dev
server calls ``VoiceAgent.start`` in place, the AgentCore app on the SDK's worker loop), so a
turn here is the same ``Turn`` the SSE route runs: there is no second pipeline.

This module is the wire only: the receive loop and its idle timeout, parsing (each client
message once into a typed message, ``agent.leg.messages``), refusals, and one lock around sends.
What a parsed message does is ``agent.leg.dialogue``'s; a turn's life (supersede, hold, cancel)
is ``agent.leg.turns``'s. Server → client: the turn's events as JSON text frames, except
``audio.delta``, which is one binary frame: ``AUDIO_HEADER`` (the segment's ``seq``) then raw
PCM s16le (``agent.browser_leg``). Turns never interleave: a new prompt supersedes the running
turn, whose events end (with ``turn.end``) before the new turn's first; a reply begun early is
held until its turn is confirmed. A socket with no message and no turn for ``idle_s`` gets an
``idle_timeout`` error and is closed (1000, reason ``idle_timeout``). A client that goes away,
even in the middle of a send, ends the socket quietly: its turn is cancelled and nothing is
logged. What a front door hands a socket: ``agent.leg.hooks``. Contract: docs/events.md.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from starlette.types import Message
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from agent.browser_leg import IDLE_CLOSE, audio_frames
from agent.events import ErrorEvent, Event, Refused, SocketReady, fitted
from agent.leg.dialogue import Dialogue
from agent.leg.hooks import TurnStarter, TurnWithdrawal, VoiceCheck, unobserved
from agent.leg.messages import AUDIO, PROMPT, MessageRefused, MicFrame, parse_message
from agent.listening.listener import ListeningService
from agent.requests import BadRequest


class VoiceSocket:
    """One client's socket: reads its messages in order, sends its turns' events.

    ``observe`` is told each event the socket itself sends (refusals, ``idle_timeout``,
    recognition's errors, listening events), not the turns' (their front door observes
    those). Without ``listening``, a ``listen`` is refused (``listening_unavailable``).
    ``check_voice`` judges a ``config``'s voice when it comes, as a prompt's is judged.
    ``withdraw`` forgets a speculative turn whose user spoke on (``agent.leg.turns``).
    """

    def __init__(
        self,
        websocket: WebSocket,
        start_turn: TurnStarter,
        conversation: str,
        idle_s: float,
        *,
        check_voice: VoiceCheck,
        listening: ListeningService | None = None,
        observe: Callable[[Event], None] = unobserved,
        withdraw: TurnWithdrawal | None = None,
    ) -> None:
        self.conversation = conversation
        self.idle_s = idle_s
        self._websocket = websocket
        self._observe = observe
        self._sending = asyncio.Lock()  # the receive loop and the turn's task both send
        self._used_at = 0.0  # the loop's clock when the last message came or the last turn ended
        self._dialogue = Dialogue(
            self,
            start_turn,
            conversation,
            check_voice=check_voice,
            listening=listening,
            withdraw=withdraw,
            on_turn_end=self._touch,  # idle counts from a turn's end
        )

    async def serve(self) -> None:
        """Accept, say ``ready``, answer messages until the client goes; then stop the turn."""
        with contextlib.suppress(WebSocketDisconnect):  # the client went: a normal end
            await self._serve()

    async def _serve(self) -> None:
        await self._websocket.accept()
        await self.send(SocketReady(self.conversation))
        self._touch()
        try:
            while (received := await self._receive()) is not None:
                if received["type"] == "websocket.disconnect":
                    return
                text = received.get("text")
                await self._answer(text if text is not None else received.get("bytes") or b"")
            await self.tell(ErrorEvent("idle_timeout", f"no use for {self.idle_s} s"))
            close = {"type": "websocket.close", "code": IDLE_CLOSE, "reason": "idle_timeout"}
            await self._send_message(close)
        finally:
            await self._dialogue.close()

    async def _receive(self) -> Message | None:
        """The client's next message, or None once the socket has been idle for ``idle_s``."""
        while True:
            idle = self._now() - self._used_at
            if not self._dialogue.turn_running:
                if idle >= self.idle_s:
                    return None
                wait = self.idle_s - idle
            else:  # a turn is streaming: the socket is in use
                wait = self.idle_s
            with contextlib.suppress(TimeoutError):
                received = await asyncio.wait_for(self._websocket.receive(), wait)
                self._touch()
                return received

    async def _answer(self, data: str | bytes) -> None:
        """Parse one client message and take it; a refusal names the message's type."""
        try:
            message = parse_message(data)
        except MessageRefused as exc:
            await self._refuse(exc, exc.in_reply_to)
            return
        try:
            await self._dialogue.take(message)
        except MessageRefused as exc:  # refused with its own type (a listening message, config)
            await self._refuse(exc, exc.in_reply_to)
        except BadRequest as exc:
            await self._refuse(exc, AUDIO if isinstance(message, MicFrame) else PROMPT)

    async def _refuse(self, exc: BadRequest, in_reply_to: str | None) -> None:
        await self.tell(Refused(exc.code, exc.message, in_reply_to))

    def _touch(self) -> None:
        self._used_at = self._now()

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    async def tell(self, event: Event) -> None:
        """Send one of the socket's own events, observed."""
        self._observe(event)
        await self.send(event)

    async def send(self, event: Event) -> None:
        """Send an event as JSON text frames within AgentCore's frame limit (``fitted``)."""
        for part in fitted(event):
            await self._send_message({"type": "websocket.send", "text": part.to_json()})

    async def send_audio(self, seq: int, pcm: bytes) -> None:
        """Send segment ``seq``'s PCM as binary audio frames within the frame limit."""
        for frame in audio_frames(seq, pcm):
            await self._send_message({"type": "websocket.send", "bytes": frame})

    async def _send_message(self, message: Message) -> None:
        """Send a frame; raises ``WebSocketDisconnect`` once either side has closed, however
        Starlette learnt of it (a failed send, a close received or sent)."""
        websocket = self._websocket
        async with self._sending:
            if WebSocketState.DISCONNECTED in (websocket.client_state, websocket.application_state):
                raise WebSocketDisconnect(1006)
            await websocket.send(message)
