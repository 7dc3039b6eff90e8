"""Word timings, pure (no engine): ``word_times`` (which words a piece times, and where in its
kept audio), ``char_bounds`` (per-character samples), ``written_words`` (the written text)."""

from __future__ import annotations

import numpy as np
import pytest

from tts_server.engines.g2p import WordSpan
from tts_server.engines.timings import WordTime, char_bounds, word_times, written_words
from tts_server.normalize import normalize

# The piece is phonemes 4..10 of the sentence; bounds[i]: where its character i starts.
PIECE = (4, 10)
BOUNDS = np.array([0, 100, 200, 300, 400, 500, 600])
WHOLE = (0, 600)


def timed(words: list[WordSpan], window: tuple[int, int] = WHOLE) -> list[tuple[str, int, int]]:
    return [(w.text, w.start, w.end) for w in word_times(words, PIECE, BOUNDS, window)]


def test_a_word_starting_at_the_pieces_end_is_the_next_pieces_and_the_last_phoneme_is_this() -> (
    None
):
    """One rule at the piece's end: a word starting at or past it has no samples here."""
    words = [WordSpan("last", 9, 10), WordSpan("next", 10, 12), WordSpan("later", 13, 15)]
    assert timed(words) == [("last", 500, 600)]


def test_a_word_starting_before_the_piece_is_the_earlier_pieces_even_where_it_reaches_in() -> None:
    """A word hard-cut across pieces (longer than a piece) is timed only where it starts."""
    words = [WordSpan("cut", 1, 6), WordSpan("first", 4, 6), WordSpan("gone", 0, 2)]
    assert timed(words) == [("first", 0, 200)]


def test_a_word_past_the_pieces_end_is_clipped_to_it() -> None:
    assert timed([WordSpan("long", 8, 14)]) == [("long", 400, 600)]


def test_times_count_from_the_window_and_a_word_trimmed_away_is_dropped() -> None:
    words = [WordSpan("lead", 4, 5), WordSpan("edge", 5, 7), WordSpan("body", 7, 9)]
    words.append(WordSpan("tail", 9, 10))
    # kept: samples 150..450 of the piece
    assert timed(words, (150, 450)) == [("edge", 0, 150), ("body", 150, 300)]
    assert timed([WordSpan("none", 6, 6)]) == []  # no phoneme, no time


def test_the_words_of_one_written_word_are_one_time_naming_the_written_text() -> None:
    words = [
        WordSpan("five", 4, 6, "$5", source=0),
        WordSpan("dollars", 6, 8, "$5", source=0),
        WordSpan("now", 8, 10),
    ]
    assert word_times(words, PIECE, BOUNDS, WHOLE) == (
        WordTime("$5", 0, 400, "five dollars"),
        WordTime("now", 400, 600),
    )


def test_a_source_repeated_after_another_word_starts_a_new_time() -> None:
    words = [
        WordSpan("one", 4, 5, "1", source=3),
        WordSpan("and", 5, 6),
        WordSpan("two", 6, 7, "2", source=3),
    ]
    assert [w.text for w in word_times(words, PIECE, BOUNDS, WHOLE)] == ["1", "and", "2"]


# --- char_bounds: per-character samples from the token frames --------------------------------


def test_char_bounds_follow_the_frames_and_give_a_char_outside_the_vocab_no_time() -> None:
    # pad(2 frames) a(1) [x: no token] b(3) pad(4): 10 frames over 100 samples, 10 a frame
    bounds = char_bounds("axb", {"a", "b"}, [2, 1, 3, 4], 100)
    assert bounds is not None and bounds.dtype == np.int64
    assert bounds.tolist() == [20, 30, 30, 60]
    assert char_bounds("ab", {"a", "b"}, np.array([[1, 2, 2, 1]]), 60).tolist() == [10, 30, 50]
    assert char_bounds("ab", {"a", "b"}, [1, 1, 1, 0], 3).tolist() == [1, 2, 3]  # rint: 1.0..


def test_char_bounds_round_to_the_nearest_sample() -> None:
    assert char_bounds("a", {"a"}, [1, 1, 1], 10).tolist() == [3, 7]  # 3.33 and 6.67


