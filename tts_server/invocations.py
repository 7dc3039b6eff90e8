"""SageMaker's batch route, ``POST /invocations``: one ``speak``'s fields in, the whole audio out.

The body is a ``speak`` without its id and type (``text``, and optionally ``voice``, ``speed``),
plus ``format``: ``wav`` (default) or ``pcm`` (raw s16le); any other field is refused. Errors
are the protocol's ``{"error": {"code", "message"}}``; the timings come back in ``X-*`` headers.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from observability.request_body import read_bounded
from tts_protocol import (
    SAMPLE_RATE,
    ErrorCode,
    ProtocolError,
    Speak,
    parse_object,
    samples_ms,
    speak_fields,
    wav_bytes,
)
from tts_protocol.validation import check_fields, check_normalize
from tts_server.engines.base import to_pcm16
from tts_server.engines.prepared import NORMALIZED, Refusal
from tts_server.service import MAX_BODY_BYTES, RETRY_AFTER_S, SynthesisRefused, service_of
from tts_server.timing import Timing

log = logging.getLogger("tts_server")
FORMATS = ("wav", "pcm")
BODY_FIELDS = ("text", "voice", "speed", "format", "normalize")  # any other is refused, typo or not


def _error(
    status: int, code: ErrorCode | str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def _refusal(refused: SynthesisRefused) -> JSONResponse:
    """A 429 says when to try again; a 503 does not (the server may never be ready)."""
    headers = {"Retry-After": str(RETRY_AFTER_S)} if refused.status == 429 else None
    return _error(refused.status, refused.code, refused.message, headers)


def create_router() -> APIRouter:
    """``POST /invocations``; ``create_app`` includes it. It reads the app's service."""
    router = APIRouter()
    router.add_api_route("/invocations", invocations, methods=["POST"])
    return router


async def invocations(request: Request) -> Response:
    """Check, admit (a session slot while it synthesizes), synthesize, answer."""
    service = service_of(request)
    try:
        engine = service.ready_engine()
    except SynthesisRefused as refused:
        return _refusal(refused)
    body = await read_bounded(request, MAX_BODY_BYTES)
    if body is None:
        return _error(413, ErrorCode.BODY_TOO_LARGE, f"body exceeds {MAX_BODY_BYTES} bytes")
    try:
        obj = parse_object(body, "body")
        check_fields(obj, BODY_FIELDS, "the body")
        speak = Speak(*speak_fields({**obj, "id": "invocation"}, service.settings.max_text_chars))
        normalization = NORMALIZED if check_normalize(obj.get("normalize")) else None
        fmt = obj.get("format", "wav")
        if fmt not in FORMATS:
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "'format' must be 'wav' or 'pcm'")
        prepared = engine.prepare(speak.text, speak.voice, speak.speed, normalization)
    except ProtocolError as exc:
        return _error(400, exc.code, exc.message)
    except Refusal as exc:
        return _error(exc.status, exc.code, exc.message)
    try:
        slot = service.admit()
    except SynthesisRefused as refused:
        return _refusal(refused)
    timing = Timing()
    pcm = bytearray()
    with slot:
        try:
            chunks = engine.synthesize(prepared)
            async for chunk in service.measured(engine, chunks, timing):
                pcm += to_pcm16(chunk.audio)
        except Exception as exc:
            log.exception("batch synthesis failed")
            return _error(500, ErrorCode.SYNTHESIS_FAILED, f"{exc!r}")
    headers = {
        "X-Sample-Rate": str(SAMPLE_RATE),
        "X-Synthesis-Ms": f"{timing.synthesis_ms:.1f}",
        "X-First-Audio-Ms": f"{(timing.first_audio_s or 0.0) * 1000:.1f}",
        "X-Audio-Ms": f"{samples_ms(timing.samples)}",
    }
    if fmt == "pcm":
        return Response(bytes(pcm), media_type="audio/L16", headers=headers)
    return Response(wav_bytes(bytes(pcm)), media_type="audio/wav", headers=headers)
