"""A socket's voice input, sans-I/O: listening messages and microphone frames in, actions out.

``VoiceInput`` owns what speaking to the agent needs besides I/O: the socket's ``Listener``
(made by ``listen``, gone at ``listen.stop``), the playback clock (what the page still plays of
the audio it was sent) and the barge-in rule. It is fed messages and frames with the loop's
clock and whether a turn runs, and returns what the socket does next, in order, as
``ServerProtocol`` does for the TTS wire:

- ``Send``: send this event to the client (and count it: refusals, listening events);
- ``Recognize``: recognize this utterance, then start a turn of its transcript;
- ``JudgeTurn``: ask the turn model about the utterance so far, and answer ``judged``;
- ``CancelTurn``: stop the running turn (user speech over it) and say ``cancelled``;
- ``PauseReply``: say ``reply.paused``, and resume it at ``resume_ms`` unless words came;
- ``StartTurn``: start a turn of the words the user said;
- ``Resumed``: speech came back after a judged pause: drop what was started on it.

The barge-in rule: the agent is speaking while a turn runs *or* the page still plays audio it
was sent (a reply synthesized faster than real time is all sent before it is heard). A
push-to-talk press over it cuts it: the running turn is cancelled; a turn that has ended but
whose audio still plays is named in a ``cancelled`` so that the page stops it. Hands-free,
speech of ``barge_in_ms`` over it pauses it (``reply.paused``; the playback clock stops with
the page's player), and its transcript decides (``heard``): any word but a backchannel cuts
it as a press would, and the words are the next prompt; only backchannels, or nothing, and it
plays on (``reply.resumed``), no prompt. Speech that lasts ``interrupt_ms`` cuts it without
waiting for the words; no words by ``resume_ms`` after the pause, and it plays on
(docs/listening.md, "False interruptions").
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.config import ListeningConfig
from agent.core.playback import Playback
from agent.events import Event, ReplyPaused, ReplyResumed, TurnCancelled
from agent.leg.messages import AUDIO, MicFrame
from agent.leg.reply_hold import ReplyHold
from agent.listening.backchannel import only_backchannel
from agent.listening.endpointer import Paused, Resumed
from agent.listening.listener import (
    BargeIn,
    Hold,
    Listener,
    ListenerOutput,
    ListeningService,
    ListenMode,
    Utterance,
)
from agent.listening.settings import SAMPLE_FORMAT
from agent.listening.turn_model import TurnScore
from agent.requests import BadRequest
from tts_protocol import BYTES_PER_SAMPLE


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``event`` to the client."""

    event: Event


@dataclass(frozen=True, slots=True)
class Recognize:
    """Recognize ``utterance``; its transcript starts a turn as a typed prompt would.
    ``murmurs``: it was said over a paused reply (``Recognizer.recognize``)."""

    utterance: Utterance
    murmurs: bool = False


@dataclass(frozen=True, slots=True)
class JudgeTurn:
    """Score ``paused.pcm`` with the turn model (off the event loop), then answer ``judged``."""

    paused: Paused


@dataclass(frozen=True, slots=True)
class CancelTurn:
    """Stop the running turn; ``playing`` is the turn whose audio the page still plays."""

    playing: str | None


@dataclass(frozen=True, slots=True)
class PauseReply:
    """Say ``event`` (``reply.paused``); at ``resume_at`` (the loop's clock) ask ``due``."""

    event: ReplyPaused
    resume_at: float


@dataclass(frozen=True, slots=True)
class StartTurn:
    """Start a turn of ``text``, the user's words, as a typed prompt would."""

    text: str


Action = Send | Recognize | JudgeTurn | CancelTurn | PauseReply | StartTurn | Resumed


def check_frame(frame: MicFrame, config: ListeningConfig) -> bytes:
    """A microphone frame's PCM: whole samples, at most ``max_frame_ms``; raises ``BadRequest``."""
    pcm = frame.pcm
    if not pcm or len(pcm) % BYTES_PER_SAMPLE:
        raise BadRequest(
            "invalid_audio_frame",
            f"an audio frame is whole {SAMPLE_FORMAT} samples, not {len(pcm)} bytes",
        )
    if len(pcm) > config.max_frame_bytes:
        raise BadRequest(
            "audio_frame_too_large",
            f"an audio frame is at most {config.max_frame_ms} ms ({config.max_frame_bytes} bytes)",
        )
    return pcm


def passed_on(output: ListenerOutput) -> Action:
    """A listener's output but a barge-in, as an action: an utterance is recognized; a pause is
    judged; a resumption and an event go on."""
    if isinstance(output, Utterance):
        return Recognize(output)
    if isinstance(output, Paused):
        return JudgeTurn(output)
    if isinstance(output, Resumed):
        return output
    assert not isinstance(output, BargeIn | Hold)  # the listener's only other outputs
    return Send(output)


def resumed(event: ReplyResumed | None) -> list[Action]:
    """Say ``event``, a paused reply playing on (None: nothing to say)."""
    return [] if event is None else [Send(event)]


def speaking(playback: Playback, now: float, turn_running: bool) -> bool:
    """The agent speaks: a turn runs, or the page still plays audio it was sent."""
    return turn_running or playback.playing(now)


def stopped(listener: Listener | None) -> list[Action]:
    """What a listener says when it is dropped: an utterance in progress ends."""
    return [] if listener is None else [Send(event) for event in listener.stop()]


