"""Protocol v1's messages: pure types with encode/decode, shared by server and client.

No I/O happens here. Control messages are JSON objects; audio travels as raw PCM s16le mono
in binary frames. A client message may arrive in a text *or* a binary frame (SageMaker
delivers client messages as binary frames), so ``decode_client`` accepts ``str`` and ``bytes``.
See ``docs/protocol.md``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from tts_protocol.constants import (
    AUDIO_FORMAT,
    CHANNELS,
    DEFAULT_MAX_TEXT_CHARS,
    DEFAULT_SPEED,
    PROTOCOL_VERSION,
    SAMPLE_RATE,
)
from tts_protocol.errors import ErrorCode, ProtocolError
from tts_protocol.validation import (
    VoiceMix,
    check_fields,
    check_id,
    check_marks,
    check_normalize,
    check_reply,
    speak_fields,
    voice_name,
)

# --- client -> server -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Speak:
    """Synthesize ``text``; the reply is start, audio frames, then end (or cancelled/error).

    With ``marks``, ``marks`` messages with the words' timings come before their audio.
    With ``normalize`` false the text is spoken as written (no numbers read out, ...).
    ``reply`` names the reply the segment belongs to: one listener plays a reply's segments
    back to back, and a segment of another reply starts a new playback (the server's pace
    counts nothing buffered for it). None: the connection's segments are one playback.
    """

    id: str
    text: str
    voice: VoiceMix | None = None  # parsed once, by the decoder; None: the server's default
    speed: float = DEFAULT_SPEED
    marks: bool = False
    normalize: bool = True
    reply: str | None = None
    type: str = field(default="speak", init=False)


@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel one segment (``id``) or, with ``id=None``, everything queued and in progress."""

    id: str | None = None
    type: str = field(default="cancel", init=False)


@dataclass(frozen=True, slots=True)
class Close:
    """Finish what is queued, then close normally (1000)."""

    type: str = field(default="close", init=False)


ClientMessage = Speak | Cancel | Close
# The fields each client message may carry; any other is refused (``check_fields``).
SPEAK_FIELDS = ("type", "id", "text", "voice", "speed", "marks", "normalize", "reply")
CANCEL_FIELDS = ("type", "id")
CLOSE_FIELDS = ("type",)


# --- server -> client -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ready:
    """Sent once, right after the connection is accepted."""

    voices: tuple[str, ...]
    default_voice: str
    protocol: int = PROTOCOL_VERSION
    sample_rate: int = SAMPLE_RATE
    format: str = AUDIO_FORMAT
    channels: int = CHANNELS
    type: str = field(default="ready", init=False)


@dataclass(frozen=True, slots=True)
class Start:
    """Audio frames for segment ``id`` follow."""

    id: str
    type: str = field(default="start", init=False)


@dataclass(frozen=True, slots=True)
class Word:
    """A word heard from ``start_ms`` to ``end_ms`` after the start of its segment's audio.

    ``text`` is the word as written in the ``speak``; ``spoken`` the words said for it where
    normalization read it out ("$5.99": "five dollars and ninety-nine cents"), else None.
    """

    text: str
    start_ms: float
    end_ms: float
    spoken: str | None = None


@dataclass(frozen=True, slots=True)
class Marks:
    """Timings of the words of segment ``id`` whose audio follows (sent only if asked for)."""

    id: str
    words: tuple[Word, ...]
    type: str = field(default="marks", init=False)


@dataclass(frozen=True, slots=True)
class End:
    """Segment ``id`` is complete: ``samples`` PCM samples were sent in ``synth_ms``."""

    id: str
    samples: int
    synth_ms: float
    type: str = field(default="end", init=False)


@dataclass(frozen=True, slots=True)
class Cancelled:
    """Segment ``id`` was cancelled; no further audio for it will be sent."""

    id: str
    type: str = field(default="cancelled", init=False)


@dataclass(frozen=True, slots=True)
class Error:
    """A request failed; ``id`` is the segment it concerns, or None."""

    id: str | None
    code: ErrorCode
    message: str
    type: str = field(default="error", init=False)

    @classmethod
    def of(cls, exc: ProtocolError) -> Error:
        """The ``error`` frame that reports ``exc``."""
        return cls(id=exc.id, code=exc.code, message=exc.message)


ServerMessage = Ready | Start | Marks | End | Cancelled | Error
Message = ClientMessage | ServerMessage


