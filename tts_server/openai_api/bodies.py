"""The speech API's response bodies: sentences → chunks → PCM → encoded audio, captions or SSE.

Each body synthesizes sentence by sentence through ``Engine.synthesize`` and encodes off the
event loop, so the first bytes leave once the first sentence is spoken. A failure after the
status is sent becomes a last line or event in OpenAI's error shape.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from tts_protocol import samples_ms
from tts_server.engines.base import Engine, to_pcm16
from tts_server.engines.prepared import Prepared
from tts_server.engines.timings import Chunk
from tts_server.openai_api.audio_encoding import StreamingEncoder

log = logging.getLogger("tts_server.openai_api")


def server_error(exc: BaseException) -> dict[str, Any]:
    """OpenAI's error body for a failure mid-stream."""
    error = {"message": repr(exc), "type": "server_error", "param": None}
    return {"error": {**error, "code": None}}


@functools.cache
def _sentencizer() -> Any:
    import spacy  # already imported by the G2P; blank pipelines need no model download

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def split_sentences(text: str) -> list[str]:
    """``text`` as sentences (spaCy's rule-based sentencizer), blank ones dropped."""
    return [s.text.strip() for s in _sentencizer()(text).sents if s.text.strip()]


async def spoken(engine: Engine, prepared: Prepared, sentences: list[str]) -> AsyncIterator[Chunk]:
    """Each sentence of the prepared input in turn through the engine: one stream of chunks
    for the whole input."""
    for sentence in sentences:
        async for chunk in engine.synthesize(prepared.part(sentence)):
            yield chunk


async def pcm(chunks: AsyncIterator[Chunk]) -> AsyncIterator[bytes]:
    """Each chunk's audio as s16le PCM."""
    async for chunk in chunks:
        yield to_pcm16(chunk.audio)


# [{"text", "start_ms", "end_ms", "spoken"?}], ms from the response's start; "spoken" where
# the words said differ from the written text (as in the protocol's marks)
Words = list[dict[str, Any]]


async def timed_pcm(chunks: AsyncIterator[Chunk]) -> AsyncIterator[tuple[bytes, Words]]:
    """Each chunk's PCM with its words, timed from the start of the whole response."""
    samples = 0
    async for chunk in chunks:
        words = [
            {
                "text": w.text,
                "start_ms": samples_ms(samples + w.start),
                "end_ms": samples_ms(samples + w.end),
            }
            | ({} if w.spoken is None else {"spoken": w.spoken})
            for w in chunk.words
        ]
        samples += chunk.audio.size
        yield to_pcm16(chunk.audio), words


async def captions(
    encoder: StreamingEncoder, first: tuple[bytes, Words], rest: AsyncIterator[tuple[bytes, Words]]
) -> AsyncIterator[bytes]:
    """NDJSON lines ``{"audio": base64, "words": [...]}``: each chunk encoded, then the trailer.

    Decoded and joined, the lines' audio is the whole file; a failure mid-stream is a last
    line in OpenAI's error shape.
    """

    def line(data: bytes, words: Words) -> bytes:
        payload = {"audio": base64.b64encode(data).decode(), "words": words}
        return json.dumps(payload, ensure_ascii=False).encode() + b"\n"

    try:
        pcm, words = first
        yield line(await asyncio.to_thread(encoder.encode, pcm), words)
        async for pcm, words in rest:
            yield line(await asyncio.to_thread(encoder.encode, pcm), words)
        yield line(await asyncio.to_thread(encoder.finish), [])
    except Exception as exc:  # the status is sent: say so in the stream, then end it
        log.exception("captioned speech failed mid-stream")
        yield json.dumps(server_error(exc)).encode() + b"\n"
    finally:
        encoder.close()


async def encoded(
    encoder: StreamingEncoder, first: bytes, rest: AsyncIterator[bytes]
) -> AsyncIterator[bytes]:
    """Encoder output for ``first`` and then ``rest``, off the event loop, then the trailer."""
    try:
        if data := await asyncio.to_thread(encoder.encode, first):
            yield data
        async for pcm in rest:
            if data := await asyncio.to_thread(encoder.encode, pcm):
                yield data
        if data := await asyncio.to_thread(encoder.finish):
            yield data
    finally:
        encoder.close()


async def sse(audio: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """OpenAI's ``stream_format="sse"``: ``speech.audio.delta`` events, then ``.done``."""

    def event(payload: dict[str, Any]) -> bytes:
        return f"data: {json.dumps(payload)}\n\n".encode()

    try:
        async for data in audio:
            yield event({"type": "speech.audio.delta", "audio": base64.b64encode(data).decode()})
    except Exception as exc:  # the status is sent: say so in the stream, then end it
        log.exception("speech synthesis failed mid-stream")
        yield event({"type": "error", **server_error(exc)})
        return
    yield event({"type": "speech.audio.done"})
