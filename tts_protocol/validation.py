"""Field validators of protocol v1, shared by the server's decoder and the agent's requests.

Each raises ``ProtocolError`` with a typed code; ``id`` names the segment in the error.
"""

from __future__ import annotations

import math
from typing import Any

from tts_protocol.constants import DEFAULT_MAX_TEXT_CHARS, MAX_ID_CHARS, MAX_SPEED, MIN_SPEED
from tts_protocol.errors import ErrorCode, ProtocolError


def check_id(value: object) -> str | None:
    """A segment id: None, or a non-empty string of at most ``MAX_ID_CHARS``."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
        raise ProtocolError(
            ErrorCode.INVALID_MESSAGE, f"'id' must be a non-empty string of <= {MAX_ID_CHARS} chars"
        )
    return value


def check_text(value: object, max_chars: int, id: str | None = None) -> str:
    """Text to speak: a string with something to say, at most ``max_chars`` long."""
    if not isinstance(value, str):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'text' must be a string", id)
    if not value.strip():
        raise ProtocolError(ErrorCode.EMPTY_TEXT, "'text' is empty", id)
    if len(value) > max_chars:
        raise ProtocolError(
            ErrorCode.TEXT_TOO_LONG, f"'text' has {len(value)} chars; the limit is {max_chars}", id
        )
    return value


def check_voice(value: object, id: str | None = None) -> str | None:
    """A voice name (None: the server's default). Whether it exists is the server's to say."""
    if value is not None and (not isinstance(value, str) or not value):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'voice' must be a non-empty string", id)
    return value


def check_speed(value: object, id: str | None = None) -> float | None:
    """A speed factor in [``MIN_SPEED``, ``MAX_SPEED``] (None: 1.0)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'speed' must be a number", id)
    if not MIN_SPEED <= value <= MAX_SPEED:
        raise ProtocolError(
            ErrorCode.INVALID_MESSAGE, f"'speed' must be in [{MIN_SPEED}, {MAX_SPEED}]", id
        )
    return float(value)


def speak_fields(
    obj: dict[str, Any], max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
) -> tuple[str, str, str | None, float | None]:
    """The checked ``(id, text, voice, speed)`` of a decoded ``speak`` object."""
    id = check_id(obj.get("id"))
    if id is None:
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'speak' needs an 'id'")
    text = check_text(obj.get("text"), max_text_chars, id)
    return id, text, check_voice(obj.get("voice"), id), check_speed(obj.get("speed"), id)
