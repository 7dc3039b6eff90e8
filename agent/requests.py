"""What a client asks for, checked: a ``POST /invocations`` body or a ``/ws`` message.

Every JSON the agent reads goes through ``decode_json``: bytes that are not UTF-8 are
``invalid_utf8``, and a decoder failure of any other kind, ``RecursionError`` included, is the
typed ``invalid_json``. ``parse_request`` makes a ``TurnRequest`` of a decoded payload;
``check_options`` is the one check of the fields a prompt and a ``/ws`` ``config`` share;
``check_fields`` refuses a field no rule names (``unknown_field``: a typo such as ``sped`` is
not ignored). ``parse_playback_report`` checks a playback report (``heard``: where the client
stopped playing a turn's audio). Any refusal is a ``BadRequest``; ``refusal`` is its HTTP
answer, and ``http_error`` the same shape for what the routing refuses (404, 405). Limits:
docs/agent.md, "Limits".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeVar

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from observability.request_body import read_bounded
from tts_protocol import (
    DEFAULT_SPEED,
    ProtocolError,
    VoiceMix,
    check_marks,
    check_speed,
    check_voice,
)

Mode = Literal["stream", "batch"]
TURN_MODES: tuple[Mode, ...] = ("stream", "batch")
OPTION_FIELDS = ("voice", "speed", "mode", "marks")
PLAYBACK_FIELDS = ("turn_id", "seq", "ms")
REQUEST_FIELDS = ("prompt", *OPTION_FIELDS, "heard")  # a POST body's; a /ws prompt's, and `type`
MAX_PROMPT_CHARS = 4_000
MAX_BODY_BYTES = 64 * 1024  # a POST /invocations body; the longest prompt fits many times
MAX_JSON_DEPTH = 32  # a request is flat; this keeps any later re-parse off the stack limit
STATUS = {"body_too_large": 413}  # HTTP status of a refusal; any other is 400
HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}  # what the routing refuses
T = TypeVar("T")


class BadRequest(ValueError):
    """The request cannot start a turn; ``code`` is machine-readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


class TurnOptions(NamedTuple):
    """How a turn is spoken: the fields of a request besides its prompt."""

    mode: Mode
    voice: VoiceMix | None  # parsed once, here; the session sends its canonical name
    speed: float
    marks: bool


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What the client asked for."""

    prompt: str
    mode: Mode = "stream"
    voice: VoiceMix | None = None
    speed: float = DEFAULT_SPEED
    marks: bool = False  # relay word timings (segment.marks events)
    heard: PlaybackReport | None = None  # where the client stopped playing the previous turn


@dataclass(frozen=True, slots=True)
class PlaybackReport:
    """The client stopped playing turn ``turn_id`` at ``ms`` into segment ``seq``'s audio."""

    turn_id: str
    seq: int
    ms: float


def parse_request(payload: object) -> TurnRequest:
    """Validate an invocation payload; raises ``BadRequest``.

    Whether the voice exists on the TTS server is ``VoiceAgent.start``'s question.
    """
    if not isinstance(payload, dict):
        raise BadRequest("invalid_request", "the body must be a JSON object")
    check_fields(payload, REQUEST_FIELDS)
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise BadRequest("invalid_prompt", "'prompt' must be a non-empty string")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise BadRequest("prompt_too_long", f"'prompt' is over {MAX_PROMPT_CHARS} characters")
    heard = payload.get("heard")
    options = check_options(payload)._asdict()
    return TurnRequest(
        prompt, **options, heard=None if heard is None else parse_playback_report(heard)
    )