@pytest.mark.parametrize(
    ("phonemes", "frames", "samples"),
    [
        ("ab", [1, 1, 1], 30),  # one token short
        ("ab", [1, 1, 1, 1, 1], 30),  # one token too many
        ("ab", [0, 0, 0, 0], 30),  # no frames at all
        ("ab", [1, 1, 1, 1], 0),  # no audio
        ("ab", [1, 1, 1, 1], -5),
    ],
)
def test_char_bounds_are_none_where_the_counts_do_not_fit(
    phonemes: str, frames: list[int], samples: int
) -> None:
    assert char_bounds(phonemes, {"a", "b"}, frames, samples) is None


# --- written_words: the written text each spoken word says ------------------------------------


def spans_of(text: str, offset: int = 0) -> list[WordSpan]:
    """Each word of ``text`` as a span of phonemes ``10 k .. 10 k + 8`` (any will do)."""
    return [WordSpan(w, offset + 10 * k, offset + 10 * k + 8) for k, w in enumerate(text.split())]


def test_without_replacements_the_words_are_as_spoken() -> None:
    normalized = normalize("Plain words here")
    spans = spans_of(normalized.text)
    assert written_words(spans, normalized.text, 0, normalized) == tuple(spans)


def test_the_spoken_words_of_a_replacement_name_it_and_its_source() -> None:
    normalized = normalize("Pay $5.99 now")  # "Pay five dollars and ninety-nine cents now"
    named = written_words(spans_of(normalized.text), normalized.text, 0, normalized)
    said = [(w.text, w.written, w.source) for w in named]
    assert said[0] == ("Pay", None, None) and said[-1] == ("now", None, None)
    assert {(w, s) for _, w, s in said[1:-1]} == {("$5.99", 0)}
    assert [w.start for w in named] == [10 * k for k in range(len(named))]  # spans kept


def test_a_part_after_the_start_finds_its_words_at_its_offset() -> None:
    normalized = normalize("Hello there. Pay $5 now.")
    at = normalized.text.index("Pay")
    part = normalized.text[at:]
    named = written_words(spans_of(part, 40), part, at, normalized)
    assert [(w.text, w.written, w.source) for w in named] == [
        ("Pay", None, None),
        ("five", "$5", 0),
        ("dollars", "$5", 0),
        ("now.", None, None),
    ]


def test_a_word_the_g2p_reworded_keeps_its_spoken_text_and_so_do_the_rest() -> None:
    normalized = normalize("Pay $5 now")
    spans = [WordSpan("Pay", 0, 3), WordSpan("fife", 4, 7), WordSpan("dollars", 8, 11)]
    named = written_words(spans, normalized.text, 0, normalized)
    assert named == (spans[0], spans[1], spans[2])


def test_the_smallest_counts_that_fit_still_give_bounds() -> None:
    """One frame in all, or one sample in all."""
    assert char_bounds("a", {"a"}, [0, 1, 0], 600).tolist() == [0, 600]
    assert char_bounds("a", {"a"}, [1, 1, 1], 1).tolist() == [0, 1]  # 1/3 and 2/3, rounded


def test_a_spoken_word_said_before_its_replacement_is_found_in_order() -> None:
    normalized = normalize("Pay five then $5 now")  # "Pay five then five dollars now"
    spans = spans_of(normalized.text)
    named = written_words(spans, normalized.text, 0, normalized)
    assert [(w.text, w.written, w.source) for w in named] == [
        ("Pay", None, None),
        ("five", None, None),
        ("then", None, None),
        ("five", "$5", 0),
        ("dollars", "$5", 0),
        ("now", None, None),
    ]
    assert [(w.start, w.end) for w in named] == [(s.start, s.end) for s in spans]


def test_a_written_word_said_as_one_word_is_timed_whole() -> None:
    words = [WordSpan("five", 4, 7, "5", source=0), WordSpan("cats", 7, 10)]
    assert word_times(words, PIECE, BOUNDS, WHOLE) == (
        WordTime("5", 0, 300, "five"),
        WordTime("cats", 300, 600),
    )
