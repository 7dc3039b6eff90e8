"""Whisper on a window fitted to the utterance, not its 30 s one: a quarter of the time.

Whisper's encoder reads 30 s of log-mel, however short the speech: for a 3 s question nine
tenths of its work (about 270 ms of tiny.en's 360 on 2 cores) is spent on zero padding.
CTranslate2's encoder takes any length up to 30 s, and Whisper reads a shorter one well as
long as enough silence follows the speech (with 1-2 s it loops or misreads; with 8 s its word
error rate is the 30 s window's: docs/benchmarks/asr_voices.md). ``fitted`` decodes the clip
plus ``context_s`` of silence, greedy, without timestamps, as the full path does, and returns
the text only where Whisper is as sure as its own rule asks (average log-probability at least
-1, compression ratio at most 2.4, the decoder not cut at its token limit); otherwise None,
and the caller runs faster-whisper's own 30 s path, with its temperature fallback.

tiny.en reads an edge word differently as the cut moves by parts of its 20 ms frame, so the
clip may be read at several phases and the surest reading kept; reading them all costs 2.7
times one reading. ``first`` of them are read at once, and the others only where those are
not ``settled`` (they disagree, one is doubted, or none is ``sure`` enough): two first
readings, 10 ms apart, kept four readings' word error rate at two thirds of their median time
on the page-hearing corpus (docs/benchmarks/asr_readings.md); one reading and a confidence
bar did not.

A reading can loop and still pass Whisper's compression rule, which is set for its 30 s
window: "Hey, we're all to the first computer, we're all to the first computer, we're all"
compresses only 1.74 times. So a reading that ``loops`` (words said again straight after
themselves, ``LOOP_WORDS`` or more of them: no right transcript in the project's benchmarks
repeats more than 2, every loop there 4 or more) loses to any that does not, and counts as
unsure; where every reading loops, the surest is kept ``collapsed`` to its first copy (the
whole window loops on such audio too).
"""

from __future__ import annotations

import math
import re
import zlib
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from faster_whisper import WhisperModel
    from faster_whisper.tokenizer import Tokenizer

WHISPER_WINDOW_S = 30  # the encoder's own window
FRAMES_PER_S = 100  # Whisper's log-mel: 10 ms hops
LOW_LOGPROB = -1.0  # Whisper's rules for a decoding to retry (faster-whisper's defaults)
MAX_COMPRESSION = 2.4
TOKENS_PER_S = 12  # far over speech's rate: a decoder that reaches it is looping
MIN_TOKENS = 24
NO_SPEECH_PROB = 0.6  # Whisper's bar for "nobody spoke" (faster-whisper's default)
ENCODER_FRAME_S = 0.02  # two log-mel hops: the encoder's stride
WORD = re.compile(r"[a-z0-9']+")  # readings agree when their words do, case and marks aside
LOOP_WORDS = 4  # the fewest words said again that make a loop (see the module's docstring)


def window_frames(samples: int, sample_rate: int, context_s: float) -> int | None:
    """The encoder's frames for a clip of ``samples`` plus ``context_s`` of silence, in whole
    seconds; None where that is Whisper's own window or longer (or ``context_s`` is 0)."""
    seconds = math.ceil(samples / sample_rate + context_s)
    if context_s <= 0 or seconds >= WHISPER_WINDOW_S:
        return None
    return seconds * FRAMES_PER_S


def compression_ratio(text: str) -> float:
    """How much zlib shrinks ``text``: a decoder repeating itself shrinks well (nothing: 0,
    since zlib's output is never empty)."""
    data = text.encode()
    return len(data) / len(zlib.compress(data))


@cache
def english_decoding(model: WhisperModel) -> tuple[Tokenizer, list[int], list[int]]:
    """The tokenizer, the prompt (English, transcribe, no timestamps), the tokens suppressed."""
    from faster_whisper.tokenizer import Tokenizer
    from faster_whisper.transcribe import get_suppressed_tokens

    tokenizer = Tokenizer(
        model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en"
    )
    prompt = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    return tokenizer, prompt, list(get_suppressed_tokens(tokenizer, [-1]))


