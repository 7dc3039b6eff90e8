"""OpenAI's speech API on the Kokoro engine: ``POST /v1/audio/speech``, voices and models.

The same engine and queue as the WebSocket sessions (``Engine.synthesize_resolved``). The input
is cut into sentences by spaCy's rule-based sentencizer (spaCy is already loaded for the G2P;
its tokenizer keeps "Dr." and "3.50" whole), and each sentence is synthesized and encoded in
turn, so the response starts once the first sentence is spoken, not the whole input. Errors
use OpenAI's JSON shape ``{"error": {"message", "type", "param", "code"}}``. See
docs/openai_api.md for what differs from OpenAI. ``POST /v1/audio/speech/captioned`` takes the
same body and streams NDJSON: base64 chunks of the encoded audio with their words' timings.
The response bodies themselves are built in ``tts_server.speech_bodies``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Literal, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from observability.request_body import read_bounded
from tts_protocol import BYTES_PER_SAMPLE, MAX_SPEED, MIN_SPEED, SAMPLE_RATE
from tts_server import speech_bodies as bodies
from tts_server.admission import Admission
from tts_server.audio_encoding import AudioFormat, StreamingEncoder
from tts_server.engines.base import Engine, UnknownVoice
from tts_server.health import State
from tts_server.metrics import TTSMetrics

log = logging.getLogger("tts_server.openai_api")

MODELS = ("kokoro", "tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-mini-tts-2025-12-15")
OPENAI_VOICES = (
    "alloy",
    "ash",
    "ballad",
    "cedar",
    "coral",
    "echo",
    "fable",
    "marin",
    "nova",
    "onyx",
    "sage",
    "shimmer",
    "verse",
)
MAX_INPUT_CHARS = 4096  # OpenAI's limit
MAX_BODY_BYTES = 64 * 1024  # 4096 chars, each escaped as \uXXXX, fit with room to spare
OPENAI_MIN_SPEED, OPENAI_MAX_SPEED = 0.25, 4.0
RETRY_AFTER_S = 1
T = TypeVar("T")


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

    def response(self) -> JSONResponse:
        """The JSON response; a 429 or 503 says when to try again."""
        retry = self.status in (429, 503)
        headers = {"Retry-After": str(RETRY_AFTER_S)} if retry else None
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


class VoiceId(BaseModel):
    """OpenAI's custom-voice reference, ``{"id": ...}``: here, a Kokoro voice or blend."""

    model_config = ConfigDict(extra="forbid")
    id: str


class SpeechRequest(BaseModel):
    """The body of ``POST /v1/audio/speech``, as OpenAI defines it."""

    model_config = ConfigDict(extra="forbid", strict=True)
    model: str
    input: str
    voice: str | VoiceId
    instructions: str | None = None  # accepted and ignored: Kokoro takes no style prompt
    response_format: Literal["mp3", "opus", "aac", "flac", "wav", "pcm"] = "mp3"
    speed: float = Field(default=1.0, ge=OPENAI_MIN_SPEED, le=OPENAI_MAX_SPEED)
    stream_format: Literal["audio", "sse"] = "audio"


def _validation_error(exc: ValidationError) -> ApiError:
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


def openai_voice_map(engine: Engine) -> dict[str, str]:
    """OpenAI's voice names to the engine's: ``alloy`` → ``af_alloy`` if present, else default."""
    mapping: dict[str, str] = {}
    for name in OPENAI_VOICES:
        matches = [voice for voice in engine.voices if voice.split("_", 1)[-1] == name]
        mapping[name] = matches[0] if len(matches) == 1 else engine.default_voice
    return mapping


def _resolve_voice(engine: Engine, voice: str | VoiceId) -> str:
    name = voice.id if isinstance(voice, VoiceId) else voice
    if name in OPENAI_VOICES and name not in engine.voices:
        name = openai_voice_map(engine)[name]
    try:
        return engine.resolve_voice(name)
    except UnknownVoice as exc:
        raise ApiError(400, str(exc), param="voice", code="unknown_voice") from exc


def _check(request: SpeechRequest) -> None:
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


def _ready_engine(request: Request) -> Engine:
    readiness = request.app.state.readiness
    engine: Engine | None = request.app.state.engine
    if readiness.state is not State.HEALTHY or engine is None:
        raise ApiError(
            503, f"not ready: {readiness.reason}", kind="server_error", code="service_unavailable"
        )
    return engine


async def _read_body(request: Request) -> bytes:
    body = await read_bounded(request, MAX_BODY_BYTES)
    if body is None:
        raise ApiError(413, f"the body exceeds {MAX_BODY_BYTES} bytes", code="request_too_large")
    return body


async def _released(audio: AsyncIterator[bytes], admission: Admission) -> AsyncIterator[bytes]:
    """``audio``, then the request's session slot back, however the stream ends."""
    try:
        async for data in audio:
            yield data
    finally:
        admission.close_session()


