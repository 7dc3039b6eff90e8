"""The speech-span benchmark's parts: its corpus and its report (the measuring runs the model)."""

from __future__ import annotations

from bench.speech.speech_span import SHORT, corpus, markdown


def test_the_corpus_holds_each_sentence_once_the_short_ones_included() -> None:
    texts = corpus()
    assert len(texts) == len(set(texts)) > 30 and set(SHORT) <= set(texts)
    assert "Well, hmm" in texts  # a sentence with no closing mark


def test_the_report_gives_the_smallest_room_and_the_tightest_sentences() -> None:
    row = {"text": "Yes!", "voice": "jf_alpha", "speed": 1.3, "head": 0.4, "tail": 0.3}
    result = {
        "threshold": -6.0,
        "margin_frames": 4,
        "sentences": 61,
        "voices": 5,
        "speeds": [0.8, 1.0, 1.3],
        "decoded": 915,
        "smallest_room_before_frames": -0.8,
        "smallest_room_after_frames": 0.3,
        "share_outside_span": 0.136,
        "tightest": [row],
    }
    page = markdown(result)
    assert "| -0.8 | 0.3 | 13.6% |" in page
    assert "| Yes! | jf_alpha | 1.3 | 0.4 | 0.3 |" in page
    assert "61 sentences x 5 voices x 3 speeds (0.8, 1.0, 1.3), 915 decoded whole" in page
