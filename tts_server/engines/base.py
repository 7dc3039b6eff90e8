"""The engine interface: text + voice + speed in, 24 kHz float32 audio chunks out.

An engine turns text into phonemes (shared English G2P), cuts them into model-sized pieces,
and runs each piece through its model on one dedicated worker thread, so inference never
blocks the event loop and concurrent requests are serialized instead of fighting for cores.
Each sentence is its own piece, and its audio is yielded before the next one is synthesized.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from tts_protocol import SAMPLE_RATE
from tts_server.g2p import MAX_PHONEMES, EnglishG2P, split_phonemes

T = TypeVar("T")


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
        loud = np.flatnonzero(np.abs(audio) > self.threshold)
        if loud.size == 0:
            return audio[:0]
        pad = int(self.pad_ms * SAMPLE_RATE / 1000)
        out = audio[max(0, loud[0] - pad) : loud[-1] + pad + 1].astype(np.float32, copy=True)
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
    """A Kokoro engine. Subclasses load ``_voices`` and provide one blocking inference call."""

    name: str
    preferred_voice: str  # the default voice, when the engine has it
    sample_rate: int = SAMPLE_RATE
    _voices: Mapping[str, object]  # voice name -> style table

    def __init__(self, g2p: EnglishG2P, trim: Trim | None = None) -> None:
        self._g2p = g2p
        self._trim = trim or Trim()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{self.name}-engine")
        self._lock = threading.Lock()  # guards _running and what _interrupt touches
        self._running: object | None = None  # the token of the job on the engine thread

    @property
    def voices(self) -> tuple[str, ...]:
        """The voice names this engine can speak with."""
        return tuple(sorted(self._voices))

    @property
    def default_voice(self) -> str:
        """The voice used when a request names none."""
        return self.preferred_voice if self.preferred_voice in self._voices else self.voices[0]

    @abstractmethod
    def _infer(self, phonemes: str, voice: str, speed: float) -> np.ndarray:
        """Blocking: synthesize one model-sized phoneme string to float32 audio."""

    def resolve_voice(self, voice: str | None) -> str:
        """The voice to use for ``voice`` (the one voice check); ``UnknownVoice`` if unknown."""
        if voice is None:
            return self.default_voice
        if voice not in self.voices:
            raise UnknownVoice(f"unknown voice {voice!r}; available: {', '.join(self.voices)}")
        return voice

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        """Run ``fn`` on the engine thread; if the caller is cancelled meanwhile, interrupt it.

        A job still queued is simply dropped. The one running is interrupted if the engine can
        (``_interrupt``), so that a cancelled segment does not hold up the next one.
        """
        token = object()

        def job() -> T:
            with self._lock:
                self._running = token
            try:
                return fn(*args)
            finally:
                with self._lock:
                    self._running = None

        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, job)
        except asyncio.CancelledError:
            with self._lock:
                if self._running is token:
                    self._interrupt()
            raise

    def _interrupt(self) -> None:  # noqa: B027 - optional hook, not abstract
        """Abort the inference running now (called with ``_lock`` held); default: let it end."""

    async def phonemize(self, text: str) -> str:
        """Phonemes for ``text`` (on the engine thread: spaCy is not free)."""
        return await self._run(self._g2p, text)

    def synthesize(
        self, text: str, voice: str | None = None, speed: float = 1.0
    ) -> AsyncIterator[np.ndarray]:
        """Audio chunks for ``text`` in ``resolve_voice(voice)`` (``UnknownVoice`` at once)."""
        return self.synthesize_resolved(text, self.resolve_voice(voice), speed)

    async def synthesize_resolved(
        self, text: str, voice: str, speed: float = 1.0
    ) -> AsyncIterator[np.ndarray]:
        """Yield trimmed float32 audio chunks for ``text``, one per model-sized piece.

        ``voice`` is a name ``resolve_voice`` returned: it is not checked again.
        """
        phonemes = await self.phonemize(text)
        for piece in split_phonemes(phonemes, MAX_PHONEMES):
            audio = await self._run(self._infer, piece, voice, speed)
            trimmed = self._trim(np.asarray(audio, dtype=np.float32).ravel())
            if trimmed.size:
                yield trimmed
