"""Readiness: the server is Healthy only after a real synthesis through the request path.

The warm-up encodes a ``speak`` message, wraps it as a *binary* ASGI WebSocket frame (the way
SageMaker delivers client messages), decodes it with ``frame_payload`` and feeds it to a real
``SynthesisConnection``, then checks that start, non-silent audio and end came back.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from tts_protocol import End, Error, Speak, Start, decode_server, encode, pcm16_to_float
from tts_server.connection import SynthesisConnection, frame_payload
from tts_server.engines.base import Engine

WARMUP_TEXT = "Hello! The speech server is ready."
MIN_RMS = 0.01  # of full scale; a silent or broken model produces less
MIN_SECONDS_PER_CHAR = 0.02  # far below any real speaking rate, above "nothing"


class State(StrEnum):
    """Where the server is in its life."""

    LOADING = "Loading"
    HEALTHY = "Healthy"
    FAILED = "Failed"
    DRAINING = "Draining"  # shutting down: finishing open sessions, taking no new ones


@dataclass
class Readiness:
    """What ``GET /ping`` reports."""

    state: State = State.LOADING
    reason: str = "model is loading"
    details: dict[str, float] = field(default_factory=dict)

    def fail(self, reason: str) -> None:
        """Record a failure that keeps ``/ping`` at 503."""
        self.state, self.reason = State.FAILED, reason

    def drain(self) -> None:
        """The server is shutting down: ``/ping`` answers 503 so load balancers move on."""
        self.state, self.reason = State.DRAINING, "shutting down"


class WarmupFailed(RuntimeError):
    """The warm-up synthesis did not produce plausible speech."""


async def warm_up(engine: Engine, limit_s: float = 120.0) -> dict[str, float]:
    """Run one binary-framed ``speak`` through a real connection; return its measurements."""
    replies: list[str] = []
    audio: list[bytes] = []

    async def send_text(text: str) -> None:
        replies.append(text)

    async def send_bytes(data: bytes) -> None:
        audio.append(data)

    connection = SynthesisConnection(engine, send_text, send_bytes)
    speak = encode(Speak(id="warmup", text=WARMUP_TEXT)).encode("utf-8")
    frame = {"type": "websocket.receive", "bytes": speak}
    loop = asyncio.get_running_loop()
    started = loop.time()
    await connection.feed(frame_payload(frame))
    await connection.feed(b'{"type":"close"}')
    async with asyncio.timeout(limit_s):
        await connection.run()
    messages = [decode_server(text) for text in replies]
    errors = [m for m in messages if isinstance(m, Error)]
    if errors:
        raise WarmupFailed(f"warm-up synthesis failed: {errors[0].code}: {errors[0].message}")
    if not messages or not isinstance(messages[0], Start) or not isinstance(messages[-1], End):
        raise WarmupFailed(f"warm-up replies were not start..end: {replies!r}")
    pcm = pcm16_to_float(b"".join(audio))
    seconds = pcm.size / engine.sample_rate
    rms = math.sqrt(float(np.mean(pcm**2))) if pcm.size else 0.0
    if rms < MIN_RMS or seconds < MIN_SECONDS_PER_CHAR * len(WARMUP_TEXT):
        raise WarmupFailed(f"warm-up audio is implausible: {seconds:.2f} s, rms {rms:.4f}")
    return {
        "warmup_ms": round((loop.time() - started) * 1000, 1),
        "warmup_audio_ms": round(seconds * 1000, 1),
        "warmup_rms": round(rms, 4),
    }
