"""The engine interface: text + voice + speed in, 24 kHz float32 audio chunks out.

One public entry point, ``synthesize``, and one hook for an engine to provide, ``_infer_batch``.

An engine cuts text into sentence-sized pieces (a long run at clause marks or spaces, the first
piece short), turns each into phonemes just before it is needed (shared English G2P, on its own
thread so that it overlaps inference), cuts those into model-sized pieces, and hands each piece
to its ``BatchScheduler``: the pieces of every connection share one queue and run on the
engine's worker lanes, batched where the engine can (``batchable``), so inference never blocks
the event loop. Each sentence is its own piece, and its audio is yielded before the next one is
submitted.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from tts_protocol import SAMPLE_RATE
from tts_protocol.validation import VoiceMix, voice_name
from tts_server.engines.g2p import (
    MAX_PHONEMES,
    Phonemized,
    check_speakable,
    phonemize,
    split_spans,
    split_text,
)
from tts_server.engines.scheduler import BatchScheduler, Piece, SchedulerStats
from tts_server.engines.timings import Chunk, Timed, word_times, written_words
from tts_server.engines.voices import BlendCache, BlendMismatch
from tts_server.normalize import Normalized, Options, normalize
from tts_server.settings import DEFAULT_BATCH_WAIT_MS

NORMALIZED = Options()  # every reading on: the default of every route
G2P = Callable[[str], str]  # text -> phonemes (EnglishG2P, or a PhonemeTable in front of it)


class EngineError(RuntimeError):
    """The engine could not be loaded or could not synthesize."""


class UnknownVoice(ValueError):
    """The requested voice is not one the engine has."""


@dataclass(frozen=True, slots=True)
class Trim:
    """Silence trimming at chunk edges, with short fades so seams neither click nor gap."""

    threshold: float = 0.01  # absolute amplitude below which a sample counts as silence
    pad_ms: float = 25.0  # silence kept before the first and after the last loud sample
    fade_ms: float = 5.0  # linear fade-in/out applied to the kept edges

    def __call__(self, audio: np.ndarray) -> np.ndarray:
        """Return ``audio`` without leading/trailing silence, faded in and out."""
        return self.cut(audio, self.window(audio))

    def window(self, audio: np.ndarray) -> tuple[int, int]:
        """The ``(first, stop)`` samples of ``audio`` that trimming keeps (empty: silence)."""
        loud = np.flatnonzero(np.abs(audio) > self.threshold)
        if loud.size == 0:
            return 0, 0
        pad = int(self.pad_ms * SAMPLE_RATE / 1000)
        return int(max(0, loud[0] - pad)), int(min(audio.size, loud[-1] + pad + 1))

    def cut(self, audio: np.ndarray, window: tuple[int, int]) -> np.ndarray:
        """``audio[first:stop]`` (a ``window``), faded in and out."""
        out = audio[window[0] : window[1]].astype(np.float32, copy=True)
        fade = min(int(self.fade_ms * SAMPLE_RATE / 1000), out.size // 2)
        if fade > 0:
            ramp = np.linspace(0.0, 1.0, fade, endpoint=False, dtype=np.float32)
            out[:fade] *= ramp
            out[-fade:] *= ramp[::-1]
        return out


def to_pcm16(audio: np.ndarray) -> bytes:
    """Float audio in [-1, 1] to little-endian signed 16-bit PCM bytes."""
    return (np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


class Engine(ABC):
    """A Kokoro engine. Subclasses load ``_voices`` and provide ``_infer_batch``.

    ``lanes`` worker threads run the model (one unless the engine keeps one model per lane);
    ``max_batch`` pieces at most go through one model call (1 unless ``batchable``), waiting
    at most ``batch_wait_ms`` for a batch to fill. Call ``super().__init__`` last: the lanes
    start at once.
    """

    name: str
    preferred_voice: str  # the default voice, when the engine has it
    sample_rate: int = SAMPLE_RATE
    batchable: bool = False  # whether _infer_batch runs several pieces in one model call
    _voices: Mapping[str, object]  # voice name -> style table

    def __init__(
        self,
        g2p: G2P,
        trim: Trim | None = None,
        *,
        lanes: int = 1,
        max_batch: int = 1,
        batch_wait_ms: float = DEFAULT_BATCH_WAIT_MS,
    ) -> None:
        self._g2p = g2p
        self._trim = trim or Trim()
        self._g2p_executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"{self.name}-g2p"
        )
        self._scheduler = BatchScheduler(
            self._infer_batch,
            size=lambda piece: len(piece.phonemes) + 2,  # ~tokens, with the boundary pads
            interrupt=self._interrupt,
            lanes=lanes,
            max_batch=max_batch if self.batchable else 1,
            wait_s=batch_wait_ms / 1000,
            name=self.name,
        )
        self._blends = BlendCache()

    @property
    def voices(self) -> tuple[str, ...]:
        """The voice names this engine can speak with."""
        return tuple(sorted(self._voices))

    @property
    def default_voice(self) -> str:
        """The voice used when a request names none."""
        return self.preferred_voice if self.preferred_voice in self._voices else self.voices[0]

    @property
    def max_batch(self) -> int:
        """The most pieces one model call runs."""
        return self._scheduler.max_batch

    @property
    def stats(self) -> SchedulerStats:
        """Pieces queued and in flight across all connections."""
        return self._scheduler.stats

    @abstractmethod
    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        """Blocking, on lane ``lane``'s thread: each piece's audio, with its phonemes' bounds
        where the engine knows its model's durations (the one hook an engine provides).

        The scheduler calls it with one piece, or with several if the engine is ``batchable``.
        """

    def resolve_voice(self, voice: VoiceMix | None) -> str:
        """The canonical name of ``voice``, a parsed voice or blend (the one voice check).

        ``None`` is the default voice. A blend's table is mixed now, so a bad blend fails here,
        never mid-stream. A voice the engine lacks raises ``UnknownVoice`` naming it.
        """
        if voice is None:
            return self.default_voice
        missing = ", ".join(repr(name) for name, _ in voice if name not in self._voices)
        if missing:
            raise UnknownVoice(f"unknown voice {missing}; available: {', '.join(self.voices)}")
        name = voice_name(voice)
        if len(voice) > 1:
            try:
                self._blends.mix(name, voice, self._voices)
            except BlendMismatch as exc:
                raise UnknownVoice(f"voice {name!r}: {exc}") from exc
        return name

    def style_table(self, voice: str) -> Any:
        """The style table of ``voice``, a name ``resolve_voice`` returned (a blend is cached)."""
        if voice in self._voices:
            return self._voices[voice]
        return self._blends.table(voice, self._voices)

    def _interrupt(self, lane: int) -> None:  # noqa: B027 - optional hook, not abstract
        """Abort the inference running on ``lane`` (every caller of its batch is gone).

        Called by the scheduler with its lock held, so the lane's batch cannot change meanwhile;
        default: let it end (its results are discarded).
        """

    def close(self) -> None:
        """Stop the worker lanes and the G2P thread (queued callers get an error)."""
        self._scheduler.close()
        self._g2p_executor.shutdown(wait=False, cancel_futures=True)

    async def phonemize(self, text: str) -> Phonemized:
        """Phonemes for ``text`` with each word's span in them, on the G2P thread.

        spaCy is not free: on its own thread it overlaps inference instead of queueing behind it.
        """
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._g2p_executor, phonemize, self._g2p, text)

    async def synthesize(
        self,
        text: str,
        voice: str,
        speed: float = 1.0,
        normalization: Options | None = NORMALIZED,
    ) -> AsyncIterator[Chunk]:
        """Trimmed float32 audio for ``text``, one chunk per model-sized piece, with its words.

        ``voice`` is a name ``resolve_voice`` returned: it is not checked again. The text is
        normalized first (numbers, money, abbreviations... in words) with ``normalization``'s
        switches; None speaks it as written. A chunk's words are those whose phonemes start
        in it, in samples from the chunk's first (trimmed) sample, each naming the written
        text it says; without the model's durations there are none. Text with letters the
        English G2P cannot speak raises ``UnsupportedText`` before anything is synthesized.
        """
        check_speakable(text)
        spoken = Normalized(text, text) if normalization is None else normalize(text, normalization)
        cursor = 0
        for part in split_text(spoken.text):  # each phonemized only when the one before is spoken
            offset = spoken.text.find(part, cursor)
            cursor = offset + len(part)
            phonemized = await self.phonemize(part)
            phonemes = phonemized.phonemes
            named = written_words(phonemized.words, part, offset, spoken)
            for span in split_spans(phonemes, MAX_PHONEMES):
                piece = Piece(phonemes[span[0] : span[1]], voice, speed)
                timed: Timed = await self._scheduler.synthesize(piece)
                audio = np.asarray(timed.audio, dtype=np.float32).ravel()
                window = self._trim.window(audio)
                trimmed = self._trim.cut(audio, window)
                if not trimmed.size:
                    continue
                words = (
                    () if timed.bounds is None else word_times(named, span, timed.bounds, window)
                )
                yield Chunk(trimmed, words)
