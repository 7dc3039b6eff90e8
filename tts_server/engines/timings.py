"""Word timings from Kokoro's own predicted durations, not estimated.

Kokoro's duration predictor gives every input token (the two boundary pads included) a whole
number of frames, and the decoder turns each frame into the same number of samples (600 at
24 kHz), so the audio of token ``k`` is exactly samples ``[ends[k-1], ends[k])`` of the model's
output. An engine turns its tokens' frames into per-character bounds of the piece's phoneme
string (``char_bounds``: a character outside the vocabulary is not a token and takes no
time); the G2P says which characters each word became (``WordSpan``), and ``word_times`` reads
each word's first and last sample off the bounds, after the same silence trimming as the audio.

Where normalization changed the text, a word's time names the written text it says
(``written_words``): the spoken words of one written word ("five dollars and ninety-nine
cents" for "$5.99") become one ``WordTime`` from the first's start to the last's end.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass

import numpy as np

from tts_server.engines.g2p import WordSpan
from tts_server.normalize import Normalized


@dataclass(frozen=True, slots=True)
class Timed:
    """A piece's audio and, when the engine knows them, its phoneme characters' bounds.

    ``bounds[i]`` is the sample where character ``i`` of the piece's phonemes starts, and
    ``bounds[-1]`` where the last one ends (``len(phonemes) + 1`` entries), in ``audio``.
    """

    audio: np.ndarray
    bounds: np.ndarray | None = None


@dataclass(frozen=True, slots=True)
class WordTime:
    """A word of a chunk: ``text`` is heard in samples ``[start, end)`` of the chunk's audio.

    ``text`` is the text as written; ``spoken`` the words said for it where they differ
    ("$5.99" said as "five dollars and ninety-nine cents"), else None.
    """

    text: str
    start: int
    end: int
    spoken: str | None = None


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece's trimmed audio and the words it speaks (empty when timings are unknown)."""

    audio: np.ndarray
    words: tuple[WordTime, ...] = ()


def char_bounds(
    phonemes: str, vocab: Container[str], frames: Sequence[int] | np.ndarray, samples: int
) -> np.ndarray | None:
    """Per-character start samples of ``phonemes`` (see ``Timed``) from per-token ``frames``.

    ``frames`` has one count per token: the leading pad, each character in ``vocab``, the
    trailing pad. Samples per frame are ``samples / sum(frames)`` (600 for Kokoro). None when
    the counts do not fit the phonemes (then no timings are better than wrong ones).
    """
    counts = np.asarray(frames, dtype=np.int64).ravel()
    spoken = [ch in vocab for ch in phonemes]
    total = int(counts.sum())
    if counts.size != sum(spoken) + 2 or total <= 0 or samples <= 0:
        return None
    ends = np.cumsum(counts) * (samples / total)
    token_before = np.concatenate([[0], np.cumsum(spoken)])  # tokens done before each char
    return np.rint(ends[token_before]).astype(np.int64)


def word_times(
    words: Sequence[WordSpan], piece: tuple[int, int], bounds: np.ndarray, window: tuple[int, int]
) -> tuple[WordTime, ...]:
    """The words whose phonemes start in ``piece`` (offsets into the whole phoneme string),
    timed in the kept ``window`` ``(first, stop)`` of the piece's audio (trimming).

    Times are samples from the window's start, clipped to it. One rule ends the piece: a word
    is timed where it has samples, its phonemes clipped to the piece and its samples to the
    window; one with none is dropped, whether trimmed away or starting at or past the piece's
    end (a later piece's). A word that starts before the piece is an earlier piece's.
    """
    start, end = piece
    first, stop = window
    out: list[WordTime] = []
    last_source: int | None = None
    for word in words:
        if word.start < start:
            continue
        a = int(bounds[min(word.start, end) - start]) - first
        b = int(bounds[min(word.end, end) - start]) - first
        a, b = max(0, a), min(stop - first, b)
        if b <= a:  # no sample of it here
            continue
        if word.source is not None and word.source == last_source and out:
            merged = out[-1]
            out[-1] = WordTime(merged.text, merged.start, b, f"{merged.spoken} {word.text}")
            continue
        if word.written is None:
            out.append(WordTime(word.text, a, b))
        else:
            out.append(WordTime(word.written, a, b, word.text))
        last_source = word.source
    return tuple(out)


def written_words(
    words: Sequence[WordSpan], part: str, offset: int, normalized: Normalized
) -> tuple[WordSpan, ...]:
    """``words`` (of ``part``, which starts at ``offset`` of ``normalized.text``) with the
    written text each says where normalization changed it.

    Each word is found in order in ``part``; one the G2P reworded cannot be found and keeps
    its spoken text, as do the rest (no guessing at a misplaced written word).
    """
    if not normalized.replacements:
        return tuple(words)
    out = []
    cursor = 0
    for index, word in enumerate(words):
        at = part.find(word.text, cursor)
        if at < 0:
            out.extend(words[index:])
            break
        cursor = at + len(word.text)
        first, last, source = normalized.written_span(offset + at, offset + cursor)
        if source is None:
            out.append(word)
            continue
        written = normalized.written[first:last]
        out.append(WordSpan(word.text, word.start, word.end, written, source))
    return tuple(out)
