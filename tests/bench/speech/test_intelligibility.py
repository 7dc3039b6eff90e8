"""Offline Whisper hears the embedded engine's speech, and WER compares it with the text."""

from __future__ import annotations

import numpy as np
import pytest

from bench.speech.intelligibility import comparable, transcribe, word_error_rate
from tts_server.engines import Engine

SENTENCE = "The quick brown fox jumps over the lazy dog."


async def speak(engine: Engine, text: str) -> np.ndarray:
    chunks = [chunk.audio async for chunk in engine.synthesize(engine.prepare(text))]
    return np.concatenate(chunks)


async def test_whisper_hears_the_engine_say_the_sentence(engine: Engine) -> None:
    audio = await speak(engine, SENTENCE)
    heard = transcribe(audio, 24_000)
    assert word_error_rate(SENTENCE, heard) <= 0.12, heard


def test_silence_is_heard_as_nothing_like_the_sentence() -> None:
    heard = transcribe(np.zeros(24_000, dtype=np.float32), 24_000)
    assert word_error_rate(SENTENCE, heard) >= 0.8, heard


def test_wer_counts_words_not_case_or_punctuation() -> None:
    assert word_error_rate("Hello, world.", "hello world") == 0.0
    assert word_error_rate("one two three four", "one two tree four") == 0.25
    assert comparable("It's 'quoted', OK?") == "it's quoted ok"
    with pytest.raises(ValueError, match="no words"):
        word_error_rate("...", "anything")
