"""A sentence's decoder windows, their whole life: the settings that shape them, where they
fall (arithmetic over Kokoro's frames), how later ones grow, and when each is decoded.

Kokoro's decoder turns aligned frames (one frame = ``SAMPLES_PER_FRAME`` samples, 25 ms at
24 kHz) into audio. Decoding a sentence in windows lets its first audio go out before the rest
is decoded. Each ``Window`` keeps the frames ``[start, stop)`` and is decoded with up to
``context`` frames either side (``left``, ``right``: fewer at the sentence's edges), so that the
kept part sees nearly what it would see in the whole sentence; the context's audio is dropped.
The first window is short (first audio fast), later ones longer (less overhead per frame).
The frames before and after the sentence's speech (its leading pad, the long last phoneme and
the closing mark, silence the trim drops) need not be decoded at all: ``speech_span`` finds
them in the text side's predicted energy.

This module is the one owner of a window's life; nothing else sizes a window or reads a window
setting. ``window_plan`` reads the settings (``--windows``, ``--window-first``, ``-size``,
``-context``, ``-growth``; each engine's ``WINDOW_DEFAULTS`` where they say nothing) into a
``WindowPlan``, the schedule: the first window's size, how later ones grow, their context, and
when each is decoded. The engine base decodes a started sentence through
``WindowPlan.decoded``, which plans its windows and asks for the next one only once the one
before it is taken; the scheduler sizes a window's job by ``Window.decoded_frames``. The ONNX
engine asks ``worth_windows`` whether a sentence is decoded in windows at all
(``WindowPlan.whole`` plans one that is not; ``Window.whole`` is its one window), and the torch
stream keeps each window's ``seam`` (the audio decoded past its end) to crossfade into the next.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from tts_server.settings import EngineName, Settings

T = TypeVar("T")

SAMPLES_PER_FRAME = 600  # the decoder's 2x upsampling x the generator's 10 x 6 x iSTFT hop 5
ENERGY_STEPS_PER_FRAME = 2  # Kokoro's energy (and F0) curves run at twice the frame rate
SPEECH_ENERGY = -6.0  # predicted log energy: silence sits near -9, speech well above 0
SPEECH_MARGIN = 4  # frames kept either side of the predicted speech (100 ms)
CROSSFADE_SAMPLES = 240  # 10 ms at 24 kHz: each seam fades from one window into the next
# The ONNX engine decodes a sentence with less speech (after its leading pad) whole: its windows
# would gain little, and its statistics stray furthest from any prior (``onnx/priors.py``).
MIN_WINDOWED_FRAMES = 64  # 1.6 s


@dataclass(frozen=True, slots=True)
class WindowDefaults:
    """An engine's windows where no setting says otherwise (docs/tts_server.md, "Decoding in
    windows"): whether it decodes in windows; frames of the first window (after the leading
    silence), of the largest later one, of context each side; each later window ``growth``
    times the one before."""

    on: bool
    first: int
    size: int
    context: int
    growth: float


# Measured in docs/benchmarks/streaming_synthesis.md: the ONNX engine's first audio comes at a
# fifth to a quarter of the whole sentence's time for a few percent more in all; the torch
# engine's windows double its total on a CPU, so they stay off.
WINDOW_DEFAULTS: dict[EngineName, WindowDefaults] = {
    "onnx": WindowDefaults(on=True, first=8, size=240, context=4, growth=3.0),
    "torch": WindowDefaults(on=False, first=8, size=40, context=16, growth=5.0),
}


def worth_windows(frames: int, lead: int) -> bool:
    """Whether the ONNX engine decodes a sentence of ``frames`` frames, ``lead`` of them its
    leading pad's, in windows: its speech is at least ``MIN_WINDOWED_FRAMES`` long."""
    return frames - lead >= MIN_WINDOWED_FRAMES


def speech_span(energy: np.ndarray, margin: int = SPEECH_MARGIN) -> tuple[int, int] | None:
    """The frames ``[start, stop)`` of a sentence that may sound: those whose predicted energy
    (``energy``: the text side's curve, two steps a frame) passes ``SPEECH_ENERGY``, with
    ``margin`` frames either side; None if none does.

    Measured on 5 voices x 3 speeds x 61 sentences (docs/tts_server.md, "Silence not
    decoded"): the first and last loud samples (and the trim's 25 ms pad) always lie within a
    frame of the frames that pass, so a margin of 4 keeps every loud sample with room to spare.
    """
    if margin < 0:
        raise ValueError(f"the margin cannot be negative ({margin})")
    steps = np.asarray(energy).ravel()
    frames = steps.size // ENERGY_STEPS_PER_FRAME
    loudest = steps[: frames * ENERGY_STEPS_PER_FRAME].reshape(frames, ENERGY_STEPS_PER_FRAME)
    loudest = loudest.max(axis=1)
    speech = np.flatnonzero(loudest > SPEECH_ENERGY)
    if not speech.size:
        return None
    return max(0, int(speech[0]) - margin), min(frames, int(speech[-1]) + 1 + margin)