def decoding(
    model: WhisperModel, before: str = "", timestamps: bool = False
) -> tuple[Tokenizer, list[int], list[int]]:
    """``english_decoding`` after ``before`` (faster-whisper's initial_prompt: the previous
    text, then the task; none: no prompt); ``timestamps``: Whisper times its text."""
    tokenizer, prompt, suppressed = english_decoding(model)
    if timestamps:
        prompt = prompt[:-1]  # without <|notimestamps|>
    if before:
        prompt = [tokenizer.sot_prev, *tokenizer.encode(" " + before.strip()), *prompt]
    return tokenizer, prompt, suppressed


def timed(
    model: WhisperModel, audio: np.ndarray, sample_rate: int, context_s: float, before: str
) -> str | None:
    """``audio`` read once on its fitted window after ``before``, greedy, Whisper timing its
    text: another mode's reading, its words whatever its doubts (the timestamps dropped), to
    check a reading by; None where the window is not shorter."""
    frames = window_frames(audio.size, sample_rate, context_s)
    if frames is None:
        return None
    tokenizer, prompt, suppressed = decoding(model, before, timestamps=True)
    limit = max(MIN_TOKENS, math.ceil(audio.size / sample_rate * TOKENS_PER_S))
    [result] = model.model.generate(
        model.encode(window_features(model, audio, frames)[np.newaxis]),
        [prompt],
        beam_size=1,
        max_length=len(prompt) + limit,
        suppress_blank=True,
        suppress_tokens=suppressed,
    )
    return tokenizer.decode(result.sequences_ids[0]).strip()


def window_features(model: WhisperModel, audio: np.ndarray, frames: int) -> np.ndarray:
    """Whisper's log-mel of ``audio``, cut or zero-padded to ``frames``."""
    features = model.feature_extractor(audio, padding=0)[:, :frames]
    return np.pad(features, ((0, 0), (0, frames - features.shape[1])))


def fitted(
    model: WhisperModel,
    audio: np.ndarray,
    sample_rate: int,
    context_s: float,
    phases: int = 1,
    first: int | None = None,
    sure: float = 0.0,
    before: str = "",
) -> str | None:
    """``audio`` (float, ``sample_rate``) recognized on a window of itself plus ``context_s``:
    the text, or None where the window is not shorter or Whisper is unsure of it. With
    ``phases`` over 1, up to that many readings, the audio delayed by even steps of one encoder
    frame (20 ms): tiny.en reads the same words differently as they move against its frames.
    ``first`` of them (all, by default), spread over the frame, are read in one batch; the
    ``surest`` that passes Whisper's rules is kept alone where they are ``settled``, else the
    others are read in a second batch and the surest of all is kept (one that loops only
    where all do). ``before``: text Whisper reads as said just before (its prompt)."""
    delays = [round(sample_rate * ENCODER_FRAME_S * n / phases) for n in range(phases)]
    frames = window_frames(audio.size + delays[-1], sample_rate, context_s)
    if frames is None:
        return None
    count = phases if first is None else max(1, min(first, phases))
    leading = [round(n * phases / count) for n in range(count)]
    rest = [n for n in range(phases) if n not in leading]
    readings = read(model, audio, sample_rate, frames, [delays[n] for n in leading], before)
    if rest and not settled(readings, sure):
        readings += read(model, audio, sample_rate, frames, [delays[n] for n in rest], before)
    sure_ones = [reading for reading in readings if reading is not None]
    return surest(sure_ones) if sure_ones else None


def surest(readings: list[tuple[float, str]]) -> str:
    """The surest of ``readings`` that does not loop; where all do, the surest collapsed."""
    plain = [reading for reading in readings if not loops(reading[1])]
    return max(plain)[1] if plain else collapsed(max(readings)[1])


def words(text: str) -> list[tuple[str, int]]:
    """``text``'s words as readings compare them (case and marks aside), each with where it
    ends in ``text``."""
    found = ((WORD.findall(m.group().lower()), m.end()) for m in re.finditer(r"\S+", text))
    return [("".join(parts), end) for parts, end in found if parts]


