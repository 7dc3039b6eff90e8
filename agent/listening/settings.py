"""Listening's audio constants: what a client sends, and Silero's window.

The knobs are ``agent.config.ListeningConfig`` (declared once, with their variables).
"""

from __future__ import annotations

from agent.browser_leg import MIC_SAMPLE_RATE
from tts_protocol import BYTES_PER_SAMPLE

SAMPLE_FORMAT = "s16le"  # what a client sends: Whisper's rate (MIC_SAMPLE_RATE), and Silero's
WINDOW_SAMPLES = 512  # Silero's window at 16 kHz: 32 ms
WINDOW_BYTES = WINDOW_SAMPLES * BYTES_PER_SAMPLE
WINDOW_MS = WINDOW_SAMPLES * 1000 // MIC_SAMPLE_RATE


def pcm_ms(pcm_bytes: int) -> float:
    """How long ``pcm_bytes`` of microphone audio (16 kHz s16le) lasts, in ms."""
    return round(pcm_bytes / BYTES_PER_SAMPLE * 1000 / MIC_SAMPLE_RATE, 1)