@dataclass(frozen=True, slots=True)
class Window:
    """Keep frames ``[start, stop)``; decode ``[start - left, stop + right)``."""

    start: int
    stop: int
    left: int
    right: int

    @property
    def first(self) -> int:
        """The first frame decoded (context included)."""
        return self.start - self.left

    @property
    def last(self) -> int:
        """One past the last frame decoded (context included)."""
        return self.stop + self.right

    @property
    def kept_samples(self) -> slice:
        """The kept audio within this window's decoded audio."""
        return slice(self.left * SAMPLES_PER_FRAME, (self.left + self.frames) * SAMPLES_PER_FRAME)

    @property
    def frames(self) -> int:
        """Frames kept."""
        return self.stop - self.start

    @property
    def decoded_frames(self) -> int:
        """Frames decoded, context included (the window's cost, its scheduler job's size)."""
        return self.last - self.first

    @property
    def seam(self) -> slice:
        """Up to ``CROSSFADE_SAMPLES`` of this window's decoded audio just past its kept part
        (its right context): the next window fades in over them."""
        stop = self.kept_samples.stop
        return slice(stop, stop + CROSSFADE_SAMPLES)

    @classmethod
    def whole(cls, frames: int) -> Window:
        """All of a sentence's ``frames`` in one window, without context."""
        return cls(0, frames, 0, 0)


@dataclass(frozen=True, slots=True)
class WindowPlan:
    """How to cut a sentence: ``first`` frames, then windows ``growth`` times the one before
    (at most ``size``; 1: ``first`` at a time), ``context`` each side.

    Growing windows keep playback fed: a window is decoded while the audio before it plays, and
    that audio grows as fast as the windows do. A last window shorter than ``min_last`` frames
    is merged into the one before it (a tiny window costs a decoder call for little audio).
    """

    first: int
    size: int
    context: int
    min_last: int = 8
    growth: float = 1.0

    def __post_init__(self) -> None:
        if self.first < 1 or self.size < 1:
            raise ValueError(
                f"windows need at least one frame (first={self.first}, size={self.size})"
            )
        if not self.growth >= 1:
            raise ValueError(f"windows cannot shrink (growth={self.growth})")
        if self.context < 0 or self.min_last < 0:
            raise ValueError(
                f"context and min_last cannot be negative ({self.context}, {self.min_last})"
            )

    @classmethod
    def whole(cls, frames: int) -> WindowPlan:
        """One window for all of a sentence's ``frames``: the sentence decoded whole."""
        return cls(first=frames, size=frames, context=0, min_last=0)

    async def decoded(
        self,
        decode: Callable[[Window], Awaitable[T]],
        frames: int,
        lead: int = 0,
        last_from: int | None = None,
        span: tuple[int, int] | None = None,
    ) -> AsyncIterator[tuple[Window, T, bool]]:
        """A sentence's windows (``windows``' arguments) in order, each with what ``decode``
        made of it and whether it is the last.

        The next window is decoded only once the caller has taken the one before it, so a
        sentence's windows never overtake one another and a cancel between two windows stops the
        sentence there.
        """
        windows = self.windows(frames, lead, last_from, span)
        for k, window in enumerate(windows):
            yield window, await decode(window), k == len(windows) - 1

    def windows(
        self,
        frames: int,
        lead: int = 0,
        last_from: int | None = None,
        span: tuple[int, int] | None = None,
    ) -> list[Window]:
        """The windows of a sentence of ``frames`` frames, in order, covering each frame of
        ``span`` (``[start, stop)``; None: all of them) once. Context may come from outside it.

        ``lead`` frames (the leading boundary pad's: silence) come before the first window's
        ``first``, so that the first window holds speech: a window of silence alone is lifted
        by the decoder's instance norms (see ``kokoro_stream``). A window takes before it the
        context it cannot have after it (the sentence's end fades out; its statistics need the
        frames before it). The last window starts at ``last_from`` or before (the last word's
        first frame: its mark then goes with the last chunk, timed against the trimmed end),
        and ends after it, whatever ``span`` says.
        """
        if frames < 0 or lead < 0:
            raise ValueError(f"a sentence cannot have {frames} frames, {lead} of them leading")
        begin, end = span or (0, frames)
        if not 0 <= begin <= end <= frames:
            raise ValueError(f"the span {span} is not within the sentence's {frames} frames")
        if last_from is not None:
            end = max(end, min(frames, last_from + 1))
        stops: list[int] = []
        stop, step = min(max(lead, begin) + self.first, end), self.first
        while stop < end:
            stops.append(stop)
            step = min(self.size, round(step * self.growth))
            stop = min(stop + step, end)
        if end > begin:
            stops.append(end)
        if len(stops) > 1 and stops[-1] - stops[-2] < self.min_last:
            del stops[-2]
        while last_from is not None and len(stops) > 1 and stops[-2] > last_from:
            del stops[-2]
        out = []
        start = begin
        for stop in stops:
            right = min(self.context, frames - stop)
            left = min(2 * self.context - right, start)
            out.append(Window(start, stop, left, right))
            start = stop
        return out


def window_plan(settings: Settings) -> WindowPlan | None:
    """The windows ``settings`` ask for, the engine's defaults where they say nothing; None:
    each sentence decoded whole."""
    default = WINDOW_DEFAULTS[settings.engine]
    if not (default.on if settings.windows is None else settings.windows):
        return None
    return WindowPlan(
        _given(settings.window_first, default.first),
        _given(settings.window_size, default.size),
        _given(settings.window_context, default.context),
        growth=_given(settings.window_growth, default.growth),
    )


def _given(value: T | None, default: T) -> T:
    """``value``, unless it was not given."""
    return default if value is None else value
