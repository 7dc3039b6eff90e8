"""One socket's listening: audio frames in; speech events, utterances and barge-ins out.

A ``Listener`` is made by a ``listen`` message and lives until ``listen.stop`` (or the
socket's end). Hands-free, every frame goes through the VAD and the endpointer; push-to-talk,
``talk.start`` and ``talk.end`` bracket an utterance and the VAD does not run. It returns what
the socket does next, in order: events to send, an ``Utterance`` to recognize, a ``Hold``
(hands-free speech over the reply for ``barge_in_ms``: pause it while its words are heard), a
``BargeIn`` (cut the reply: a push-to-talk press, or speech over it for ``interrupt_ms``), a
``Paused`` to ask the turn model about and a ``Resumed`` (speech after that pause: drop what was
started on it). Audio may run ahead of real time by
``burst_s`` at most (a tab that stalled and caught up); beyond that frames are dropped with
``audio_too_fast``, so a client can never make a socket spend more than real time's worth of
VAD. Sans-I/O: the clock is
passed in and nothing here awaits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import ListeningConfig
from agent.events import ErrorEvent, Event, Listening, Refused, SpeechEnd, SpeechStart
from agent.listening.endpointer import Ended, Endpointer, Paused, Resumed, Started
from agent.listening.recognizer import Recognizer
from agent.listening.settings import SAMPLE_FORMAT, pcm_ms
from agent.listening.turn_model import TurnJudge, TurnScore
from agent.listening.vad import VoiceActivity
from agent.requests import BadRequest
from tts_protocol import BYTES_PER_SAMPLE

ListenMode = Literal["hands_free", "push_to_talk"]
LISTEN_MODES: tuple[ListenMode, ...] = ("hands_free", "push_to_talk")
MIN_TALK_MS = 100  # a shorter push-to-talk press is a slip, not an utterance


@dataclass(frozen=True, slots=True)
class Utterance:
    """16 kHz s16le audio to recognize; its transcript becomes a prompt. ``ticket``: the
    ``Paused`` that heard the same speech (its eager recognition may stand for this one)."""

    pcm: bytes
    ticket: int | None = None

    @property
    def audio_ms(self) -> float:
        return pcm_ms(len(self.pcm))


@dataclass(frozen=True, slots=True)
class BargeIn:
    """The user is talking over the running turn: cancel it."""


@dataclass(frozen=True, slots=True)
class Hold:
    """The user may be talking over the reply (hands-free): pause it until their words say
    whether they take the turn."""


ListenerOutput = Event | Utterance | BargeIn | Hold | Paused | Resumed


@dataclass(frozen=True, slots=True)
class ListeningService:
    """What a front door gives its sockets to listen with: the knobs, the shared recognizer and,
    unless the silence rule alone ends turns, the shared turn model."""

    config: ListeningConfig
    recognizer: Recognizer
    turn_judge: TurnJudge | None = None

    def state(self, mode: ListenMode | None) -> Listening:
        """The ``listening`` answer for ``mode`` (None: stopped)."""
        config = self.config
        return Listening(
            mode,
            MIC_SAMPLE_RATE,
            SAMPLE_FORMAT,
            config.silence_ms,
            config.barge_in_ms,
            int(config.max_utterance_s * 1000),
            config.max_frame_bytes,
        )


def listening_service(
    config: ListeningConfig, recognizer: Recognizer | None = None
) -> ListeningService:
    """What a front door listens with: ``recognizer``, else the process's shared Whisper, and
    the process's Smart Turn where ``endpointing`` is ``turn_model``."""
    from agent.listening.turn_model import shared_smart_turn
    from agent.listening.whisper import shared_whisper

    judge = shared_smart_turn() if config.endpointing == "turn_model" else None
    return ListeningService(config, recognizer or shared_whisper(config), judge)