def parse_playback_report(value: object) -> PlaybackReport:
    """A playback report ``{"turn_id", "seq", "ms"}``; raises ``BadRequest`` (``invalid_heard``)."""
    rule = '\'heard\' must be {"turn_id": string, "seq": integer >= 0, "ms": number >= 0}'
    if not isinstance(value, dict) or set(value) != set(PLAYBACK_FIELDS):
        raise BadRequest("invalid_heard", rule)
    turn_id, seq, ms = (value[field] for field in PLAYBACK_FIELDS)
    if not isinstance(turn_id, str) or not 0 < len(turn_id) <= 64:
        raise BadRequest("invalid_heard", f"{rule}: 'turn_id' is a turn.start's turn_id")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise BadRequest("invalid_heard", f"{rule}: 'seq' is {seq!r}")
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms) or ms < 0:
        raise BadRequest("invalid_heard", f"{rule}: 'ms' is {ms!r}")
    return PlaybackReport(turn_id, seq, float(ms))


def check_options(fields: Mapping[str, object]) -> TurnOptions:
    """The options ``fields`` name (an absent one is its default); raises ``BadRequest``.

    ``voice``, ``speed`` and ``marks`` follow the TTS protocol's own rules (``tts_protocol``),
    so the agent refuses exactly what the TTS server would.
    """
    mode = fields.get("mode", "stream")
    if mode not in TURN_MODES:
        raise BadRequest("invalid_mode", f"'mode' must be one of {', '.join(TURN_MODES)}")
    voice = _checked("invalid_voice", check_voice, fields.get("voice"))
    speed = _checked("invalid_speed", check_speed, fields.get("speed"))
    marks = _checked("invalid_marks", check_marks, fields.get("marks"))
    return TurnOptions(mode, voice, speed, marks)


def check_fields(fields: Mapping[str, object], allowed: Sequence[str]) -> None:
    """Refuse any field ``allowed`` does not name, with ``unknown_field``."""
    unknown = [name for name in fields if name not in allowed]
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        plural = "s" if len(unknown) > 1 else ""
        message = f"unknown field{plural} {names}; the fields are {', '.join(allowed)}"
        raise BadRequest("unknown_field", message)


def _checked(code: str, check: Callable[[object], T], value: object) -> T:
    """``check(value)``, the protocol's own rule, with its refusal as a ``BadRequest``."""
    try:
        return check(value)
    except ProtocolError as exc:
        raise BadRequest(code, exc.message) from exc


def decode_json(data: str | bytes, what: str) -> object:
    """``data`` as JSON; raises ``BadRequest``: ``invalid_utf8`` for bytes that are not UTF-8
    (JSON's one encoding, RFC 8259), ``invalid_json`` for anything else."""
    if isinstance(data, bytes):
        try:
            data = data.decode()
        except UnicodeDecodeError as exc:
            message = f"{what} is not UTF-8: {exc.reason} at byte {exc.start}"
            raise BadRequest("invalid_utf8", message) from exc
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, int digits; nesting
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise BadRequest("invalid_json", f"{what} is not JSON: {reason}") from exc
    if json_depth(value) > MAX_JSON_DEPTH:
        raise BadRequest("invalid_json", f"{what} is nested over {MAX_JSON_DEPTH} levels deep")
    return value


def json_depth(value: object) -> int:
    """How deeply arrays and objects nest in ``value`` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body, read no further than ``limit`` bytes; raises ``BadRequest``."""
    body = await read_bounded(request, limit)
    if body is None:
        raise BadRequest("body_too_large", f"the body is over {limit} bytes")
    return body


def refusal(exc: BadRequest) -> JSONResponse:
    """The HTTP answer to a refused request: its typed error, 413 or 400."""
    return JSONResponse(exc.to_json(), status_code=STATUS.get(exc.code, 400))


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's ``HTTPException`` (no route: 404; wrong method: 405, with its ``Allow``
    header) in the shape of every other refusal: ``{"error": {"code", "message"}}``."""
    if not isinstance(exc, HTTPException):
        raise exc
    code = HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    where = f"{request.method} {request.url.path}"
    if exc.status_code == 404:
        message = f"nothing at {where}"
    elif exc.status_code == 405 and exc.headers and "Allow" in exc.headers:
        message = f"{where} is not allowed; use {exc.headers['Allow']}"
    else:
        message = f"{where}: {exc.detail}"
    body = BadRequest(code, message).to_json()
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
