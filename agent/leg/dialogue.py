"""What a ``/ws`` client's messages do: one socket's side of its conversation.

``VoiceSocket`` (``agent.leg.socket``) reads, parses, refuses and sends; each message it parsed
comes here (``Dialogue.take``). A prompt starts a turn and ``cancel`` stops it (the turn's life:
``agent.leg.turns``); ``config`` and playback reports set the defaults of the next turn
(``agent.leg.messages.Defaults``); listening messages and microphone frames go to the sans-I/O
``VoiceInput`` (``agent.leg.voice_input``), whose actions are carried out here: say an event,
recognize an utterance, ask the turn model about a pause, pause the reply the user speaks over
(and play it on at the resume bound if no words came), cut the running turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from starlette.websockets import WebSocketDisconnect

from agent.events import (
    AudioDelta,
    ConfigApplied,
    ErrorEvent,
    Event,
    Refused,
    ReplyResumed,
    Transcript,
    TurnCancelled,
    TurnStart,
)
from agent.leg.continuation import Continuation
from agent.leg.hooks import TurnStarter, TurnWithdrawal, VoiceCheck
from agent.leg.messages import (
    CONFIG,
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
)
from agent.leg.reply_hold import PlayOnTimer
from agent.leg.turns import EarlyReply, TurnRunner
from agent.leg.voice_input import (
    Action,
    CancelTurn,
    JudgeTurn,
    PauseReply,
    Recognize,
    Send,
    StartTurn,
    VoiceInput,
    resumed,
)
from agent.listening.eager import EagerRecognition
from agent.listening.endpointer import Resumed
from agent.listening.listener import ListeningService, Utterance
from agent.listening.recognizer import RecognitionError
from agent.listening.turn_model import TurnModelError
from agent.requests import BadRequest, PlaybackReport, TurnRequest

log = logging.getLogger("agent.ws")


class Wire(Protocol):
    """What a dialogue sends through its socket."""

    async def tell(self, event: Event) -> None:
        """Send one of the socket's own events, observed."""

    async def send(self, event: Event) -> None:
        """Send one of a turn's events (a JSON text frame)."""

    async def send_audio(self, seq: int, pcm: bytes) -> None:
        """Send one binary audio frame of segment ``seq``."""


