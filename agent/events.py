"""The browser-facing events, one frozen dataclass each (docs/events.md).

``Event.to_json`` is the one JSON form of an event: ``agent.sse`` wraps it in SSE lines,
``agent.ws`` sends it as a WebSocket text frame, except an ``AudioDelta``, which it sends as a
binary frame of its raw ``pcm`` (base64 is only in its JSON form). Consumers tell events apart
by their class; ``type`` is the name on the wire.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from agent.browser_leg import AUDIO_HEADER, MAX_FRAME_BYTES, MAX_MESSAGE_BYTES
from tts_protocol import BYTES_PER_SAMPLE, SAMPLE_RATE, Word, samples_ms

AUDIO_EVENT_MS = 100  # at most this much audio per audio.delta event
AUDIO_EVENT_BYTES = SAMPLE_RATE * AUDIO_EVENT_MS // 1000 * BYTES_PER_SAMPLE


class Event:
    """An event: its ``type``, then its fields in order, as one JSON object."""

    __slots__ = ()
    type: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The event as a JSON object: ``type`` first, then its fields."""
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        return {"type": self.type, **{field.name: getattr(self, field.name) for field in fields}}

    def to_json(self) -> str:
        """Compact JSON, non-ASCII escaped (so its length is its size in bytes)."""
        return json.dumps(self.to_dict(), separators=(",", ":"))


# --- a turn's events, in the order they come -----------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnStart(Event):
    type: ClassVar[str] = "turn.start"
    turn_id: str
    mode: str


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    type: ClassVar[str] = "text.delta"
    text: str


@dataclass(frozen=True, slots=True)
class Segment(Event):
    """Segment ``seq``'s text was sent to synthesis."""

    type: ClassVar[str] = "segment"
    seq: int
    text: str


@dataclass(frozen=True, slots=True)
class SegmentMarks(Event):
    """Word timings of segment ``seq`` (ms from its audio's start), before the audio they time."""

    type: ClassVar[str] = "segment.marks"
    seq: int
    words: tuple[Word, ...]

    def to_dict(self) -> dict[str, Any]:
        words = [
            {"text": w.text, "start_ms": w.start_ms, "end_ms": w.end_ms}
            | ({} if w.spoken is None else {"spoken": w.spoken})
            for w in self.words
        ]
        return {"type": self.type, "seq": self.seq, "words": words}


@dataclass(frozen=True, slots=True)
class AudioDelta(Event):
    """At most ``AUDIO_EVENT_MS`` of segment ``seq``'s audio: PCM s16le mono."""

    type: ClassVar[str] = "audio.delta"
    seq: int
    pcm: bytes

    def to_dict(self) -> dict[str, Any]:
        audio = base64.b64encode(self.pcm).decode("ascii")
        return {"type": self.type, "seq": self.seq, "audio": audio, "sample_rate": SAMPLE_RATE}


@dataclass(frozen=True, slots=True)
class SegmentEnd(Event):
    type: ClassVar[str] = "segment.end"
    seq: int
    audio_ms: float

    @classmethod
    def after(cls, seq: int, samples: int) -> SegmentEnd:
        """The end of segment ``seq``, which had ``samples`` samples of audio."""
        return cls(seq, samples_ms(samples))


@dataclass(frozen=True, slots=True)
class ToolStart(Event):
    """The agent started tool ``name``; ``id`` is the model's id of this call, ``args`` its input
    as JSON (AG-UI's ``TOOL_CALL_ARGS``; our own wire leaves it out)."""

    type: ClassVar[str] = "tool.start"
    name: str
    id: str
    args: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "id": self.id}


@dataclass(frozen=True, slots=True)
class ToolEnd(Event):
    """Tool call ``id`` ended: ``ok``, ``error`` (reported to the model, which goes on) or
    ``cancelled`` (the turn was cut while it ran), after ``duration_ms``; ``result``, the text
    the model got back (AG-UI's ``TOOL_CALL_RESULT``; our own wire leaves it out)."""

    type: ClassVar[str] = "tool.end"
    id: str
    name: str
    status: str
    duration_ms: float
    result: str = ""

    def to_dict(self) -> dict[str, Any]:
        fields = {"id": self.id, "name": self.name, "status": self.status}
        return {"type": self.type, **fields, "duration_ms": self.duration_ms}


