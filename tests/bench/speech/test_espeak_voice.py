"""eSpeak NG through ctypes: voices that are not the project's, as 16 kHz s16le."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from bench.speech import espeak_voice
from bench.speech.espeak_voice import VOICES, EspeakUnavailable, say, voices

SENTENCE = "What time does the train to Manchester leave from platform nine?"  # 11 words


def samples(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, "<i2").astype(np.float64)


def test_a_sentence_is_loud_16_khz_audio_as_long_as_a_person_says_it() -> None:
    pcm = say(SENTENCE, "en-us")
    audio = samples(pcm)
    assert len(pcm) % 2 == 0
    assert 2.0 < audio.size / 16_000 < 6.0  # 11 words at 160 words a minute: about 4 s
    assert np.abs(audio).max() > 8_000 and np.sqrt(np.mean(audio**2)) > 1_000


def test_a_slower_rate_says_it_longer() -> None:
    assert len(say(SENTENCE, "en-us", rate=120)) > 1.2 * len(say(SENTENCE, "en-us", rate=200))


def test_two_voices_say_it_differently() -> None:
    us, rp = samples(say(SENTENCE, "en-us")), samples(say(SENTENCE, "en-gb-x-rp+m3"))
    size = min(us.size, rp.size)
    assert us.size != rp.size or not np.array_equal(us, rp)
    assert np.corrcoef(us[:size], rp[:size])[0, 1] < 0.9  # not one waveform, a little moved


def test_every_offered_voice_speaks_and_its_variant_exists() -> None:
    assert {"f3", "m3", "klatt"} <= set(voices())
    for voice in VOICES:
        assert samples(say("Hello there.", voice)).size > 4_000, voice


def test_a_language_is_found_by_its_code_as_espeak_ng_names_it() -> None:
    assert samples(say("Hello.", "en-gb")).size > 0  # the voice file is gmw/en
    assert samples(say("Hello.", "EN-GB")).size > 0


def test_an_unknown_voice_or_variant_is_a_clear_error() -> None:
    with pytest.raises(EspeakUnavailable, match="no voice 'xx-nowhere'"):
        say("Hello.", "xx-nowhere")
    with pytest.raises(EspeakUnavailable, match="no variant 'nobody'"):
        say("Hello.", "en-us+nobody")


def test_a_missing_library_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "espeakng_loader", None)  # import fails
    with pytest.raises(EspeakUnavailable, match="pip install espeakng-loader"):
        espeak_voice._Espeak()
