"""Synthesis protocol v1: pure message types with encode/decode, shared by server and client.

No I/O happens here. Control messages are JSON objects; audio travels as raw PCM s16le mono
in binary frames. A client message may arrive in a text *or* a binary frame (SageMaker
delivers client messages as binary frames), so ``decode_client`` accepts ``str`` and ``bytes``.
See ``docs/protocol.md``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

PROTOCOL_VERSION = 1
SAMPLE_RATE = 24_000
AUDIO_FORMAT = "pcm_s16le"
CHANNELS = 1
BYTES_PER_SAMPLE = 2
MAX_AUDIO_FRAME_BYTES = 32 * 1024
MIN_SPEED = 0.5
MAX_SPEED = 2.0
DEFAULT_MAX_TEXT_CHARS = 2_000
MAX_ID_CHARS = 128


class ErrorCode(StrEnum):
    """Every error code the server may send."""

    INVALID_JSON = "invalid_json"
    INVALID_MESSAGE = "invalid_message"
    EMPTY_TEXT = "empty_text"
    TEXT_TOO_LONG = "text_too_long"
    UNKNOWN_VOICE = "unknown_voice"
    QUEUE_FULL = "queue_full"
    SYNTHESIS_FAILED = "synthesis_failed"
    INTERNAL = "internal"


class ProtocolError(Exception):
    """A message that cannot be accepted; ``id`` names the segment when it is known."""

    def __init__(self, code: ErrorCode, message: str, id: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.id = id

    def to_message(self) -> Error:
        """The ``error`` frame that reports this failure."""
        return Error(id=self.id, code=self.code, message=self.message)


# --- client -> server -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Speak:
    """Synthesize ``text``; the reply is start, audio frames, then end (or cancelled/error)."""

    id: str
    text: str
    voice: str | None = None
    speed: float | None = None
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


ServerMessage = Ready | Start | End | Cancelled | Error
Message = ClientMessage | ServerMessage


def encode(message: Message) -> str:
    """Serialize a control message to compact JSON text."""
    payload = asdict(message)
    if isinstance(message, Speak | Cancel):
        payload = {k: v for k, v in payload.items() if v is not None}
    if isinstance(message, Ready):
        payload["voices"] = list(message.voices)
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def parse_object(data: str | bytes) -> dict[str, Any]:
    """Decode a UTF-8 JSON object from a text or binary frame."""
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(ErrorCode.INVALID_JSON, f"frame is not UTF-8: {exc}") from exc
    try:
        obj = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ProtocolError(ErrorCode.INVALID_JSON, f"frame is not JSON: {exc.msg}") from exc
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "message must be a JSON object")
    return obj


def _optional_id(obj: dict[str, Any]) -> str | None:
    value = obj.get("id")
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise ProtocolError(
            ErrorCode.INVALID_MESSAGE, f"'id' must be a non-empty string of <= {MAX_ID_CHARS} chars"
        )
    return value


def validate_speak(obj: dict[str, Any], max_text_chars: int = DEFAULT_MAX_TEXT_CHARS) -> Speak:
    """Build a ``Speak`` from a decoded object, checking every field."""
    id = _optional_id(obj)
    if id is None:
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'speak' needs an 'id'")
    text, voice, speed = obj.get("text"), obj.get("voice"), obj.get("speed")
    if not isinstance(text, str):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'text' must be a string", id)
    if not text.strip():
        raise ProtocolError(ErrorCode.EMPTY_TEXT, "'text' is empty", id)
    if len(text) > max_text_chars:
        raise ProtocolError(
            ErrorCode.TEXT_TOO_LONG,
            f"'text' has {len(text)} chars; the limit is {max_text_chars}",
            id,
        )
    if voice is not None and (not isinstance(voice, str) or not voice):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'voice' must be a non-empty string", id)
    if speed is not None:
        if (
            isinstance(speed, bool)
            or not isinstance(speed, int | float)
            or not math.isfinite(speed)
        ):
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'speed' must be a number", id)
        if not MIN_SPEED <= speed <= MAX_SPEED:
            raise ProtocolError(
                ErrorCode.INVALID_MESSAGE, f"'speed' must be in [{MIN_SPEED}, {MAX_SPEED}]", id
            )
        speed = float(speed)
    return Speak(id=id, text=text, voice=voice, speed=speed)


def decode_client(
    data: str | bytes, *, max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
) -> ClientMessage:
    """Decode one client frame, text or binary. Raises ``ProtocolError`` with a typed code."""
    obj = parse_object(data)
    kind = obj.get("type")
    if kind == "speak":
        return validate_speak(obj, max_text_chars)
    if kind == "cancel":
        return Cancel(id=_optional_id(obj))
    if kind == "close":
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
    if kind == "end":
        return End(
            id=_field(obj, "id", str),
            samples=_field(obj, "samples", int),
            synth_ms=float(_field(obj, "synth_ms", (int, float))),
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


def split_audio(pcm: bytes, max_frame_bytes: int = MAX_AUDIO_FRAME_BYTES) -> list[bytes]:
    """Split PCM bytes into frames of at most ``max_frame_bytes``, on sample boundaries."""
    step = max_frame_bytes - max_frame_bytes % BYTES_PER_SAMPLE
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]