@dataclass(frozen=True, slots=True)
class ErrorEvent(Event):
    """A problem the turn (or the socket) reports; the turn goes on if it can."""

    type: ClassVar[str] = "error"
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class TurnMetrics(Event):
    """Milliseconds from the request to the first text, the first audio, and this event; the
    turn's tool calls and the time during which at least one ran."""

    type: ClassVar[str] = "metrics"
    ttft_ms: float | None
    ttfa_ms: float | None
    total_ms: float | None
    segments: int
    audio_ms: float
    tool_calls: int = 0
    tool_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class TurnEnd(Event):
    type: ClassVar[str] = "turn.end"


def audio_deltas(seq: int, pcm: bytes) -> list[AudioDelta]:
    """PCM s16le mono as ``audio.delta`` events of at most ``AUDIO_EVENT_MS`` each."""
    return [
        AudioDelta(seq, pcm[i : i + AUDIO_EVENT_BYTES])
        for i in range(0, len(pcm), AUDIO_EVENT_BYTES)
    ]


# --- the /ws replies ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SocketReady(Event):
    """The first frame on every socket: what the client needs to read the rest."""

    type: ClassVar[str] = "ready"
    conversation: str
    sample_rate: int = SAMPLE_RATE
    audio_header_bytes: int = AUDIO_HEADER.size
    max_message_bytes: int = MAX_MESSAGE_BYTES


@dataclass(frozen=True, slots=True)
class ConfigApplied(Event):
    """The answer to a ``config`` message: the prompt defaults now in force."""

    type: ClassVar[str] = "config"
    defaults: Mapping[str, object]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.defaults}


@dataclass(frozen=True, slots=True)
class TurnCancelled(Event):
    """The answer to a ``cancel``: the turn that stopped (None: none was running)."""

    type: ClassVar[str] = "cancelled"
    turn_id: str | None


@dataclass(frozen=True, slots=True)
class Refused(ErrorEvent):
    """The ``error`` answering a message that was refused; the connection stays open.

    ``in_reply_to`` is the message's type, or None when it could not be read.
    """

    in_reply_to: str | None


# --- listening (/ws): what the server heard ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Listening(Event):
    """The answer to ``listen`` and ``listen.stop``: how the socket listens now.

    ``mode`` is None once listening stopped. ``at_ms`` positions in later events count the
    audio received since this ``listen``.
    """

    type: ClassVar[str] = "listening"
    mode: str | None
    sample_rate: int
    format: str
    silence_ms: int
    barge_in_ms: int
    max_utterance_ms: int
    max_frame_bytes: int


@dataclass(frozen=True, slots=True)
class SpeechStart(Event):
    """The user started speaking ``at_ms`` into the audio received since ``listen``."""

    type: ClassVar[str] = "speech.start"
    at_ms: float


@dataclass(frozen=True, slots=True)
class SpeechEnd(Event):
    """The utterance ended: its speech stopped ``at_ms`` in; ``audio_ms`` of it is recognized.

    ``reason``: ``silence`` (end of turn), ``talk.end`` (push-to-talk), ``max_length`` (cut at
    the cap), and, with nothing recognized, ``too_short`` (speech under the barge-in threshold
    while the agent spoke) or ``listen.stop``. Hands-free: ``wait_ms``, the silence waited
    after the speech (``silence`` only); ``turn``, the turn model's decision on the pause that
    ended it (``complete``, ``incomplete``; None: not asked, or no answer), its ``turn_score``
    and what it cost (``turn_ms``).
    """

    type: ClassVar[str] = "speech.end"
    at_ms: float
    audio_ms: float
    reason: str
    wait_ms: float | None = None
    turn: str | None = None
    turn_score: float | None = None
    turn_ms: float | None = None


@dataclass(frozen=True, slots=True)
class Transcript(Event):
    """What was recognized of an utterance of ``audio_ms``, in ``asr_ms``; ``final``: not a
    partial. A non-empty final text is the prompt of the turn that follows, unless
    ``backchannel``: it was said over a paused reply and holds only backchannel words, so no
    turn follows and the reply plays on (docs/listening.md, "False interruptions")."""

    type: ClassVar[str] = "transcript"
    text: str
    audio_ms: float
    asr_ms: float
    final: bool = True
    backchannel: bool = False


