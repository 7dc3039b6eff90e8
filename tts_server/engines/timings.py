"""Word timings from Kokoro's own predicted durations, not estimated.

Kokoro's duration predictor gives every input token (the two boundary pads included) a whole
number of frames, and the decoder turns each frame into the same number of samples (600 at
24 kHz), so the audio of token ``k`` is exactly samples ``[ends[k-1], ends[k])`` of the model's
output. An engine turns its tokens' frames into per-character bounds of the piece's phoneme
string (``char_bounds``: a character outside the vocabulary is not a token and takes no
time); the G2P says which characters each word became (``WordSpan``), and ``word_times`` reads
each word's first and last sample off the bounds, after the same silence trimming as the audio.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass

import numpy as np

from tts_server.engines.g2p import WordSpan


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
    """A word of a chunk: ``text`` is heard in samples ``[start, end)`` of the chunk's audio."""

    text: str
    start: int
    end: int


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

    Times are samples from the window's start, clipped to it; a word trimmed away is dropped.
    """
    start, end = piece
    first, stop = window
    out = []
    for word in words:
        if not start <= word.start < end:
            continue
        a = int(bounds[word.start - start]) - first
        b = int(bounds[min(word.end, end) - start]) - first
        a, b = max(0, a), min(stop - first, b)
        if b > a:
            out.append(WordTime(word.text, a, b))
    return tuple(out)
