"""Audio helpers of the wire format: framing PCM and wrapping it in a WAV container."""

from __future__ import annotations

import io
import wave
from typing import TYPE_CHECKING

from tts_protocol.constants import BYTES_PER_SAMPLE, CHANNELS, MAX_AUDIO_FRAME_BYTES, SAMPLE_RATE

if TYPE_CHECKING:
    import numpy as np


def split_audio(pcm: bytes, max_frame_bytes: int = MAX_AUDIO_FRAME_BYTES) -> list[bytes]:
    """Split PCM bytes into frames of at most ``max_frame_bytes``, on sample boundaries."""
    step = max_frame_bytes - max_frame_bytes % BYTES_PER_SAMPLE
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]


def wav_bytes(pcm: bytes, sample_rate: int = SAMPLE_RATE) -> bytes:
    """PCM s16le mono as a complete WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(CHANNELS)
        out.setsampwidth(BYTES_PER_SAMPLE)
        out.setframerate(sample_rate)
        out.writeframes(pcm)
    return buffer.getvalue()


def samples_ms(samples: int, sample_rate: int = SAMPLE_RATE) -> float:
    """Duration of ``samples`` in milliseconds, to 0.1 ms."""
    return round(samples * 1000 / sample_rate, 1)


def pcm16_to_float(pcm: bytes) -> np.ndarray:
    """PCM s16le as float32 samples in [-1, 1): what the VAD, Whisper and the health check
    read. numpy is imported here, by callers that have it: the protocol itself needs none."""
    import numpy as np

    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