@dataclass(frozen=True, slots=True)
class TurnWithdrawn(Event):
    """The user spoke on over turn ``turn_id`` before a sample of its reply was heard: that
    turn is withdrawn (gone from the history, its reply not to be shown as said), and what the
    user said then, ``prompt``, leads the prompt of their next turn: both utterances as one
    (docs/listening.md, "Turn continuation"). It comes before that next turn's
    ``turn.start``, after or before its ``transcript``."""

    type: ClassVar[str] = "turn.withdrawn"
    turn_id: str
    prompt: str


@dataclass(frozen=True, slots=True)
class ReplyPaused(Event):
    """The user speaks over turn ``turn_id``'s reply (hands-free, for ``barge_in_ms``): the
    client pauses its playback where it is, keeps what comes, and waits for ``reply.resumed``
    or ``cancelled`` (None: the turn had not started; pause what plays). docs/listening.md,
    "False interruptions"."""

    type: ClassVar[str] = "reply.paused"
    turn_id: str | None


@dataclass(frozen=True, slots=True)
class ReplyResumed(Event):
    """The speech that paused turn ``turn_id``'s reply held no words but backchannels ("mm-hm",
    "okay"), or none came within ``resume_ms``: the client plays on from where it paused."""

    type: ClassVar[str] = "reply.resumed"
    turn_id: str | None


# --- frames within the limit (AgentCore's WebSocket frame: MAX_FRAME_BYTES) -----------------

CUT = "…"  # ends a text cut short to fit a frame


def fitted(event: Event, limit: int = MAX_FRAME_BYTES) -> list[Event]:
    """``event`` as events whose JSON (``to_json``, one WebSocket text frame each) is at most
    ``limit`` bytes, whatever its text's length or script.

    A ``text.delta`` is split between characters and ``segment.marks`` into runs of words, in
    order (clients append both); any other event is one message, so its longest text field is
    cut short, ending in ``CUT`` (an error's message, a transcript shown on the page: the turn
    itself keeps the whole text).
    """
    if len(event.to_json()) <= limit:
        return [event]
    if isinstance(event, TextDelta) and len(event.text) > 1:
        half = len(event.text) // 2
        parts = [TextDelta(event.text[:half]), TextDelta(event.text[half:])]
        return [fit for part in parts for fit in fitted(part, limit)]
    if isinstance(event, SegmentMarks) and len(event.words) > 1:
        half = len(event.words) // 2
        runs = (event.words[:half], event.words[half:])
        return [fit for run in runs for fit in fitted(SegmentMarks(event.seq, run), limit)]
    if isinstance(event, SegmentMarks) and event.words:
        (word,) = event.words
        # a character escapes to at most 12 bytes (an astral one, as two 6-byte escapes); the
        # rest of the message is well under half the limit
        short = dataclasses.replace(word, text=_cut(word.text, limit // 24), spoken=None)
        return [SegmentMarks(event.seq, (short,))]
    return [_shortened(event, limit)]


def _shortened(event: Event, limit: int) -> Event:
    """``event`` with its longest text field cut until the whole fits ``limit``."""
    texts = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}  # type: ignore[arg-type]
    texts = {name: value for name, value in texts.items() if isinstance(value, str)}
    if not texts:
        raise ValueError(f"a {event.type} event of {len(event.to_json())} bytes cannot be cut")
    name = max(texts, key=lambda key: len(texts[key]))
    over = len(event.to_json()) - limit
    text = texts[name]
    while over > 0 and text:
        keep = max(0, len(text) - max(1, over // 12) - 1)  # a character is 1 to 12 bytes
        text = text[:keep]
        event = dataclasses.replace(event, **{name: text + CUT})  # type: ignore[type-var]
        over = len(event.to_json()) - limit
    return event


def _cut(text: str, most: int) -> str:
    """``text`` in at most ``most`` characters, ``CUT`` last if it was cut."""
    return text if len(text) <= most else text[: max(0, most - 1)] + CUT