async def _measured(
    stream: AsyncIterator[T], request: Request, engine: Engine, pcm_of: Callable[[T], bytes]
) -> AsyncIterator[T]:
    """``stream``, timed into the server's histograms as the WebSocket's segments are."""
    metrics: TTSMetrics = request.app.state.metrics
    started = time.perf_counter()
    first_audio_s: float | None = None
    samples = 0
    async for item in stream:
        if first_audio_s is None:
            first_audio_s = time.perf_counter() - started
        samples += len(pcm_of(item)) // BYTES_PER_SAMPLE
        yield item
    synthesis_s = time.perf_counter() - started
    metrics.synthesized(
        engine.name,
        waited_s=None,
        first_audio_s=first_audio_s,
        synthesis_s=synthesis_s,
        samples=samples,
    )


async def _speech(request: Request, captioned: bool = False) -> Response:
    """Admit the request as one session (``busy`` 429 when full) for as long as it streams."""
    engine = _ready_engine(request)
    admission: Admission = request.app.state.admission
    if not admission.open_session():
        message = f"{admission.max_sessions} sessions are open; try again later"
        raise ApiError(429, message, kind="server_error", code="busy")
    try:
        if captioned:
            return await _admitted_captions(request, engine, admission)
        return await _admitted_speech(request, engine, admission)
    except BaseException:
        admission.close_session()
        raise


async def _request(request: Request, engine: Engine) -> tuple[SpeechRequest, str, list[str]]:
    """The checked body, its resolved voice and its sentences."""
    try:
        speech = SpeechRequest.model_validate_json(await _read_body(request))
    except ValidationError as exc:
        raise _validation_error(exc) from exc
    _check(speech)
    voice = _resolve_voice(engine, speech.voice)
    return speech, voice, await asyncio.to_thread(bodies.split_sentences, speech.input)


async def _first(stream: AsyncIterator[T]) -> T:
    """The first sentence, before the status line: a failure is still a clean error."""
    try:
        return await anext(stream)
    except StopAsyncIteration:
        raise ApiError(
            400, "'input' has nothing to speak", param="input", code="empty_text"
        ) from None
    except Exception as exc:
        log.exception("speech synthesis failed")
        raise ApiError(500, f"synthesis failed: {exc!r}", kind="server_error") from exc


async def _admitted_captions(request: Request, engine: Engine, admission: Admission) -> Response:
    speech, voice, sentences = await _request(request, engine)
    if speech.stream_format != "audio":
        raise ApiError(
            400,
            "captioned speech streams NDJSON; 'stream_format' must be 'audio'",
            param="stream_format",
            code="unsupported_value",
        )
    timed = _measured(
        bodies.timed_pcm(engine, sentences, voice, speech.speed), request, engine, lambda t: t[0]
    )
    first = await _first(timed)
    encoder = StreamingEncoder(AudioFormat(speech.response_format))
    lines = _released(bodies.captions(encoder, first, timed), admission)
    headers = {"X-Voice": voice, "X-Sample-Rate": str(encoder.encoding.sample_rate)}
    headers["X-Audio-Type"] = encoder.media_type
    return StreamingResponse(lines, media_type="application/x-ndjson", headers=headers)


async def _admitted_speech(request: Request, engine: Engine, admission: Admission) -> Response:
    speech, voice, sentences = await _request(request, engine)
    pcm = _measured(
        bodies.pcm(engine, sentences, voice, speech.speed), request, engine, lambda pcm: pcm
    )
    first = await _first(pcm)
    encoder = StreamingEncoder(AudioFormat(speech.response_format))
    audio = _released(bodies.encoded(encoder, first, pcm), admission)
    headers = {"X-Voice": voice, "X-Sample-Rate": str(encoder.encoding.sample_rate)}
    if speech.stream_format == "sse":
        return StreamingResponse(bodies.sse(audio), media_type="text/event-stream", headers=headers)
    return StreamingResponse(audio, media_type=encoder.media_type, headers=headers)


def create_router() -> APIRouter:
    """The ``/v1`` routes; ``create_app`` includes them. They read ``app.state.engine``."""
    router = APIRouter(prefix="/v1")
    started = int(time.time())

    @router.post("/audio/speech", response_model=None)
    async def speech(request: Request) -> Response:
        try:
            return await _speech(request)
        except ApiError as exc:
            return exc.response()

    @router.post("/audio/speech/captioned", response_model=None)
    async def captioned_speech(request: Request) -> Response:
        try:
            return await _speech(request, captioned=True)
        except ApiError as exc:
            return exc.response()

    @router.get("/audio/voices")
    async def voices(request: Request) -> JSONResponse:
        try:
            engine = _ready_engine(request)
        except ApiError as exc:
            return exc.response()
        return JSONResponse(
            {
                "voices": list(engine.voices),
                "default_voice": engine.default_voice,
                "openai_voices": openai_voice_map(engine),
                "sample_rate": SAMPLE_RATE,
            }
        )

    def model(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": started, "owned_by": "kokoro"}

    @router.get("/models")
    async def models() -> JSONResponse:
        return JSONResponse({"object": "list", "data": [model(name) for name in MODELS]})

    @router.get("/models/{name}")
    async def retrieve_model(name: str) -> JSONResponse:
        if name not in MODELS:
            error = ApiError(
                404, f"the model {name!r} does not exist", param="model", code="model_not_found"
            )
            return error.response()
        return JSONResponse(model(name))

    return router