class VoiceInput:
    """One socket's listening, playback clock and barge-in; without ``listening``, every
    listening message is refused (``listening_unavailable``)."""

    def __init__(self, listening: ListeningService | None) -> None:
        self.listening = listening
        self.playback = Playback()
        self._listener: Listener | None = None
        resume_s = 0.0 if listening is None else listening.config.resume_ms / 1000
        self.hold = ReplyHold(self.playback, resume_s)  # a reply paused for the user's speech

    # --- messages (each raises ``BadRequest``) -----------------------------------------------

    def listen(self, mode: ListenMode, now: float) -> list[Action]:
        """Listen in ``mode`` from now on (an utterance in progress in another is dropped, and a
        reply paused for it plays on)."""
        listening = self.service()
        actions, self._listener = [*stopped(self._listener), *resumed(self.hold.play_on(now))], None
        try:
            turn_model = listening.turn_judge is not None
            self._listener = Listener(listening.config, mode, turn_model=turn_model)
        except ImportError as exc:  # an install without the `listen` extra
            raise BadRequest("listening_unavailable", f"no VAD here: {exc}") from exc
        return [*actions, Send(listening.state(mode))]

    def listen_stop(self, now: float) -> list[Action]:
        """Stop listening, and say so (a reply paused for speech plays on: no words will come)."""
        listening = self.service()
        actions, self._listener = [*stopped(self._listener), *resumed(self.hold.play_on(now))], None
        return [*actions, Send(listening.state(None))]

    def talk_start(self, now: float, turn_running: bool) -> list[Action]:
        """Push-to-talk pressed: an utterance starts, and cuts the agent if it speaks."""
        self.service()
        listener = self._listening_now("talk.start")
        outputs = listener.talk_start(speaking(self.playback, now, turn_running))
        return self._act(outputs, now, turn_running)

    def talk_end(self) -> list[Action]:
        """Push-to-talk released: the utterance ends here (a release never barges in)."""
        self.service()
        return [passed_on(output) for output in self._listening_now("talk.end").talk_end()]

    def frame(self, frame: MicFrame, now: float, turn_running: bool) -> list[Action]:
        """One microphone frame."""
        listener = self._listening_now(AUDIO)
        assert self.listening is not None  # a listener exists only with it
        pcm = check_frame(frame, self.listening.config)
        due = resumed(self.hold.due(now))  # before what this frame ends: words come after it
        outputs = listener.feed(pcm, speaking(self.playback, now, turn_running))
        return [*due, *self._act(outputs, now, turn_running)]

    def judged(
        self, ticket: int, turn: TurnScore | None, now: float, turn_running: bool
    ) -> list[Action]:
        """The turn model's answer to a ``JudgeTurn`` (None: it failed)."""
        if self._listener is None:  # listening stopped meanwhile
            return []
        outputs = self._listener.judged(ticket, turn, speaking(self.playback, now, turn_running))
        return self._act(outputs, now, turn_running)

    def heard(self, text: str, now: float, turn_running: bool) -> list[Action]:
        """The transcript ``text`` of an utterance: a turn of it, unless it paused the reply and
        holds only backchannels (or nothing): then the reply plays on. Words that pause it
        cut it first."""
        assert self.listening is not None  # an utterance exists only with it
        pause = self.hold.taken()
        if pause is None:
            return [StartTurn(text)] if text else []
        if only_backchannel(text, self.listening.config.backchannels):
            return resumed(self.hold.play_on(now, pause))
        return [*self._cut(now, turn_running), StartTurn(text)]

    # --- the turn's audio, as the socket relays it ----------------------------------------

    def turn_started(self, turn_id: str) -> None:
        """A new turn starts: the page drops what an older turn left (and any pause)."""
        self.playback.started(turn_id)
        self.hold.drop()

    def audio_sent(self, now: float, pcm_bytes: int, turn_id: str | None) -> None:
        """``pcm_bytes`` of turn ``turn_id``'s audio went to the page."""
        self.playback.sent(now, pcm_bytes // BYTES_PER_SAMPLE, turn_id)

    def turn_stopped(self) -> None:
        """The turn was cut: the page stops playing on ``cancelled``."""
        self.playback.stop()
        self.hold.drop()

    # --- rules --------------------------------------------------------------------------

    def _act(self, outputs: list[ListenerOutput], now: float, turn_running: bool) -> list[Action]:
        actions: list[Action] = []
        for output in outputs:
            if isinstance(output, BargeIn):
                actions += self._cut(now, turn_running)
            elif isinstance(output, Hold):
                if speaking(self.playback, now, turn_running):  # until the user's words decide
                    actions.append(PauseReply(self.hold.pause(now), now + self.hold.resume_s))
            elif isinstance(output, Utterance):  # a murmur over a paused reply is read as one
                actions.append(Recognize(output, self.hold.holding))
            else:
                actions.append(passed_on(output))
        return actions

    def _cut(self, now: float, turn_running: bool) -> list[Action]:
        """Cut the reply the user speaks over (a paused one too)."""
        self.hold.drop()
        playing = self.playback.turn_id if self.playback.playing(now) else None
        if turn_running:  # the same stop as a `cancel`
            return [CancelTurn(playing)]
        if playing is None:
            return []
        self.playback.stop()  # its turn has ended; its audio still plays
        return [Send(TurnCancelled(playing))]

    def service(self) -> ListeningService:
        """What this socket listens with; raises ``BadRequest`` where the server does not."""
        if self.listening is None:
            raise BadRequest("listening_unavailable", "this server does not listen")
        return self.listening

    def _listening_now(self, what: str) -> Listener:
        if self._listener is None:
            raise BadRequest("not_listening", f"{what} before 'listen'; send 'listen' first")
        return self._listener