def encode(message: Message) -> str:
    """Serialize a control message to compact JSON text."""
    payload = asdict(message)
    if isinstance(message, Speak):
        payload["voice"] = None if message.voice is None else voice_name(message.voice)
        if message.speed == DEFAULT_SPEED:
            del payload["speed"]  # the default goes unsaid, as a client that omits it does
        if not message.marks:
            del payload["marks"]  # the frame an older server knows
        if message.normalize:
            del payload["normalize"]
    if isinstance(message, Marks):
        for word in payload["words"]:
            if word["spoken"] is None:
                del word["spoken"]  # the word is said as written
    if isinstance(message, Speak | Cancel):
        payload = {k: v for k, v in payload.items() if v is not None}
    if isinstance(message, Ready):
        payload["voices"] = list(message.voices)
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def parse_object(data: str | bytes, what: str = "frame") -> dict[str, Any]:
    """Decode a UTF-8 JSON object from a text or binary frame (or what ``what`` names: an
    HTTP body)."""
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(ErrorCode.INVALID_JSON, f"{what} is not UTF-8: {exc}") from exc
    try:
        obj = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ProtocolError(ErrorCode.INVALID_JSON, f"{what} is not JSON: {exc.msg}") from exc
    except RecursionError as exc:  # thousands of nested arrays: refuse, do not crash
        raise ProtocolError(ErrorCode.INVALID_JSON, f"{what} is nested too deeply") from exc
    except ValueError as exc:  # an integer of over 4,300 digits (sys.int_info.str_digits_check)
        raise ProtocolError(ErrorCode.INVALID_JSON, f"{what} is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "message must be a JSON object")
    return obj


def decode_client(
    data: str | bytes, *, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
) -> ClientMessage:
    """Decode one client frame, text or binary. Raises ``ProtocolError`` with a typed code."""
    obj = parse_object(data)
    kind = obj.get("type")
    if kind == "speak":
        check_fields(obj, SPEAK_FIELDS, "'speak'")
        id, text, voice, speed = speak_fields(obj, max_text_chars)
        marks = check_marks(obj.get("marks"), id)
        normalize = check_normalize(obj.get("normalize"), id)
        return Speak(id, text, voice, speed, marks, normalize, check_reply(obj.get("reply"), id))
    if kind == "cancel":
        check_fields(obj, CANCEL_FIELDS, "'cancel'")
        return Cancel(id=check_id(obj.get("id")))
    if kind == "close":
        check_fields(obj, CLOSE_FIELDS, "'close'")
        return Close()
    raise ProtocolError(
        ErrorCode.INVALID_MESSAGE,
        f"unknown message type {kind!r}; expected 'speak', 'cancel' or 'close'",
        obj.get("id") if isinstance(obj.get("id"), str) else None,
    )


def _field(obj: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = obj.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, f"server message lacks a valid {name!r}")
    return value


def _finite(obj: dict[str, Any], name: str) -> float:
    """A finite JSON number as a float; an integer too big for a float is malformed, not a crash."""
    try:
        value = float(_field(obj, name, (int, float)))
    except OverflowError:
        value = math.inf
    if not math.isfinite(value):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, f"server message's {name!r} is not finite")
    return value


def _count(obj: dict[str, Any], name: str) -> int:
    value: int = _field(obj, name, int)
    if value < 0:
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, f"server message's {name!r} is negative")
    return value


def _words(items: list[Any]) -> tuple[Word, ...]:
    words = []
    for item in items:
        if not isinstance(item, dict):
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "a mark must be a JSON object")
        start, end = _finite(item, "start_ms"), _finite(item, "end_ms")
        if not 0 <= start <= end:
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "a mark needs 0 <= start_ms <= end_ms")
        spoken = item.get("spoken")
        if spoken is not None and not isinstance(spoken, str):
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "a mark's 'spoken' must be a string")
        words.append(Word(_field(item, "text", str), start, end, spoken))
    return tuple(words)


def decode_server(data: str | bytes) -> ServerMessage:
    """Decode one server control frame (text). Raises ``ProtocolError`` when malformed."""
    obj = parse_object(data)
    kind = obj.get("type")
    if kind == "ready":
        voices = _field(obj, "voices", list)
        return Ready(
            voices=tuple(str(v) for v in voices),
            default_voice=_field(obj, "default_voice", str),
            protocol=_field(obj, "protocol", int),
            sample_rate=_field(obj, "sample_rate", int),
            format=_field(obj, "format", str),
            channels=_field(obj, "channels", int),
        )
    if kind == "start":
        return Start(id=_field(obj, "id", str))
    if kind == "marks":
        return Marks(id=_field(obj, "id", str), words=_words(_field(obj, "words", list)))
    if kind == "end":
        return End(
            id=_field(obj, "id", str),
            samples=_count(obj, "samples"),
            synth_ms=_finite(obj, "synth_ms"),
        )
    if kind == "cancelled":
        return Cancelled(id=_field(obj, "id", str))
    if kind == "error":
        segment = obj.get("id")
        raw_code = obj.get("code")
        known = isinstance(raw_code, str) and raw_code in ErrorCode.__members__.values()
        code = ErrorCode(raw_code) if known else ErrorCode.INTERNAL
        return Error(
            id=segment if isinstance(segment, str) else None,
            code=code,
            message=str(obj.get("message", "")),
        )
    raise ProtocolError(ErrorCode.INVALID_MESSAGE, f"unknown server message type {kind!r}")
