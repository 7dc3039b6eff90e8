"""OpenAI's speech request: its body, the checks Kokoro adds, and errors in OpenAI's shape.

Errors use OpenAI's JSON shape ``{"error": {"message", "type", "param", "code"}}``;
``ApiError.refused`` puts the server's own refusals (not ready, busy) into it, ``ApiError.of``
the engine's (``prepare_speech``: an unknown voice, unsupported text).
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tts_protocol import MAX_SPEED, MIN_SPEED, ErrorCode, ProtocolError, parse_voice
from tts_protocol.validation import VoiceMix
from tts_protocol.voices import resolve_voice
from tts_server.engines.base import Engine
from tts_server.engines.prepared import Prepared, Refusal
from tts_server.normalize import Options
from tts_server.service import RETRY_AFTER_S, SynthesisRefused

MODELS = ("kokoro", "tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15")
MAX_INPUT_CHARS = 4096  # OpenAI's limit
OPENAI_MIN_SPEED, OPENAI_MAX_SPEED = 0.25, 4.0
PARAMS = {"voice": "voice", "text": "input"}  # a refusal's field, as OpenAI's parameter


class ApiError(Exception):
    """An error answered in OpenAI's shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.kind = kind

    def body(self) -> dict[str, Any]:
        """``{"error": {...}}`` as OpenAI writes it."""
        error = {"message": self.message, "type": self.kind, "param": self.param}
        return {"error": {**error, "code": self.code}}

    @classmethod
    def refused(cls, refused: SynthesisRefused) -> ApiError:
        """The server's refusal (503 not ready, 429 busy) in OpenAI's words."""
        code = "busy" if refused.code is ErrorCode.BUSY else "service_unavailable"
        return cls(refused.status, refused.message, kind="server_error", code=code)

    @classmethod
    def of(cls, refusal: Refusal) -> ApiError:
        """The engine's refusal of the request, naming OpenAI's parameter."""
        return cls(refusal.status, refusal.message, param=PARAMS[refusal.field], code=refusal.code)

    def response(self) -> JSONResponse:
        """The JSON response; a 429 or 503 says when to try again."""
        retry = self.status in (429, 503)
        headers = {"Retry-After": str(RETRY_AFTER_S)} if retry else None
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


class VoiceId(BaseModel):
    """OpenAI's custom-voice reference, ``{"id": ...}``: here, a Kokoro voice or blend."""

    model_config = ConfigDict(extra="forbid")
    id: str


class NormalizationOptions(BaseModel):
    """Kokoro-FastAPI's ``normalization_options``: which readings the normalizer makes.

    Every field defaults to true (Kokoro-FastAPI's ``unit_normalization`` defaults to false;
    here units are read only after a number, so they are on as well).
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    normalize: bool = True
    unit_normalization: bool = True
    url_normalization: bool = True
    email_normalization: bool = True
    phone_normalization: bool = True
    replace_remaining_symbols: bool = True
    optional_pluralization_normalization: bool = True

    def options(self) -> Options | None:
        """The engine's switches; None when normalization is off."""
        if not self.normalize:
            return None
        return Options(
            urls=self.url_normalization,
            emails=self.email_normalization,
            phones=self.phone_normalization,
            units=self.unit_normalization,
            symbols=self.replace_remaining_symbols,
            plurals=self.optional_pluralization_normalization,
        )


class SpeechRequest(BaseModel):
    """The body of ``POST /v1/audio/speech``, as OpenAI defines it (with Kokoro-FastAPI's
    ``normalization_options``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    model: str
    input: str
    voice: str | VoiceId
    instructions: str | None = None  # accepted and ignored: Kokoro takes no style prompt
    response_format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm"] = "mp3"
    speed: float = Field(default=1.0, ge=OPENAI_MIN_SPEED, le=OPENAI_MAX_SPEED)
    stream_format: Literal["audio", "sse"] = "audio"
    normalization_options: NormalizationOptions = Field(default_factory=NormalizationOptions)


def _validation_error(exc: ValidationError) -> ApiError:
    """The first of pydantic's complaints, as OpenAI words it."""
    first = exc.errors()[0]
    param = ".".join(str(part) for part in first["loc"]) or None
    if first["type"] == "json_invalid":
        return ApiError(400, f"the body is not valid JSON: {first['msg']}", code="invalid_json")
    if first["type"] == "missing":
        return ApiError(
            400,
            f"missing required parameter {param!r}",
            param=param,
            code="missing_required_parameter",
        )
    if first["type"] == "extra_forbidden":
        return ApiError(
            400, f"unrecognized request argument {param!r}", param=param, code="unknown_parameter"
        )
    return ApiError(
        400, f"invalid value for {param!r}: {first['msg']}", param=param, code="invalid_value"
    )


def parse_speech(body: bytes) -> SpeechRequest:
    """The checked request in ``body``, or ``ApiError`` 400 (404 for an unknown model)."""
    try:
        speech = SpeechRequest.model_validate_json(body)
    except ValidationError as exc:
        raise _validation_error(exc) from exc
    _check(speech)
    return speech


def voice_mix(engine: Engine, voice: str | VoiceId) -> VoiceMix:
    """``voice`` parsed; an OpenAI name the engine lacks is the voice it stands for
    (``tts_protocol.voices``, as the agent maps it)."""
    name = voice.id if isinstance(voice, VoiceId) else voice
    try:
        mix = parse_voice(name)
    except ProtocolError as exc:  # a malformed blend
        raise ApiError(400, exc.message, param="voice", code="unknown_voice") from exc
    return resolve_voice(mix, engine.voices, engine.default_voice)


def prepare_speech(engine: Engine, speech: SpeechRequest) -> Prepared:
    """The request prepared by the engine, or its refusal as an ``ApiError`` (400 for an
    unknown voice, 422 for text it cannot speak)."""
    options = speech.normalization_options.options()
    try:
        return engine.prepare(speech.input, voice_mix(engine, speech.voice), speech.speed, options)
    except Refusal as exc:
        raise ApiError.of(exc) from exc


def _check(request: SpeechRequest) -> None:
    """What Kokoro adds to OpenAI's schema: a known model, some input, Kokoro's speeds (what
    the engine must check is ``prepare_speech``'s)."""
    if request.model not in MODELS:
        raise ApiError(
            404,
            f"the model {request.model!r} does not exist; use one of {', '.join(MODELS)}",
            param="model",
            code="model_not_found",
        )
    if not request.input.strip():
        raise ApiError(400, "'input' is empty", param="input", code="empty_text")
    if len(request.input) > MAX_INPUT_CHARS:
        raise ApiError(
            400,
            f"'input' has {len(request.input)} characters; the limit is {MAX_INPUT_CHARS}",
            param="input",
            code="string_above_max_length",
        )
    if not MIN_SPEED <= request.speed <= MAX_SPEED:
        raise ApiError(
            400,
            f"speed {request.speed:g} is within OpenAI's range but Kokoro speaks only "
            f"{MIN_SPEED:g} to {MAX_SPEED:g}",
            param="speed",
            code="unsupported_value",
        )
