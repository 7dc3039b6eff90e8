"""The page-hearing benchmark's own parts: its corpus, its alignment, its report."""

from __future__ import annotations

import numpy as np

from bench.speech.page_hearing import (
    CORPUS,
    LEAD_MS,
    SOFT,
    TAIL_MS,
    Clip,
    level_db,
    markdown,
    pcm_of,
    report,
    row,
    samples_of,
    spoken,
    start_of,
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


def test_a_row_and_the_report_compare_the_page_with_the_worst_offline_reading() -> None:
    clip = Clip("Tell me about sea otters.", "en-gb")
    speech = np.random.default_rng(2).uniform(-0.1, 0.1, 16_000).astype(np.float32)
    pcm = bytes(LEAD_MS * 32) + pcm_of(speech) + bytes(TAIL_MS * 32)
    readings = ["Tell me about sea otters.", "Tell me about the otters."]
    page = {"page": "Tell me about the otters.", "utterances": 1}
    got = row(clip, readings, page, pcm, [pcm[LEAD_MS * 32 - 3200 :]])
    assert (got["offline_wer"], got["page_wer"], got["offline_worst_wer"]) == (0.0, 0.2, 0.2)
    assert got["worse_by"] == 0.2 and got["worse_than_worst"] == 0.0
    assert got["lead_ms"] == 100.0 and got["speech_db"] == level_db(samples_of(pcm_of(speech)))
    result = report([got], "page")
    assert (result["over_bound"], result["over_spread"], result["clips"]) == (1, 0, 1)
    assert "| en-gb@160/plain: Tell me about sea otters. |" in markdown(result)
