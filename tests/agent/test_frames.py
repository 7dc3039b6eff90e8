"""Every /ws frame within AgentCore's 32 KB WebSocket frame limit, read as 32,000 bytes
(``agent.events.fitted``, ``agent.browser_leg.audio_frames``), whatever the sentence's length,
script, voice or speed: the longest segment the segmenter lets through, its word timings, a long
text delta, a long transcript and error, and audio of any length."""

from __future__ import annotations

import json

import pytest

from agent.browser_leg import AUDIO_HEADER, MAX_FRAME_BYTES, audio_frames, split_audio_frame
from agent.events import (
    CUT,
    ErrorEvent,
    Refused,
    Segment,
    SegmentMarks,
    TextDelta,
    Transcript,
    fitted,
)
from agent.segmenter import SentenceSegmenter
from tts_protocol import Word

ASTRAL = "\U0001f600"  # 12 bytes of JSON (two \u escapes): the widest a character gets


def longest_segment(word: str) -> str:
    """The longest segment the segmenter cuts from a stream of ``word``s with no sentence end."""
    segmenter = SentenceSegmenter()
    segments = segmenter.push(" ".join([word] * 2000)) + segmenter.flush()
    return max(segments, key=len)


def sizes(events: list) -> list[int]:
    return [len(event.to_json()) for event in events]


@pytest.mark.parametrize("word", ["a", ASTRAL, "\u00e9t\u00e9", ASTRAL * 3])
def test_the_longest_segment_and_its_word_timings_fit_a_frame(word: str) -> None:
    text = longest_segment(word)
    assert len(text) > 300  # at the segmenter's cap (350 characters)
    assert max(sizes(fitted(Segment(7, text)))) <= MAX_FRAME_BYTES
    assert fitted(Segment(7, text)) == [Segment(7, text)]  # it fits whole: no cut
    spoken = " ".join(["ninety-nine quintillion"] * 40)  # normalization reads a word out long
    words = tuple(
        Word(w, 123456.7 + i, 123457.8 + i, spoken) for i, w in enumerate(text.split(" "))
    )
    marks = SegmentMarks(7, words)
    assert len(marks.to_json()) > MAX_FRAME_BYTES  # too big for one frame as it was
    parts = fitted(marks)
    assert max(sizes(parts)) <= MAX_FRAME_BYTES
    assert all(part.seq == 7 for part in parts)
    assert tuple(w for part in parts for w in part.words) == words  # every word, in order


def test_a_long_text_delta_is_split_between_characters_and_joins_back() -> None:
    text = ("Hello w\u00f6rld " + ASTRAL) * 5000
    parts = fitted(TextDelta(text))
    assert len(parts) > 1 and max(sizes(parts)) <= MAX_FRAME_BYTES
    assert "".join(part.text for part in parts) == text


@pytest.mark.parametrize(
    "event",
    [
        Transcript("so " * 20_000, audio_ms=600_000.0, asr_ms=9000.0),
        ErrorEvent("llm_error", "model said: " + ASTRAL * 10_000),
        Refused("invalid_request", "x" * 40_000, "prompt"),
    ],
)
def test_a_one_message_event_has_its_long_text_cut_with_a_mark(event: object) -> None:
    (fit,) = fitted(event)  # type: ignore[arg-type]
    frame = fit.to_json()
    assert MAX_FRAME_BYTES - 24 <= len(frame) <= MAX_FRAME_BYTES  # cut close to the bound
    assert type(fit) is type(event)
    body = json.loads(frame)
    longest = max((v for v in body.values() if isinstance(v, str)), key=len)
    assert longest.endswith(CUT)
    assert body["type"] == event.type  # type: ignore[attr-defined]


def test_a_frame_that_fits_is_left_as_it_is_and_the_bound_is_inclusive() -> None:
    delta = TextDelta("x" * (MAX_FRAME_BYTES - len(TextDelta("").to_json())))
    assert len(delta.to_json()) == MAX_FRAME_BYTES
    assert fitted(delta) == [delta]
    longer = TextDelta(delta.text + "x")
    assert [len(p.text) for p in fitted(longer)] == [len(longer.text) // 2] * 2


@pytest.mark.parametrize("char", ["y", "\x01", "\U0001f30a"])  # 1, 6 and 12 bytes escaped
def test_one_word_too_long_for_a_frame_keeps_its_times_and_a_cut_text(char: str) -> None:
    word = Word(char * 50_000, 1.0, 2.0, "z" * 50_000)
    (fit,) = fitted(SegmentMarks(3, (word,)))
    assert len(fit.to_json()) <= MAX_FRAME_BYTES
    (short,) = fit.words
    assert (short.start_ms, short.end_ms, short.spoken) == (1.0, 2.0, None)
    assert short.text.endswith(CUT)


@pytest.mark.parametrize("pcm_bytes", [0, 2, 4800, MAX_FRAME_BYTES - 4, MAX_FRAME_BYTES, 10**6])
def test_audio_of_any_length_goes_in_frames_of_whole_samples_within_the_bound(
    pcm_bytes: int,
) -> None:
    pcm = bytes(range(256)) * (pcm_bytes // 256) + bytes(pcm_bytes % 256)
    frames = audio_frames(9, pcm)
    assert all(len(frame) <= MAX_FRAME_BYTES for frame in frames)
    assert all((len(frame) - AUDIO_HEADER.size) % 2 == 0 for frame in frames)
    assert b"".join(split_audio_frame(frame)[1] for frame in frames) == pcm
    assert {split_audio_frame(frame)[0] for frame in frames} <= {9}
    assert len(frames) == -(-pcm_bytes // (MAX_FRAME_BYTES - AUDIO_HEADER.size))
