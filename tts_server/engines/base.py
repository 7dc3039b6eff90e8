"""The engine interface: text + voice + speed in, 24 kHz float32 audio chunks out.

Two public steps, ``prepare`` (the one check: a ``Prepared``, or a ``Refusal``) and
``synthesize``, and one hook for an engine to provide, ``_infer_batch``. An engine that can
decode a sentence in windows (``streams``) provides two more, ``_start_batch`` (the text side)
and ``_window_batch`` (windows of started sentences); given a ``WindowPlan`` it then sends a
sentence's audio window by window, each window its own scheduler job. Which windows, and when
each is decoded, is the plan's to say (``WindowPlan.decoded``, in ``windows``), at the pace of
the engine's ``decode_rate`` and of the listener's ``PlaybackClock`` a caller gives.

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
from contextlib import AbstractContextManager, aclosing, nullcontext
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
from tts_server.engines.prepared import NORMALIZED, Prepared, UnknownVoice
from tts_server.engines.scheduler import BatchScheduler, Piece, SchedulerStats
from tts_server.engines.timings import Chunk, Timed, WordSpan, WordTime, word_times, written_words
from tts_server.engines.voices import BlendCache, BlendMismatch
from tts_server.engines.windows import (
    SAMPLES_PER_FRAME,
    DecodeRate,
    PlaybackClock,
    Window,
    WindowPlan,
)
from tts_server.normalize import Options
from tts_server.settings import DEFAULT_BATCH_WAIT_MS

G2P = Callable[[str], str]  # text -> phonemes (EnglishG2P, or a PhonemeTable in front of it)


class EngineError(RuntimeError):
    """The engine could not be loaded or could not synthesize."""


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

    def cut(
        self,
        audio: np.ndarray,
        window: tuple[int, int],
        fade_in: bool = True,
        fade_out: bool = True,
    ) -> np.ndarray:
        """``audio[first:stop]`` (a ``window``), faded in and out (each where asked)."""
        out = audio[window[0] : window[1]].astype(np.float32, copy=True)
        fade = min(int(self.fade_ms * SAMPLE_RATE / 1000), out.size // 2)
        if fade > 0:
            ramp = np.linspace(0.0, 1.0, fade, endpoint=False, dtype=np.float32)
            if fade_in:
                out[:fade] *= ramp
            if fade_out:
                out[-fade:] *= ramp[::-1]
        return out


@dataclass(frozen=True, slots=True)
class Started:
    """A piece whose text side has run (``_start_batch``): what its windows decode from."""

    state: Any  # the engine's own, handed back in each of the piece's ``WindowJob``s
    frames: int  # the piece's length in frames (0: nothing to speak)
    lead: int  # its leading pad's frames (``WindowPlan.windows``)
    bounds: np.ndarray | None  # its phonemes' bounds in samples of its whole audio (``Timed``)
    plan: WindowPlan | None = None  # its own windows (None: the engine's ``window_plan``)
    span: tuple[int, int] | None = None  # the frames that may sound (``speech_span``; None: all)


@dataclass(frozen=True, slots=True, eq=False)
class WindowJob:
    """One window of a started piece, a scheduler job of its own."""

    state: Any
    window: Window


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
    streams: bool = False  # whether the engine provides _start_batch and _window_batch
    _voices: Mapping[str, object]  # voice name -> style table

    def __init__(
        self,
        g2p: G2P,
        trim: Trim | None = None,
        *,
        lanes: int = 1,
        max_batch: int = 1,
        batch_wait_ms: float = DEFAULT_BATCH_WAIT_MS,
        windows: WindowPlan | None = None,
    ) -> None:
        if windows is not None and not self.streams:
            raise EngineError(f"the {self.name} engine cannot decode in windows")
        self.window_plan = windows
        self.decode_rate = DecodeRate()  # every connection's windows, timed: the pace
        self._g2p = g2p
        self._trim = trim or Trim()
        self._g2p_executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"{self.name}-g2p"
        )
        self._scheduler = BatchScheduler(
            self._run_batch,
            size=_job_size,
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

    def _start_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Started]:
        """Blocking, on lane ``lane``'s thread: each piece's text side (``streams`` engines)."""
        raise NotImplementedError

    def _window_batch(self, lane: int, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        """Blocking: each window's audio, joined to its piece's previous window, in one model
        call (``streams`` engines; a piece's windows come in order, one job at a time)."""
        raise NotImplementedError

    def _run_batch(self, lane: int, jobs: Sequence[Any]) -> list[Any]:
        """The scheduler's one hook: a batch is all windows, or all pieces."""
        if isinstance(jobs[0], WindowJob):
            return self._window_batch(lane, jobs)
        if self.window_plan is not None:
            return self._start_batch(lane, jobs)
        return self._infer_batch(lane, jobs)

    def prepare(
        self,
        text: str,
        voice: VoiceMix | None = None,
        speed: float = 1.0,
        normalization: Options | None = NORMALIZED,
    ) -> Prepared:
        """The one check of a synthesis: ``UnknownVoice`` or ``UnsupportedText`` (``Refusal``s).

        ``voice`` is a parsed voice or blend (None: the default voice); a blend's table is mixed
        now, so a bad blend fails here, never mid-stream. Then text with letters the English G2P
        cannot speak is refused, before anything is synthesized.
        """
        mix = self._voice(voice)
        check_speakable(text)
        return Prepared(text, mix, speed, normalization)

    def _voice(self, voice: VoiceMix | None) -> VoiceMix:
        """``voice`` if the engine has it (a blend mixed and cached), else ``UnknownVoice``."""
        if voice is None:
            return ((self.default_voice, 1.0),)
        missing = ", ".join(repr(name) for name, _ in voice if name not in self._voices)
        if missing:
            raise UnknownVoice(f"unknown voice {missing}; available: {', '.join(self.voices)}")
        if len(voice) > 1:
            try:
                self._blends.table(voice, self._voices)
            except BlendMismatch as exc:
                raise UnknownVoice(f"voice {voice_name(voice)!r}: {exc}") from exc
        return voice

    def style_table(self, voice: VoiceMix) -> Any:
        """The style table of ``voice``, a mix ``prepare`` kept (a blend's is cached)."""
        if len(voice) == 1:
            return self._voices[voice[0][0]]
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
        self, prepared: Prepared, clock: PlaybackClock | None = None
    ) -> AsyncIterator[Chunk]:
        """Trimmed float32 audio of a prepared text, one chunk per model-sized piece (or
        window), with its words. Nothing is checked again. ``clock``: the listener, told of each
        chunk sent, that paces the windows (``WindowPlan.decoded``; None: unpaced), and the
        stream the decode rate counts each windowed piece under (``DecodeRate.streaming``).

        The text is read as ``prepared.spoken`` (numbers, money, abbreviations... in words,
        unless normalization is off). A chunk's words are those whose phonemes start in it, in
        samples from the chunk's first (trimmed) sample, each naming the written text it says;
        without the model's durations there are none.
        """
        spoken = prepared.spoken
        cursor = 0
        for part in split_text(spoken.text):  # each phonemized only when the one before is spoken
            offset = spoken.text.find(part, cursor)
            cursor = offset + len(part)
            phonemized = await self.phonemize(part)
            phonemes = phonemized.phonemes
            named = written_words(phonemized.words, part, offset, spoken)
            for span in split_spans(phonemes, MAX_PHONEMES):
                piece = Piece(phonemes[span[0] : span[1]], prepared.voice, prepared.speed)
                stream: AbstractContextManager[None] = nullcontext()
                if self.window_plan is None:
                    chunks = self._whole(piece, named, span)
                else:
                    chunks = self._windowed(piece, named, span, self.window_plan, clock)
                    stream = self.decode_rate.streaming(clock)  # text side to last window
                with stream:  # one of the streams sharing the engine's rate, closed with this one
                    async with aclosing(chunks):
                        async for chunk in chunks:
                            yield chunk

    async def _whole(
        self, piece: Piece, named: Sequence[WordSpan], span: tuple[int, int]
    ) -> AsyncIterator[Chunk]:
        """A piece synthesized whole: one chunk, trimmed at both ends."""
        timed: Timed = await self._scheduler.synthesize(piece)
        audio = np.asarray(timed.audio, dtype=np.float32).ravel()
        window = self._trim.window(audio)
        trimmed = self._trim.cut(audio, window)
        if trimmed.size:
            words = () if timed.bounds is None else word_times(named, span, timed.bounds, window)
            yield Chunk(trimmed, words)

    async def _windowed(
        self,
        piece: Piece,
        named: Sequence[WordSpan],
        span: tuple[int, int],
        plan: WindowPlan,
        clock: PlaybackClock | None = None,
    ) -> AsyncIterator[Chunk]:
        """A piece window by window: one chunk per window, each sent once decoded.

        Silence is trimmed before the first loud window and after the last window's last loud
        sample; each word goes with the chunk its first sample is in (its mark before it). The
        last word starts in the last window, so its end is clipped to the kept audio there, as
        the whole path clips it to its trim.
        """
        started: Started = await self._scheduler.synthesize(piece)
        end = started.frames * SAMPLES_PER_FRAME
        timed = () if started.bounds is None else word_times(named, span, started.bounds, (0, end))
        last_from = timed[-1].start // SAMPLES_PER_FRAME if timed else None  # the last word's
        steps = (started.plan or plan).decoded(
            lambda window: self._scheduler.synthesize(WindowJob(started.state, window)),
            started.frames,
            started.lead,
            last_from,
            started.span,
            clock=clock,
            rate=self.decode_rate,
        )
        words: list[WordTime] = []
        first: int | None = None  # the piece's first kept sample, once found
        async with aclosing(steps):
            async for window, decoded, last in steps:
                audio = np.asarray(decoded, dtype=np.float32).ravel()
                begin = window.start * SAMPLES_PER_FRAME
                keep = (0, audio.size)
                if first is None:
                    keep = self._trim.window(audio)
                    if keep == (0, 0):
                        continue  # silence so far
                    first = begin + keep[0]
                    if started.bounds is not None:
                        words = list(word_times(named, span, started.bounds, (first, end)))
                    keep = (keep[0], audio.size)
                if last:
                    keep = (keep[0], max(keep[0], self._trim.window(audio)[1]))
                out = self._trim.cut(audio, keep, fade_in=begin + keep[0] == first, fade_out=last)
                if not out.size:
                    continue
                at = begin + keep[0] - first  # this chunk's first sample in the piece's kept audio
                mine = tuple(
                    WordTime(
                        w.text,
                        w.start - at,
                        min(w.end - at, out.size) if last else w.end - at,
                        w.spoken,
                    )
                    for w in words
                    if at <= w.start < at + out.size
                )
                yield Chunk(out, mine)


def _job_size(job: Any) -> int:
    """A scheduler job's length: a piece's tokens (with the boundary pads), a window's frames."""
    if isinstance(job, WindowJob):
        return job.window.decoded_frames
    return len(job.phonemes) + 2
