"""``word_times``: which words a piece times, and where, in its kept audio (pure, no engine)."""

from __future__ import annotations

import numpy as np

from tts_server.engines.g2p import WordSpan
from tts_server.engines.timings import WordTime, word_times

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
