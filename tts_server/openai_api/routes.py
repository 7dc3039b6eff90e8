"""OpenAI's speech API on the Kokoro engine: ``POST /v1/audio/speech``, voices and models.

The same engine and queue as the WebSocket sessions, through the server's one synthesis path
(``SynthesisService``: ready, admitted, measured). The input is cut into sentences by spaCy's
rule-based sentencizer (spaCy is already loaded for the G2P; its tokenizer keeps "Dr." and
"3.50" whole), and each sentence is synthesized and encoded in turn, so the response starts
once the first sentence is spoken, not the whole input. See docs/openai_api.md for what
differs from OpenAI. ``POST /v1/audio/speech/captioned`` takes the same body and streams
NDJSON: base64 chunks of the encoded audio with their words' timings. The request is checked
in ``speech_request``, the response bodies are built in ``bodies``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from observability.request_body import read_bounded
from tts_protocol import SAMPLE_RATE
from tts_protocol.voices import openai_voice_map
from tts_server.engines.base import Engine
from tts_server.engines.prepared import Prepared
from tts_server.engines.timings import Chunk
from tts_server.openai_api import bodies
from tts_server.openai_api.audio_encoding import AudioFormat, StreamingEncoder
from tts_server.openai_api.speech_request import (
    MODELS,
    ApiError,
    SpeechRequest,
    parse_speech,
    prepare_speech,
)
from tts_server.service import MAX_BODY_BYTES, Slot, SynthesisRefused, SynthesisService, service_of
from tts_server.timing import Timing

log = logging.getLogger("tts_server.openai_api")
T = TypeVar("T")


def _ready_engine(service: SynthesisService) -> Engine:
    try:
        return service.ready_engine()
    except SynthesisRefused as refused:
        raise ApiError.refused(refused) from None


async def _speech(request: Request, captioned: bool = False) -> Response:
    """Admit the request as one session (``busy`` 429 when full) for as long as it streams."""
    service = service_of(request)
    engine = _ready_engine(service)
    try:
        slot = service.admit()
    except SynthesisRefused as refused:
        raise ApiError.refused(refused) from None
    try:
        speech, prepared, sentences = await _request(request, engine)
        chunks = service.measured(engine, bodies.spoken(engine, prepared, sentences), Timing())
        if captioned:
            return await _captions(speech, prepared.voice_name, chunks, slot)
        return await _audio(speech, prepared.voice_name, chunks, slot)
    except BaseException:
        slot.release()
        raise


async def _request(request: Request, engine: Engine) -> tuple[SpeechRequest, Prepared, list[str]]:
    """The checked body, the engine's preparation of it and its sentences."""
    body = await read_bounded(request, MAX_BODY_BYTES)
    if body is None:
        raise ApiError(413, f"the body exceeds {MAX_BODY_BYTES} bytes", code="request_too_large")
    speech = parse_speech(body)
    prepared = prepare_speech(engine, speech)
    return speech, prepared, await asyncio.to_thread(bodies.split_sentences, speech.input)


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


async def _captions(
    speech: SpeechRequest, voice: str, chunks: AsyncIterator[Chunk], slot: Slot
) -> Response:
    if speech.stream_format != "audio":
        raise ApiError(
            400,
            "captioned speech streams NDJSON; 'stream_format' must be 'audio'",
            param="stream_format",
            code="unsupported_value",
        )
    timed = bodies.timed_pcm(chunks)
    first = await _first(timed)
    encoder = StreamingEncoder(AudioFormat(speech.response_format))
    lines = slot.held_by(bodies.captions(encoder, first, timed))
    headers = {"X-Voice": voice, "X-Sample-Rate": str(encoder.encoding.sample_rate)}
    headers["X-Audio-Type"] = encoder.media_type
    return StreamingResponse(lines, media_type="application/x-ndjson", headers=headers)


async def _audio(
    speech: SpeechRequest, voice: str, chunks: AsyncIterator[Chunk], slot: Slot
) -> Response:
    pcm = bodies.pcm(chunks)
    first = await _first(pcm)
    encoder = StreamingEncoder(AudioFormat(speech.response_format))
    audio = slot.held_by(bodies.encoded(encoder, first, pcm))
    headers = {"X-Voice": voice, "X-Sample-Rate": str(encoder.encoding.sample_rate)}
    if speech.stream_format == "sse":
        return StreamingResponse(bodies.sse(audio), media_type="text/event-stream", headers=headers)
    return StreamingResponse(audio, media_type=encoder.media_type, headers=headers)


def create_router() -> APIRouter:
    """The ``/v1`` routes; ``create_app`` includes them. They read the app's service."""
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
            engine = _ready_engine(service_of(request))
        except ApiError as exc:
            return exc.response()
        return JSONResponse(
            {
                "voices": list(engine.voices),
                "default_voice": engine.default_voice,
                "openai_voices": openai_voice_map(engine.voices, engine.default_voice),
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