def speech_end(ended: Ended, reason: str) -> SpeechEnd:
    """``speech.end`` for a hands-free utterance, with how its end was decided."""
    turn = ended.turn
    return SpeechEnd(
        ended.at_ms,
        pcm_ms(len(ended.pcm)),
        reason,
        wait_ms=ended.waited_ms if ended.reason == "silence" else None,
        turn=None if turn is None else ("complete" if ended.complete else "incomplete"),
        turn_score=None if turn is None else turn.score,
        turn_ms=None if turn is None else turn.cost_ms,
    )


class Listener:
    """A socket's listening in one mode."""

    def __init__(
        self,
        config: ListeningConfig,
        mode: ListenMode,
        clock: Callable[[], float] = time.monotonic,
        turn_model: bool = False,
    ) -> None:
        self.mode = mode
        self._config = config
        self._clock = clock
        self._started = clock()
        self._received = 0  # bytes of audio taken since listen
        self._told_too_fast = False
        self._vad = VoiceActivity() if mode == "hands_free" else None
        self._endpointer = Endpointer(config, turn_model)
        self._barged = False  # this utterance held the reply (and will be recognized)
        self._interrupted = False  # ... and went on long enough to cut it
        self._talk: bytearray | None = None  # push-to-talk: the press's audio so far
        self._talk_started_at = 0.0
        self._talk_cut = False
        self._preroll = bytearray()  # push-to-talk: audio from before the press

    @property
    def buffered_bytes(self) -> int:
        """Audio held now (bounded by the cap, the pre-roll and one window)."""
        talk = len(self._talk) if self._talk is not None else 0
        return self._endpointer.buffered_bytes + talk + len(self._preroll)

    @property
    def _at_ms(self) -> float:
        return pcm_ms(self._received)

    def feed(self, pcm: bytes, agent_speaking: bool) -> list[ListenerOutput]:
        """Take one checked frame (``agent.leg.voice_input.check_frame``); ``agent_speaking``:
        a turn runs or the page still plays its audio (``agent.leg.voice_input``)."""
        if not self._paced(len(pcm)):
            if self._told_too_fast:
                return []
            self._told_too_fast = True
            ahead = f"{self._config.burst_s} s ahead of real time"
            return [Refused("audio_too_fast", f"audio came over {ahead}; dropped", "audio")]
        self._told_too_fast = False
        self._received += len(pcm)
        if self._vad is None:
            return self._record(pcm)
        outputs: list[ListenerOutput] = []
        for window, probability in self._vad.windows(pcm):
            for found in self._endpointer.push(window, probability):
                if isinstance(found, Started):
                    self._barged = self._interrupted = False
                    outputs.append(SpeechStart(found.at_ms))
                elif isinstance(found, Paused):
                    outputs += self._paused(found, agent_speaking)
                elif isinstance(found, Resumed):
                    outputs.append(found)
                else:
                    outputs += self._ended(found, agent_speaking)
            outputs += self._over_the_reply(agent_speaking)
        return outputs

    def _over_the_reply(self, agent_speaking: bool) -> list[ListenerOutput]:
        """Speech of ``barge_in_ms`` while the agent speaks holds the reply; of ``interrupt_ms``,
        it cuts it without waiting for its words."""
        speech_ms, config = self._endpointer.speech_ms, self._config
        outputs: list[ListenerOutput] = []
        if agent_speaking and not self._barged and speech_ms >= config.barge_in_ms:
            self._barged = True
            self._endpointer.over_reply(True)
            outputs.append(Hold())
        if self._barged and not self._interrupted and speech_ms >= config.interrupt_ms:
            self._interrupted = True
            self._endpointer.over_reply(False)
            outputs.append(BargeIn())
        return outputs

    def _paused(self, paused: Paused, agent_speaking: bool) -> list[ListenerOutput]:
        """Ask the turn model, unless the speech is under the barge-in threshold while the
        agent speaks (it will be ``too_short``): then the silence rule ends it, as ever, and
        nothing is spent beside the reply's synthesis."""
        if not agent_speaking or self._barged:
            return [paused]
        return self.judged(paused.ticket, None, agent_speaking)

    def judged(
        self, ticket: int, turn: TurnScore | None, agent_speaking: bool
    ) -> list[ListenerOutput]:
        """The turn model's answer to a ``Paused`` (None: it failed): maybe the turn's end."""
        ended = self._endpointer.judged(ticket, turn)
        return [out for end in ended for out in self._ended(end, agent_speaking)]

    def _paced(self, size: int) -> bool:
        allowed_s = self._clock() - self._started + self._config.burst_s
        return self._received + size <= allowed_s * MIC_SAMPLE_RATE * BYTES_PER_SAMPLE

    def _ended(self, ended: Ended, agent_speaking: bool) -> list[ListenerOutput]:
        if agent_speaking and not self._barged:  # under the barge-in threshold: not for us
            return [speech_end(ended, "too_short")]
        utterance = Utterance(ended.pcm, ended.ticket)
        return [*self._cut(ended.reason), speech_end(ended, ended.reason), utterance]

    def _cut(self, reason: str) -> list[Event]:
        if reason != "max_length":
            return []
        cap = self._config.max_utterance_s
        return [ErrorEvent("utterance_too_long", f"an utterance is at most {cap} s; cut there")]

    # --- push-to-talk --------------------------------------------------------------------

    def _record(self, pcm: bytes) -> list[ListenerOutput]:
        if self._talk is None:
            self._preroll += pcm
            keep = self._config.preroll_ms * MIC_SAMPLE_RATE // 1000 * BYTES_PER_SAMPLE
            del self._preroll[: max(0, len(self._preroll) - keep)]
            return []
        if self._talk_cut:
            return []  # the rest of a press that was cut at the cap
        self._talk += pcm
        if len(self._talk) < self._config.max_utterance_bytes:
            return []
        self._talk_cut = True
        return self._talk_over("max_length")

    def talk_start(self, agent_speaking: bool) -> list[ListenerOutput]:
        """The user pressed to talk: an utterance starts (and cuts a running turn at once)."""
        self._push_to_talk("talk.start")
        if self._talk is not None:
            raise BadRequest("already_talking", "'talk.start' came twice without 'talk.end'")
        self._talk, self._talk_cut = bytearray(self._preroll), False
        self._preroll.clear()
        self._talk_started_at = self._at_ms
        return [SpeechStart(self._talk_started_at), *([BargeIn()] if agent_speaking else [])]

    def talk_end(self) -> list[ListenerOutput]:
        """The user let go: the utterance ends here, with no silence to wait for."""
        self._push_to_talk("talk.end")
        if self._talk is None:
            raise BadRequest("not_talking", "'talk.end' came without 'talk.start'")
        if self._talk_cut:
            self._talk = None
            return []
        return self._talk_over("talk.end")

    def _talk_over(self, reason: str) -> list[ListenerOutput]:
        assert self._talk is not None
        pcm = bytes(self._talk)
        self._talk = None if reason == "talk.end" else self._talk[:0]
        if self._at_ms - self._talk_started_at < MIN_TALK_MS:  # the press itself, not the pre-roll
            return [SpeechEnd(self._at_ms, pcm_ms(len(pcm)), "too_short")]
        return [
            *self._cut(reason),
            SpeechEnd(self._at_ms, pcm_ms(len(pcm)), reason),
            Utterance(pcm),
        ]

    def _push_to_talk(self, message: str) -> None:
        if self.mode != "push_to_talk":
            raise BadRequest(
                "not_push_to_talk", f"{message!r} is for push_to_talk; listening is {self.mode}"
            )

    def stop(self) -> list[Event]:
        """Listening stops: an utterance in progress is dropped, and said to end."""
        talking = self._talk is not None and not self._talk_cut
        speaking = self._endpointer.state == "speech"
        self._talk = None
        self._endpointer.reset()
        if not (talking or speaking):
            return []
        return [SpeechEnd(self._at_ms, 0.0, "listen.stop")]