class Dialogue:
    """A socket's turns, defaults and listening. Without ``listening``, a ``listen`` is refused
    (``listening_unavailable``); without ``withdraw``, no reply begins early."""

    def __init__(
        self,
        wire: Wire,
        start_turn: TurnStarter,
        conversation: str,
        *,
        check_voice: VoiceCheck,
        listening: ListeningService | None,
        withdraw: TurnWithdrawal | None,
        on_turn_end: Callable[[], None],
    ) -> None:
        self._wire = wire
        self._check_voice = check_voice
        self._defaults = Defaults()
        self._input = VoiceInput(listening)
        self._turns = TurnRunner(
            start_turn,
            conversation,
            self._deliver,
            on_stop=self._input.turn_stopped,
            on_end=on_turn_end,
        )
        self._continuation = Continuation(conversation, withdraw, wire.tell)
        self._eager = None if listening is None else EagerRecognition(listening.recognizer)
        self._early = None
        self._play_on = PlayOnTimer(self._play_on_due)  # a paused reply, at its bound
        if self._eager is not None:
            self._early = EarlyReply(self._turns, self._eager, self._start_held, withdraw)

    @property
    def turn_running(self) -> bool:
        """A turn runs that the user hears."""
        return self._turns.running

    async def take(self, message: ClientMessage) -> None:
        """Do what ``message`` asks; raises ``BadRequest`` (``MessageRefused`` for a message
        refused with its own type)."""
        if not isinstance(message, MicFrame | Config | PlaybackReport) and self._early:
            await self._early.drop()  # the user acts: a guess at their turn is moot
        now, running = loop_now(), self._turns.running
        if isinstance(message, MicFrame):
            await self._do(self._input.frame(message, now, running))
        elif isinstance(message, Prompt):
            self._continuation.forget()  # typed: not the user speaking on
            await self._start(self._defaults.turn(message))
        elif isinstance(message, Cancel):
            await self._wire.send(TurnCancelled(await self._turns.stop()))
        elif isinstance(message, Config):
            checked = await voice_checked(self._check_voice, message)
            self._defaults = self._defaults.configured(checked)
            await self._wire.send(ConfigApplied(self._defaults.sent))
        elif isinstance(message, PlaybackReport):
            self._defaults = self._defaults.played(message)
        else:
            await self._do(await self._listening(message, now, running))

    async def close(self) -> None:
        """The socket ends: drop the early reply and the eager recognition, stop the turn."""
        self._play_on.cancel()
        if self._early is not None:
            await self._early.drop()
        if self._eager is not None:
            self._eager.drop()
        await self._turns.stop()

    async def _listening(
        self, message: Listen | ListenStop | TalkEnd | TalkStart, now: float, running: bool
    ) -> list[Action]:
        """What a listening message asks; refused with its own type. ``listen`` loads the
        recognizer and the turn model on the process's first ``listen``."""
        try:
            if isinstance(message, Listen):
                service = self._input.service()
                try:
                    await service.recognizer.load()
                    if service.turn_judge is not None:
                        await service.turn_judge.load()
                except (RecognitionError, TurnModelError) as exc:
                    raise BadRequest(exc.code, str(exc)) from exc
                return self._input.listen(message.mode, now)
            if isinstance(message, ListenStop):
                return self._input.listen_stop(now)
            if isinstance(message, TalkStart):
                return self._input.talk_start(now, running)
            return self._input.talk_end()
        except BadRequest as exc:
            raise MessageRefused(exc, message.type) from exc

    async def _do(self, actions: list[Action]) -> None:
        """Carry out what ``VoiceInput`` says, in order."""
        for action in actions:
            if isinstance(action, Send):
                if isinstance(action.event, TurnCancelled):  # a barge-in after its turn.end
                    self._continuation.cut(action.event.turn_id)
                elif isinstance(action.event, ReplyResumed):  # the page's report of the pause
                    self._defaults = self._defaults.resumed(action.event.turn_id)  # is moot
                await self._wire.tell(action.event)
            elif isinstance(action, Recognize):
                await self._recognize(action.utterance, action.murmurs)
            elif isinstance(action, JudgeTurn):
                await self._judge(action)
            elif isinstance(action, PauseReply):
                await self._wire.tell(action.event)
                self._play_on.at(action.resume_at)
            elif isinstance(action, StartTurn):
                await self._start_spoken(action.text)
            elif isinstance(action, Resumed):  # only while listening, with an EarlyReply
                await self._early.resumed()  # type: ignore[union-attr]
            else:
                await self._cancel(action)

    async def _cancel(self, action: CancelTurn) -> None:
        stopped = await self._turns.stop()  # None if its `turn.end` went out
        self._continuation.cut(stopped or action.playing)
        await self._wire.send(TurnCancelled(stopped or action.playing))

    async def _judge(self, action: JudgeTurn) -> None:
        """Score a pause with the turn model on its thread; the reader waits meanwhile, so the
        answer applies where it was asked (frames wait in the socket, as for recognition). An
        answer that leaves the turn to wait starts eager recognition (and the early reply) on
        the pause's audio: after the model, so that its decision never shares the cores."""
        service = self._input.service()
        judge, config, paused = service.turn_judge, service.config, action.paused
        assert judge is not None and self._eager is not None and self._early is not None
        try:
            turn = await judge.judge(paused.pcm)
        except TurnModelError as exc:  # the silence rule decides this pause
            log.warning("the turn model failed: %s", exc)
            turn = None
        actions = self._input.judged(paused.ticket, turn, loop_now(), self._turns.running)
        await self._do(actions)
        if actions or not config.eager_asr or not (paused.last or turn is None):
            return  # the turn ended, or the model is asked again in this pause
        held = self._input.hold.holding  # a reply was paused for these words: none starts early
        self._eager.start(paused.ticket, paused.pcm, murmurs=held)
        if turn is not None and config.eager_start and self._early.enabled and not held:
            await self._early.drop()  # an older pause's, if speech did not say resumed
            self._early.begin(paused.ticket)

    async def _recognize(self, utterance: Utterance, murmurs: bool) -> None:
        """Send the utterance's transcript, then start its turn as a typed prompt would (or
        let the reply begun on it at its pause be heard); ``murmurs``: over a paused reply."""
        assert self._eager is not None and self._early is not None  # utterances need listening
        said = await self._early.confirm(utterance)
        if said is not None:
            await self._wire.tell(said)
            await self._turns.release()
            self._continuation.taken()
            return
        try:
            recognition = await self._eager.recognize(utterance.pcm, utterance.ticket, murmurs)
        except RecognitionError as exc:
            await self._wire.tell(ErrorEvent(exc.code, str(exc)))
            await self._do(self._input.heard("", loop_now(), self._turns.running))
            return
        text = recognition.text
        actions = self._input.heard(text, loop_now(), self._turns.running)
        backchannel = bool(text) and not any(isinstance(a, StartTurn) for a in actions)
        await self._wire.tell(
            Transcript(text, utterance.audio_ms, recognition.asr_ms, backchannel=backchannel)
        )
        await self._do(actions)

    async def _start_spoken(self, text: str) -> None:
        """Start the turn of the user's words (after what they continue, if anything)."""
        prompt = await self._continuation.prompt(text, self._defaults.request.heard)
        try:
            await self._start(self._defaults.turn(prompt))
        except BadRequest as exc:  # e.g. a voice in the defaults the TTS server lost
            await self._wire.tell(Refused(exc.code, exc.message, "transcript"))

    async def _play_on_due(self) -> None:
        """The paused reply plays on if no words have come by its bound."""
        with contextlib.suppress(WebSocketDisconnect):  # the client went: nothing to resume
            await self._do(resumed(self._input.hold.due(loop_now())))

    async def _start_held(self, text: str) -> None:
        prompt = await self._continuation.prompt(text, self._defaults.request.heard)
        await self._start(self._defaults.turn(prompt), held=True)

    async def _start(self, request: TurnRequest, held: bool = False) -> None:
        await self._turns.start(request, held=held)
        self._defaults = self._defaults.played(None)  # the report went with this turn
        if not held:
            self._continuation.taken()

    async def _deliver(self, event: Event) -> None:
        """Send one of the running turn's events; the voice input learns what went out."""
        if isinstance(event, AudioDelta):
            await self._wire.send_audio(event.seq, event.pcm)
            self._input.audio_sent(loop_now(), len(event.pcm), self._turns.turn_id)
            return
        if isinstance(event, TurnStart):
            self._input.turn_started(event.turn_id)
        await self._wire.send(event)


def loop_now() -> float:
    """The running loop's clock: the voice input's ``now``."""
    return asyncio.get_running_loop().time()


async def voice_checked(check_voice: VoiceCheck, config: Config) -> Config:
    """``config`` with its voice as the TTS server will take it; raises ``MessageRefused``
    (``unknown_voice``), and the previous defaults stay."""
    voice = config.options.get("voice")
    if not isinstance(voice, tuple):  # none named, or unset (null)
        return config
    try:
        checked = await check_voice(voice)
    except BadRequest as exc:
        raise MessageRefused(exc, CONFIG) from exc
    return replace(config, options={**config.options, "voice": checked})
