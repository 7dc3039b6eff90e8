"""The page-hearing benchmark's own parts: its corpora, its WAVs, its alignment, its report."""

from __future__ import annotations

import json
import wave
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.speech import page_hearing
from bench.speech.human_speech import HumanClip
from bench.speech.page_hearing import (
    CORPUS,
    LEAD_MS,
    SOFT,
    TAIL_MS,
    Clip,
    clip_wav,
    corpus,
    label,
    level_db,
    listening,
    main,
    pcm_of,
    row,
    samples_of,
    spoken,
    start_of,
    voiced_at,
    wav_ms,
)


def test_the_corpus_has_ten_or_more_utterances_with_soft_and_slow_starts_and_varied_voices() -> (
    None
):
    assert len(CORPUS) >= 10
    assert {c.start for c in CORPUS} == {"plain", "soft", "slow"}
    assert len({c.voice for c in CORPUS}) >= 6 and len({c.rate for c in CORPUS}) >= 4


def test_a_soft_first_word_is_said_at_its_fraction_of_the_level() -> None:
    clip = Clip("Well, what is the weather like?", "en-us", 160, "soft")
    soft, plain = samples_of(spoken(clip)), samples_of(spoken(Clip("Well,", "en-us")))
    head = soft[: len(plain)]
    assert np.abs(head).max() <= np.abs(plain).max() * SOFT * 1.01


def test_where_the_recognized_audio_began_is_found_in_the_wav() -> None:
    rng = np.random.default_rng(1)
    wav = pcm_of(rng.uniform(-0.5, 0.5, 16_000 * 3).astype(np.float32))
    assert start_of(wav[2 * 8_000 : 2 * 40_000], wav) == 500.0  # 8000 samples in: 500 ms
    assert start_of(wav[:100], wav) is None  # too short to tell


def test_a_row_compares_the_page_with_the_worst_offline_reading() -> None:
    clip = Clip("Tell me about sea otters.", "en-gb")
    speech = np.random.default_rng(2).uniform(-0.1, 0.1, 16_000).astype(np.float32)
    pcm = bytes(LEAD_MS * 32) + pcm_of(speech) + bytes(TAIL_MS * 32)
    readings = ["Tell me about sea otters.", "Tell me about the otters."]
    page = {"page": "Tell me about the otters.", "utterances": 1}
    got = row(clip, readings, page, pcm, [pcm[LEAD_MS * 32 - 3200 :]])
    assert (got["offline_wer"], got["page_wer"], got["offline_worst_wer"]) == (0.0, 0.2, 0.2)
    assert got["worse_by"] == 0.2 and got["worse_than_worst"] == 0.0
    assert got["lead_ms"] == 100.0 and got["speech_db"] == level_db(samples_of(pcm_of(speech)))
    assert got["voiced_ms"] == 0.0 and got["clip"] == "en-gb@160/plain: Tell me about sea otters."


def test_the_voice_begins_after_a_click_or_a_breath_the_trim_kept() -> None:
    rng = np.random.default_rng(3)
    click = np.zeros(320 * 10, np.float32)
    click[0] = 0.02  # over the trim level, one sample
    breath = rng.uniform(-0.003, 0.003, 320 * 5).astype(np.float32)  # -55 dB
    voice = rng.uniform(-0.3, 0.3, 320 * 20).astype(np.float32)
    assert voiced_at(np.concatenate([click, breath, voice])) == 300.0  # frame 15
    lone = np.concatenate([voice[:320], np.zeros(640, np.float32), voice])  # one loud frame
    assert voiced_at(lone) == 60.0
    assert voiced_at(np.zeros(3200, np.float32)) is None


def human(samples: np.ndarray) -> HumanClip:
    return HumanClip(
        name="001",
        speaker="cards speaker, male",
        text="ten of clubs",
        samples=samples,
        package="pocketsphinx==5.1.1",
        path="test/data/cards/001.wav",
        license="BSD-style",
        words_from="cards.transcription",
    )


def test_the_corpus_is_chosen_by_name_the_espeak_one_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    people = [human(np.zeros(160, np.float32))]
    monkeypatch.setattr(page_hearing, "human_clips", lambda: people)
    assert corpus("espeak") is CORPUS and corpus("human") == people
    with pytest.raises(ValueError, match="no corpus 'people': one of espeak, human"):
        corpus("people")
    assert label(people[0]) == "001 (cards speaker, male): ten of clubs"
    assert label(CORPUS[0]) == CORPUS[0].name


def test_a_human_clip_is_written_as_a_16_khz_wav_with_silence_around_it(tmp_path: Path) -> None:
    speech = np.array([0.5, -0.25, 1.5, -1.5, 0.0, 0.125], np.float32)
    pcm = clip_wav(human(speech), tmp_path / "clip.wav")
    with wave.open(str(tmp_path / "clip.wav")) as wav:
        shape = (wav.getnchannels(), wav.getsampwidth(), wav.getframerate())
        frames = wav.readframes(wav.getnframes())
    assert shape == (1, 2, 16_000) and frames == pcm
    lead, tail = LEAD_MS * 32, TAIL_MS * 32
    assert pcm[:lead] == bytes(lead) and pcm[-tail:] == bytes(tail)
    middle = np.frombuffer(pcm[lead:-tail], "<i2")
    assert middle.tolist() == [16383, -8191, 32767, -32767, 0, 4095]  # clipped at full scale
    assert wav_ms(tmp_path / "clip.wav") == LEAD_MS + TAIL_MS + 6 / 16


def test_the_human_corpus_is_heard_and_reported_under_its_own_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    people = [human(np.full(1600, 0.1, np.float32))]
    monkeypatch.setattr(page_hearing, "human_clips", lambda: people)
    heard: list[Sequence[object]] = []

    def hear(clips: Sequence[object], variant: str) -> list[dict[str, Any]]:
        heard.append(clips)
        pcm = bytes(LEAD_MS * 32) + pcm_of(people[0].samples) + bytes(TAIL_MS * 32)
        page = {"page": "ten of clubs", "utterances": 1}
        return [row(people[0], ["ten of clubs"] * 5, page, pcm, [pcm])]

    monkeypatch.setattr(page_hearing, "hear", hear)
    assert main(["--corpus", "human", "--out", str(tmp_path)]) == 0
    assert heard == [people]
    result = json.loads((tmp_path / "page_hearing_human.json").read_text())
    assert (result["corpus"], result["clips"], result["over_bound"]) == ("human", 1, 0)
    text = (tmp_path / "page_hearing_human.md").read_text()
    assert "`python -m bench.speech.page_hearing --corpus human --variant page`" in text
    assert "| 001 (cards speaker, male): ten of clubs | ten of clubs |" in text
    assert "asr_human.md" in text


def test_the_page_and_the_offline_reading_take_the_listening_settings_of_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("VOICE_AGENT_ASR_FIRST", "4")
    monkeypatch.setenv("VOICE_AGENT_ASR_MODEL", "/models/whisper-base")
    settings = listening()
    assert (settings.asr_first, settings.asr_model) == (4, "/models/whisper-base")
