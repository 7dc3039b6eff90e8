"""The pause corpus: its text lists, and the pause spliced into the TTS audio at a word gap."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from bench.latency.pause_corpus import (
    MARK,
    PAUSES_MS,
    SENTENCES,
    PauseItem,
    Spoken,
    items,
    say,
    split_ms,
    texts,
)
from tts_protocol import pcm16_to_float
from tts_server.engines import Engine


def test_the_corpus_is_thirty_sentences_each_paused_once_between_300_and_900_ms() -> None:
    assert len(SENTENCES) >= 30 and len(set(SENTENCES)) == len(SENTENCES)
    assert all(sentence.count(MARK) == 1 for sentence in SENTENCES)
    assert min(PAUSES_MS) == 300 and max(PAUSES_MS) == 900
    assert texts(1) == ["I'd like a table for four people tonight."]


def test_the_pause_goes_into_the_gap_between_the_words_at_the_mark(engine: Engine) -> None:
    spoken = asyncio.run(say(texts(2), engine))
    first, second = items(spoken, 2)
    assert (first.pause_ms, second.pause_ms) == PAUSES_MS[:2]
    words = spoken[first.text].words
    assert len(words) == len(first.text.split())
    assert words[4][1] <= first.split_ms <= words[5][0]  # after "for", before "four"
    at = int(first.split_ms * 16) * 2
    assert first.paused == first.pcm[:at] + bytes(first.pause_ms * 32) + first.pcm[at:]
    assert first.resume_ms == first.split_ms + first.pause_ms
    gap = pcm16_to_float(first.pcm[at - 320 : at + 320])  # 10 ms either side of the split
    assert np.abs(gap).max() < np.abs(pcm16_to_float(first.pcm)).max() / 2


def test_word_timings_that_do_not_fit_the_words_are_an_error() -> None:
    with pytest.raises(ValueError, match="word timings"):
        split_ms("a table for | four", Spoken(b"", ((0.0, 10.0), (20.0, 30.0))))


def test_an_item_without_a_pause_keeps_its_audio() -> None:
    item = PauseItem("x", b"\x01\x00" * 160, 5.0, 0)
    assert item.paused == item.pcm and item.resume_ms == 5.0
