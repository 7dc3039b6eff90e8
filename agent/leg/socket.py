"""The browser leg over WebSocket (``/ws``), its asyncio shell: one socket per conversation.

Both front doors serve ``/ws`` with ``VoiceSocket``; each only says how a turn starts (the dev
server calls ``VoiceAgent.start`` in place, the AgentCore app on the SDK's worker loop), so a
turn here is the same ``Turn`` the SSE route runs: there is no second pipeline.

Client messages are parsed once into typed messages (``agent.leg.messages``); what listening
means is decided by the sans-I/O ``VoiceInput`` (``agent.leg.voice_input``). This module only
reads, sends and runs: the receive loop and its idle timeout, the running turn's task and its
relay, recognition, and one lock around sends. Server → client: the turn's events as JSON
text frames, except ``audio.delta``, which is one binary frame: ``AUDIO_HEADER`` (the
segment's ``seq``) then raw PCM s16le (``agent.browser_leg``). Turns never interleave: a new
prompt supersedes the running turn, whose events end (with ``turn.end``) before the new
turn's first; a reply begun early (``agent.leg.eager_start``) is held until its turn is
confirmed. A socket with no message and no turn for ``idle_s`` gets an ``idle_timeout`` error
and is closed (1000, reason ``idle_timeout``). A client that goes away, even in the middle of
a send, ends the socket quietly: its turn is cancelled and nothing is logged. What a front
door hands a socket: ``agent.leg.hooks``. Contract: docs/events.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace

from starlette.types import Message
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from agent.browser_leg import IDLE_CLOSE, audio_frame
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
from agent.leg.eager_start import EagerStart
from agent.leg.hooks import TurnEvents, TurnStarter, TurnWithdrawal, VoiceCheck, unobserved
from agent.leg.messages import (
    AUDIO,
    CONFIG,
    PROMPT,
    Cancel,
    ClientMessage,
    Config,
    Defaults,
    Listen,
    ListenStop,
    MessageRefused,
    MicFrame,
    Prompt,
    TalkEnd,
    TalkStart,
    parse_message,
)
from agent.leg.voice_input import Action, CancelTurn, JudgeTurn, Recognize, Send, VoiceInput
from agent.listening.eager import EagerRecognition
from agent.listening.endpointer import Resumed
from agent.listening.listener import ListeningService, Utterance
from agent.listening.recognizer import RecognitionError
from agent.listening.turn_model import TurnModelError
from agent.requests import BadRequest, PlaybackReport, TurnRequest

log = logging.getLogger("agent.ws")


class VoiceSocket:
    """One client's socket: reads its messages in order, sends its turns' events.

    ``observe`` is told each event the socket itself sends (refusals, ``idle_timeout``,
    recognition's errors, listening events), not the turns' (their front door observes
    those). Without ``listening``, a ``listen`` is refused (``listening_unavailable``).
    ``check_voice`` judges a ``config``'s voice when it comes, as a prompt's is judged.
    ``withdraw`` forgets a speculative turn whose user spoke on (``eager_start``).
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
        self._start_turn = start_turn
        self._check_voice = check_voice
        self._observe = observe
        self._defaults = Defaults()
        self._input = VoiceInput(listening)
        self._eager = None if listening is None else EagerRecognition(listening.recognizer)
        self._sending = asyncio.Lock()  # the receive loop and the turn's task both send
        self._turn: asyncio.Task[None] | None = None
        self._turn_id: str | None = None
        self._held: list[Event] | None = None  # an early reply's events, not sent yet
        self._early = None if self._eager is None else EagerStart(self, self._eager, withdraw)
        self._order = asyncio.Lock()  # a held turn's events go out before its later ones
        self._used_at = 0.0  # the loop's clock when the last message came or the last turn ended

    async def serve(self) -> None:
        """Accept, say ``ready``, answer messages until the client goes; then stop the turn."""
        with contextlib.suppress(WebSocketDisconnect):  # the client went: a normal end
            await self._serve()

    async def _serve(self) -> None:
        await self._websocket.accept()
        await self._send(SocketReady(self.conversation))
        self._used_at = self._now()
        try:
            while (received := await self._receive()) is not None:
                if received["type"] == "websocket.disconnect":
                    return
                text = received.get("text")
                await self._answer(text if text is not None else received.get("bytes") or b"")
            await self._tell(ErrorEvent("idle_timeout", f"no use for {self.idle_s} s"))
            close = {"type": "websocket.close", "code": IDLE_CLOSE, "reason": "idle_timeout"}
            await self._send_message(close)
        finally:
            await self._drop_early()
            if self._eager is not None:
                self._eager.drop()
            await self._stop_turn()

    async def _receive(self) -> Message | None:
        """The client's next message, or None once the socket has been idle for ``idle_s``."""
        while True:
            idle = self._now() - self._used_at
            if not self._turn_running:
                if idle >= self.idle_s:
                    return None
                wait = self.idle_s - idle
            else:  # a turn is streaming: the socket is in use
                wait = self.idle_s
            with contextlib.suppress(TimeoutError):
                received = await asyncio.wait_for(self._websocket.receive(), wait)
                self._used_at = self._now()
                return received

    async def _answer(self, data: str | bytes) -> None:
        try:
            message = parse_message(data)
        except MessageRefused as exc:
            await self._refuse(exc, exc.in_reply_to)
            return
        try:
            await self._take(message)
        except MessageRefused as exc:  # a listening message, refused by VoiceInput
            await self._refuse(exc, exc.in_reply_to)
        except BadRequest as exc:
            await self._refuse(exc, AUDIO if isinstance(message, MicFrame) else PROMPT)

    async def _take(self, message: ClientMessage) -> None:
        """Do what ``message`` asks; raises ``BadRequest``."""
        if not isinstance(message, MicFrame | Config | PlaybackReport):
            await self._drop_early()  # the user acts: a guess at their turn is moot
        now, running = self._now(), self._turn_running
        if isinstance(message, MicFrame):
            await self._do(self._input.frame(message, now, running))
        elif isinstance(message, Prompt):
            await self._start(self._defaults.turn(message))
        elif isinstance(message, Cancel):
            await self._send(TurnCancelled(await self._stop_turn()))
        elif isinstance(message, Config):
            self._defaults = self._defaults.configured(await self._voice_checked(message))
            await self._send(ConfigApplied(self._defaults.sent))
        elif isinstance(message, PlaybackReport):
            self._defaults = self._defaults.played(message)
        else:
            await self._listening(message, now, running)

    async def _voice_checked(self, config: Config) -> Config:
        """``config`` with its voice as the TTS server will take it; raises ``MessageRefused``
        (``unknown_voice``), and the previous defaults stay."""
        voice = config.options.get("voice")
        if not isinstance(voice, tuple):  # none named, or unset (null)
            return config
        try:
            checked = await self._check_voice(voice)
        except BadRequest as exc:
            raise MessageRefused(exc, CONFIG) from exc
        return replace(config, options={**config.options, "voice": checked})

    async def _listening(
        self, message: Listen | ListenStop | TalkStart | TalkEnd, now: float, running: bool
    ) -> None:
        """A listening message; refused with its own type."""
        try:
            if isinstance(message, Listen):
                await self._load_models()
                actions = self._input.listen(message.mode)
            elif isinstance(message, ListenStop):
                actions = self._input.listen_stop()
            elif isinstance(message, TalkStart):
                actions = self._input.talk_start(now, running)
            else:
                actions = self._input.talk_end()
        except BadRequest as exc:
            raise MessageRefused(exc, message.type) from exc
        await self._do(actions)

    async def _load_models(self) -> None:
        """Load the recognizer and the turn model on the process's first ``listen``; raises
        ``BadRequest``."""
        service = self._input.service()
        try:
            await service.recognizer.load()
            if service.turn_judge is not None:
                await service.turn_judge.load()
        except (RecognitionError, TurnModelError) as exc:
            raise BadRequest(exc.code, str(exc)) from exc

    async def _refuse(self, exc: BadRequest, in_reply_to: str | None) -> None:
        await self._tell(Refused(exc.code, exc.message, in_reply_to))

    async def _do(self, actions: list[Action]) -> None:
        """Carry out what ``VoiceInput`` says, in order."""
        for action in actions:
            if isinstance(action, Send):
                await self._tell(action.event)
            elif isinstance(action, Recognize):
                await self._recognize(action.utterance)
            elif isinstance(action, JudgeTurn):
                await self._judge(action)
            elif isinstance(action, Resumed):  # only while listening, with an EagerStart
                await self._early.resumed()  # type: ignore[union-attr]
            else:
                await self._cancel(action)

    async def _cancel(self, action: CancelTurn) -> None:
        stopped = await self._stop_turn()  # None if its `turn.end` went out
        await self._send(TurnCancelled(stopped or action.playing))

    async def _judge(self, action: JudgeTurn) -> None:
        """Score a pause with the turn model on its thread; the reader waits meanwhile, so the
        answer applies where it was asked (frames wait in the socket, as for recognition). An
        answer that leaves the turn to wait starts eager recognition (and the eager start) on
        the pause's audio: after the model, so that its decision never shares the cores."""
        service = self._input.service()
        judge, config, paused = service.turn_judge, service.config, action.paused
        assert judge is not None and self._eager is not None and self._early is not None
        try:
            turn = await judge.judge(paused.pcm)
        except TurnModelError as exc:  # the silence rule decides this pause
            log.warning("the turn model failed: %s", exc)
            turn = None
        actions = self._input.judged(paused.ticket, turn, self._now(), self._turn_running)
        await self._do(actions)
        if actions or not config.eager_asr or not (paused.last or turn is None):
            return  # the turn ended, or the model is asked again in this pause
        self._eager.start(paused.ticket, paused.pcm)
        if turn is not None and config.eager_start and self._early.enabled:
            await self._early.drop()  # an older pause's, if speech did not say resumed
            self._early.begin(paused.ticket)

    async def _drop_early(self) -> None:
        """Withdraw the reply begun early, if any (``agent.leg.eager_start``)."""
        if self._early is not None:
            await self._early.drop()

    async def _recognize(self, utterance: Utterance) -> None:
        """Send the utterance's transcript, then start its turn as a typed prompt would (or
        let the reply started on it at its pause be heard)."""
        if self._early is not None and await self._early.confirm(utterance):
            return
        try:
            assert self._eager is not None  # an utterance comes only with listening
            recognition = await self._eager.recognize(utterance.pcm, utterance.ticket)
        except RecognitionError as exc:
            await self._tell(ErrorEvent(exc.code, str(exc)))
            return
        await self._tell(Transcript(recognition.text, utterance.audio_ms, recognition.asr_ms))
        if recognition.text:
            try:
                await self._start(self._defaults.turn(recognition.text))
            except BadRequest as exc:  # e.g. a voice in the defaults the TTS server lost
                await self._refuse(exc, "transcript")

    @property
    def holding(self) -> bool:
        return self._held is not None

    async def start_held(self, text: str) -> None:
        await self._start(self._defaults.turn(text), held=True)

    async def release(self, transcript: Transcript) -> None:
        await self._tell(transcript)
        async with self._order:
            held, self._held = self._held or [], None
            for event in held:
                await self._emit(event)

    async def stop_held(self) -> list[Event] | None:
        held, self._held = self._held, None
        if held is not None:
            await self._stop_turn()
        return held

    async def _start(self, request: TurnRequest, held: bool = False) -> None:
        """Start a turn; the running one is superseded, and its events end before these start.
        ``held``: its events wait in ``_held`` until the turn is confirmed."""
        turn_events = await self._start_turn(request, self.conversation)
        self._defaults = self._defaults.played(None)  # the report went with this turn
        if self._turn is not None:
            await asyncio.wait([self._turn])  # it ends with `turn.end` once superseded
            self._retrieve(self._turn)
        self._turn_id = None
        self._held = [] if held else None
        self._turn = asyncio.create_task(self._relay(turn_events), name="ws-turn")
        self._turn.add_done_callback(self._ended)

    async def _relay(self, turn_events: TurnEvents) -> None:
        async with contextlib.aclosing(turn_events):  # closing it stops the turn
            async for event in turn_events:
                async with self._order:
                    if self._held is not None:
                        self._held.append(event)
                    else:
                        await self._emit(event)

    async def _emit(self, event: Event) -> None:
        """Send one of the running turn's events."""
        if isinstance(event, AudioDelta):
            await self._send_bytes(audio_frame(event.seq, event.pcm))
            self._input.audio_sent(self._now(), len(event.pcm), self._turn_id)
            return
        if isinstance(event, TurnStart):
            self._turn_id = event.turn_id
            self._input.turn_started()
        await self._send(event)
        if isinstance(event, TurnEnd):
            self._turn_id = None  # ended: a `cancel` now stops nothing, names no turn

    @property
    def _turn_running(self) -> bool:
        """A turn runs that the user hears (a held one does not speak: no barge-in on it)."""
        return self._turn is not None and not self._turn.done() and self._held is None

    async def _stop_turn(self) -> str | None:
        """Cancel the running turn, if any, and wait until nothing more of it can be sent.

        Returns its ``turn_id``, or None if no turn was running.
        """
        task, self._turn = self._turn, None
        self._input.turn_stopped()
        if task is None:
            return None
        running = not task.done()
        task.cancel()
        await asyncio.wait([task])  # not `await task`: that would swallow our own cancellation
        self._retrieve(task)
        return self._turn_id if running else None  # None once its `turn.end` went out

    def _ended(self, _task: asyncio.Task[None]) -> None:
        self._used_at = self._now()  # idle counts from a turn's end

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    @staticmethod
    def _retrieve(task: asyncio.Task[None]) -> None:
        if task.cancelled() or isinstance(exc := task.exception(), WebSocketDisconnect | None):
            return  # a client that went away is no news
        log.info("a turn's relay ended early: %s: %s", type(exc).__name__, exc)

    async def _tell(self, event: Event) -> None:
        """Send one of the socket's own events, observed."""
        self._observe(event)
        await self._send(event)

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
