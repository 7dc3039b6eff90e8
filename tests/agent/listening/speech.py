"""Speech for the listening tests: the project's own TTS, as a microphone would send it."""

from __future__ import annotations

import asyncio

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE, mic_frame
from bench.speech.intelligibility import to_whisper_input
from tts_protocol import BYTES_PER_SAMPLE
from tts_protocol import SAMPLE_RATE as TTS_RATE
from tts_server.engines import Engine

FRAME_MS = 32  # what the page's worklet sends


def spoken(engine: Engine, text: str) -> bytes:
    """``text`` said by the embedded engine: 16 kHz s16le mono, as the page sends it."""

    async def speak() -> np.ndarray:
        chunks = engine.synthesize(engine.prepare(text))
        return np.concatenate([chunk.audio async for chunk in chunks])

    return to_pcm(to_whisper_input(asyncio.run(speak()), TTS_RATE))


def to_pcm(samples: np.ndarray) -> bytes:
    """Float samples in [-1, 1] as s16le."""
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def silence(ms: int) -> bytes:
    return bytes(MIC_SAMPLE_RATE * ms // 1000 * BYTES_PER_SAMPLE)


def noise(ms: int, level: float = 0.3, seed: int = 0) -> bytes:
    """White noise at ``level`` of full scale."""
    rng = np.random.default_rng(seed)
    return to_pcm(rng.uniform(-level, level, MIC_SAMPLE_RATE * ms // 1000))


def mic_frames(pcm: bytes, frame_ms: int = FRAME_MS) -> list[bytes]:
    """``pcm`` as binary MIC frames of ``frame_ms`` each (the last one shorter)."""
    size = MIC_SAMPLE_RATE * frame_ms // 1000 * BYTES_PER_SAMPLE
    return [mic_frame(pcm[i : i + size]) for i in range(0, len(pcm), size)]