def loop(keys: list[str]) -> tuple[int, int, int] | None:
    """The longest run of ``keys`` said again straight after itself, at least once whole and
    ``LOOP_WORDS`` keys in all: its start, the length of what repeats, its end (exclusive)."""
    best: tuple[int, int, int] | None = None
    for unit in range(1, len(keys) // 2 + 1):
        start = unit  # where the current run of keys equal to theirs ``unit`` back began
        for end in range(unit, len(keys) + 1):
            if end < len(keys) and keys[end] == keys[end - unit]:
                continue
            again = end - start
            if again >= max(unit, LOOP_WORDS) and (
                best is None or again > best[2] - best[0] - best[1]
            ):
                best = (start - unit, unit, end)
            start = end + 1
    return best


def loops(text: str) -> bool:
    """Whether the decoder repeated itself in ``text`` (``loop``)."""
    return loop([key for key, _ in words(text)]) is not None


def collapsed(text: str) -> str:
    """``text`` with each loop cut to its first copy: the whole copies after it go, and a
    copy the decoder broke off at the end of the text."""
    while (found := words(text)) and (run := loop([key for key, _ in found])):
        start, unit, end = run
        whole = start + unit + (end - start - unit) // unit * unit  # after the whole copies
        cut = end if end == len(found) else whole
        head, tail = text[: found[start + unit - 1][1]], text[found[cut - 1][1] :]
        text = head + tail if tail.strip() else head.rstrip(",;:- ")
    return text.strip()


def settled(readings: list[tuple[float, str] | None], sure: float) -> bool:
    """Whether more phases would add nothing: every reading passes Whisper's rules, all read
    the same words, and the surest's mean token probability (the exponent of its average
    log-probability) is at least ``sure``; none ``loops``."""
    kept = [reading for reading in readings if reading is not None]
    if not kept or len(kept) < len(readings) or any(loops(text) for _, text in kept):
        return False
    said = {tuple(WORD.findall(text.lower())) for _, text in kept}
    return len(said) == 1 and math.exp(max(score for score, _ in kept)) >= sure


def read(
    model: WhisperModel,
    audio: np.ndarray,
    sample_rate: int,
    frames: int,
    delays: list[int],
    before: str = "",
) -> list[tuple[float, str] | None]:
    """One batch: ``audio`` delayed by each of ``delays`` (samples) on a window of ``frames``,
    greedy, after ``before`` (none: no prompt); each reading's average log-probability and
    text, or None where Whisper doubts it."""
    tokenizer, prompt, suppressed = decoding(model, before)
    limit = max(MIN_TOKENS, math.ceil(audio.size / sample_rate * TOKENS_PER_S))
    features = [
        window_features(model, np.concatenate([np.zeros(d, audio.dtype), audio]), frames)
        for d in delays
    ]
    results = model.model.generate(
        model.encode(np.stack(features)),
        [prompt] * len(delays),
        beam_size=1,
        max_length=len(prompt) + limit,
        return_scores=True,
        return_no_speech_prob=True,
        suppress_blank=True,
        suppress_tokens=suppressed,
    )
    return [_reading(tokenizer, result, limit) for result in results]


def _reading(tokenizer: Tokenizer, result: Any, limit: int) -> tuple[float, str] | None:
    """One decoding's average log-probability and text, or None where Whisper's rules would
    retry it (the decoder at its token limit, unsure, or looping) or where it may have heard
    nobody (no word read, or Whisper's no-speech probability over its bar): the 30 s path and
    its no-speech rule decide those."""
    tokens = result.sequences_ids[0]
    text = tokenizer.decode(tokens).strip()
    avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)  # as faster-whisper's
    if (
        len(tokens) >= limit
        or avg_logprob < LOW_LOGPROB
        or compression_ratio(text) > MAX_COMPRESSION
        or result.no_speech_prob > NO_SPEECH_PROB
        or not any(char.isalnum() for char in text)
    ):
        return None
    return avg_logprob, text
