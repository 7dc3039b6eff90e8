"""Silero VAD and the endpointer on synthetic input and on the project's own speech."""

from __future__ import annotations

import numpy as np
import pytest

from agent.browser_leg import MIC_SAMPLE_RATE
from agent.config import ListeningConfig
from agent.listening.endpointer import Ended, Endpointer, Started
from agent.listening.settings import WINDOW_BYTES
from agent.listening.vad import VoiceActivity
from tests.agent.listening.speech import noise, silence, spoken, to_pcm
from tts_server.engines import Engine

SECONDS = np.arange(MIC_SAMPLE_RATE * 3) / MIC_SAMPLE_RATE


def segments(pcm: bytes, frame_bytes: int = 640) -> list[Started | Ended]:
    """What the endpointer finds in ``pcm`` fed in 20 ms frames through the VAD."""
    vad, endpointer = VoiceActivity(), Endpointer(ListeningConfig())
    found: list[Started | Ended] = []
    for start in range(0, len(pcm), frame_bytes):
        for window, probability in vad.windows(pcm[start : start + frame_bytes]):
            found += endpointer.push(window, probability)
    return found


@pytest.fixture(scope="module")
def sentences(engine: Engine) -> tuple[bytes, bytes]:
    return spoken(engine, "Turn on the lights."), spoken(engine, "And close the door.")


def test_windows_are_512_samples_whatever_the_frame_size() -> None:
    vad = VoiceActivity()
    assert vad.windows(silence(20)) == []  # 320 samples: not a window yet
    [(window, probability)] = vad.windows(silence(20))  # 640: one, 128 left over
    assert len(window) == WINDOW_BYTES and 0 <= probability < 0.1


@pytest.mark.parametrize(
    ("name", "pcm"),
    [
        ("silence", silence(3000)),
        ("white noise", noise(3000, 0.3)),
        ("quiet noise", noise(3000, 0.05, seed=1)),
        ("a 440 Hz tone", to_pcm(0.5 * np.sin(2 * np.pi * 440 * SECONDS))),
        ("a 150 Hz hum", to_pcm(0.5 * np.sin(2 * np.pi * 150 * SECONDS))),
    ],
)
def test_no_speech_is_found_in_sound_that_is_not_speech(name: str, pcm: bytes) -> None:
    assert segments(pcm) == [], name


def test_speech_with_a_short_pause_is_one_utterance_and_a_long_pause_two(
    sentences: tuple[bytes, bytes],
) -> None:
    first, second = sentences
    one = segments(silence(400) + first + silence(250) + second + silence(800))
    two = segments(silence(400) + first + silence(900) + second + silence(800))
    assert [type(f) for f in one] == [Started, Ended]
    assert [type(f) for f in two] == [Started, Ended, Started, Ended]
    start, end = one
    assert isinstance(start, Started) and isinstance(end, Ended)
    spoken_ms = (len(first) + len(second)) / 32 + 250
    assert 300 <= start.at_ms <= 500 and end.at_ms == pytest.approx(400 + spoken_ms, abs=200)


@pytest.mark.parametrize("frame_bytes", [640, 3 * WINDOW_BYTES + 640])  # 20 ms; 3 windows and more
def test_the_probabilities_do_not_depend_on_how_the_stream_is_cut(
    sentences: tuple[bytes, bytes], frame_bytes: int
) -> None:
    pcm = silence(300) + sentences[0] + silence(300)
    whole = [p for _, p in VoiceActivity().windows(pcm)]
    vad = VoiceActivity()
    cut = [
        p
        for start in range(0, len(pcm), frame_bytes)
        for _, p in vad.windows(pcm[start : start + frame_bytes])
    ]
    assert len(cut) == len(whole) == len(pcm) // WINDOW_BYTES
    assert max(abs(a - b) for a, b in zip(cut, whole, strict=True)) < 1e-3
    assert max(whole) > 0.9 and min(whole) < 0.1  # speech and silence, not a constant
    vad.reset()
    assert [p for _, p in vad.windows(pcm)] == pytest.approx(whole, abs=1e-3)


def test_reset_drops_a_partial_window_and_the_next_stream_starts_clean() -> None:
    vad = VoiceActivity()
    assert vad.windows(noise(10)) == []  # 160 samples held for the next window
    vad.reset()
    pcm = silence(64)  # two whole windows of a new stream
    assert [window for window, _ in vad.windows(pcm)] == [pcm[:WINDOW_BYTES], pcm[WINDOW_BYTES:]]
