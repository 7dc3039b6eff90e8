"""Field validators of protocol v1, shared by the server's decoder and the agent's requests.

Each raises ``ProtocolError`` with a typed code; ``id`` names the segment in the error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from tts_protocol.constants import (
    DEFAULT_MAX_TEXT_CHARS,
    DEFAULT_SPEED,
    MAX_ID_CHARS,
    MAX_SPEED,
    MIN_SPEED,
)
from tts_protocol.errors import ErrorCode, ProtocolError

VoiceMix = tuple[tuple[str, float], ...]  # (voice name, share of the mix); shares sum to 1
MAX_BLEND_VOICES = 8
BLEND_STEPS = 10_000  # a blend's shares are written to 1/10000
_ROUNDING = 1e-6  # float error allowed in a share read back from a canonical name
_BLEND_PART = re.compile(r"\s*([^\s+()]+)\s*(?:\(\s*([^()]*?)\s*\))?\s*")


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


def check_voice(value: object, id: str | None = None) -> VoiceMix | None:
    """A voice name or blend, parsed (None: the server's default); whether it exists is the
    server's. Later layers take the parsed mix: nothing parses a voice twice."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'voice' must be a non-empty string", id)
    return parse_voice(value, id)


def parse_voice(value: str, id: str | None = None) -> VoiceMix:
    """``name``, or a blend ``a+b`` / ``a(0.7)+b(0.3)``, as ``(name, share)`` pairs.

    Shares are the weights (1 each when omitted) divided by their sum, pairs sorted by name, so
    the same mix always reads the same. A malformed blend is an ``invalid_message``.
    """

    def bad(problem: str) -> ProtocolError:
        return ProtocolError(ErrorCode.INVALID_MESSAGE, f"'voice' {value!r}: {problem}", id)

    weights: dict[str, float] = {}
    parts = value.split("+")
    if len(parts) > MAX_BLEND_VOICES:
        raise bad(f"a blend has at most {MAX_BLEND_VOICES} voices")
    for part in parts:
        match = _BLEND_PART.fullmatch(part)
        if match is None:
            raise bad(f"{part.strip()!r} is not 'name' or 'name(weight)'")
        name, weight_text = match.group(1), match.group(2)
        weight = _weight(weight_text, bad) if weight_text is not None else 1.0
        if name in weights:
            raise bad(f"{name!r} appears twice")
        weights[name] = weight
    total = sum(weights.values())
    mix = tuple((name, weights[name] / total) for name in sorted(weights))
    for name, share in mix:
        if share * BLEND_STEPS < 1 - _ROUNDING:
            raise bad(f"the share of {name!r} is below 1/{BLEND_STEPS}")
    return mix


def voice_name(mix: VoiceMix) -> str:
    """The canonical spelling of a mix: ``name`` alone, else ``a(0.7)+b(0.3)``.

    Shares (each at least ``1 / BLEND_STEPS``, as ``parse_voice`` ensures) are written to
    ``1 / BLEND_STEPS`` and sum to 1 (largest remainders), so ``parse_voice`` of the name gives
    that name again.
    """
    if len(mix) == 1:
        return mix[0][0]
    scaled = [share * BLEND_STEPS for _, share in mix]
    steps = [math.floor(value + _ROUNDING) for value in scaled]  # each >= 1 (parse_voice)
    by_remainder = sorted(range(len(mix)), key=lambda i: steps[i] - scaled[i])
    for i in by_remainder[: BLEND_STEPS - sum(steps)]:
        steps[i] += 1
    pairs = zip(mix, steps, strict=True)
    return "+".join(f"{name}({step / BLEND_STEPS:g})" for (name, _), step in pairs)


def _weight(text: str, bad: Callable[[str], ProtocolError]) -> float:
    try:
        weight = float(text)
    except ValueError:
        raise bad(f"weight {text!r} is not a number") from None
    if not math.isfinite(weight) or weight <= 0:
        raise bad(f"weight {text!r} must be a positive number")
    return weight


def check_speed(value: object, id: str | None = None) -> float:
    """A speed factor in [``MIN_SPEED``, ``MAX_SPEED``]; None is ``DEFAULT_SPEED``."""
    if value is None:
        return DEFAULT_SPEED
    finite = not isinstance(value, float) or math.isfinite(value)  # an int is, however long
    if isinstance(value, bool) or not isinstance(value, int | float) or not finite:
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'speed' must be a number", id)
    if not MIN_SPEED <= value <= MAX_SPEED:
        raise ProtocolError(
            ErrorCode.INVALID_MESSAGE, f"'speed' must be in [{MIN_SPEED}, {MAX_SPEED}]", id
        )
    return float(value)


def check_marks(value: object, id: str | None = None) -> bool:
    """Whether word timings are asked for: ``true`` or ``false`` (None: false)."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'marks' must be true or false", id)
    return value


def check_reply(value: object, id: str | None = None) -> str | None:
    """The reply a segment belongs to: None, or a non-empty string of at most ``MAX_ID_CHARS``."""
    if value is not None and (not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS):
        raise ProtocolError(
            ErrorCode.INVALID_MESSAGE,
            f"'reply' must be a non-empty string of <= {MAX_ID_CHARS} chars",
            id,
        )
    return value


def check_normalize(value: object, id: str | None = None) -> bool:
    """Whether the text is normalized before it is spoken: ``true`` (None: true) or ``false``."""
    if value is None:
        return True
    if not isinstance(value, bool):
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'normalize' must be true or false", id)
    return value


def check_fields(obj: dict[str, Any], known: tuple[str, ...], what: str) -> None:
    """Refuse a field ``obj`` (a ``what`` message or body) does not define, typo or not.

    A misspelt optional field (``sped``) would otherwise be dropped silently, and a field of a
    newer protocol would be ignored where its sender expects it to act. The error names the
    segment when ``obj`` has a readable id.
    """
    unknown = [name for name in obj if name not in known]
    if unknown:
        segment = obj.get("id") if isinstance(obj.get("id"), str) else None
        raise ProtocolError(
            ErrorCode.INVALID_MESSAGE,
            f"unrecognized field {', '.join(map(repr, unknown))} in {what}; "
            f"the fields are {', '.join(known)}",
            segment,
        )


def speak_fields(
    obj: dict[str, Any], max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
) -> tuple[str, str, VoiceMix | None, float]:
    """The checked ``(id, text, voice, speed)`` of a decoded ``speak`` object."""
    id = check_id(obj.get("id"))
    if id is None:
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'speak' needs an 'id'")
    text = check_text(obj.get("text"), max_text_chars, id)
    return id, text, check_voice(obj.get("voice"), id), check_speed(obj.get("speed"), id)
