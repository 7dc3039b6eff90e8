"""A sentence's decoder windows, their whole life: the settings that shape them, where they
fall (arithmetic over Kokoro's frames), how later ones grow, and when each is decoded.

Kokoro's decoder turns aligned frames (``SAMPLES_PER_FRAME`` samples, 25 ms) into audio; in
windows, a sentence's first audio goes out before the rest is decoded. Each ``Window`` keeps
frames ``[start, stop)``, decoded with up to ``context`` frames either side (their audio
dropped), so that it sees nearly what it would in the whole sentence. The silence around the
sentence's speech need not be decoded: ``speech_span`` finds it in the predicted energy.

This module is the one owner of a window's life; nothing else sizes a window or reads a window
setting. ``window_plan`` reads the settings (``--windows``, ``--window-first``, ``-size``,
``-context``, ``-growth``, ``-listener-lead``; each engine's ``WINDOW_DEFAULTS`` where they say
nothing) into a ``WindowPlan``. The engine base decodes a started sentence through
``WindowPlan.decoded``, the schedule: it cuts the next window only once the one before is
taken, as large as the audio buffered at the listener allows (``PlaybackClock``, one per
connection) at the engine's measured pace (``DecodeRate``, one per engine), and decodes it at
once. The scheduler sizes a window's job by ``Window.decoded_frames``; the ONNX engine asks
``worth_windows`` whether a sentence is decoded in windows at all (``WindowPlan.whole`` plans
one that is not), and the torch stream crossfades each window's ``seam`` into the next.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from tts_server.engines.pace import (
    CALL_FRAMES,
    LISTENER_LEAD_S,
    MIN_SECONDS_PER_FRAME,
    PACE_MARGIN,
    DecodeRate,
    PlaybackClock,
)
from tts_server.engines.window_trace import traced, tracing
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
FRAME_SECONDS = SAMPLES_PER_FRAME / 24_000  # 25 ms of audio a frame
# The pace (docs/tts_server.md, "Decoding in windows"): a window's predicted decode x the rate's
# margin (``DecodeRate.margin``, at least ``PACE_MARGIN``) + 50 ms
PACE_MARGIN_S = 0.05  # the send and the event loop


@dataclass(frozen=True, slots=True)
class WindowDefaults:
    """An engine's windows where no setting says otherwise: whether it decodes in windows;
    frames of the first (after the leading silence), of the largest, of context each side; each
    later window ``growth`` times the one before (unpaced)."""

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
    ``margin`` frames either side; None if none does. On 5 voices x 3 speeds x 61 sentences
    every loud sample lay within a frame of those (docs/tts_server.md, "Silence not decoded").
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
    (at most ``size``; 1: ``first`` at a time), ``context`` each side; paced by a listener's
    ``PlaybackClock`` (``decoded``), as large as the audio buffered allows. A last window under
    ``min_last`` frames is merged into the one before it (a tiny window costs a decoder call
    for little audio). ``listener_lead_s``: ``listener_clock``'s lead.
    """

    first: int
    size: int
    context: int
    min_last: int = 8
    growth: float = 1.0
    listener_lead_s: float = LISTENER_LEAD_S
    pace_to_listener: bool = False  # connections pace their windows (``listener_clock``)

    def __post_init__(self) -> None:
        if self.first < 1 or self.size < 1:
            raise ValueError(
                f"windows need at least one frame (first={self.first}, size={self.size})"
            )
        if not self.growth >= 1:
            raise ValueError(f"windows cannot shrink (growth={self.growth})")
        if self.context < 0 or self.min_last < 0 or self.listener_lead_s < 0:
            raise ValueError(
                f"context, min_last and the lead cannot be negative ({self.context}, "
                f"{self.min_last}, {self.listener_lead_s})"
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
        *,
        clock: PlaybackClock | None = None,
        rate: DecodeRate | None = None,
    ) -> AsyncIterator[tuple[Window, T, bool]]:
        """A sentence's windows (``windows``' arguments and rules) in order, each with what
        ``decode`` made of it and whether it is the last; ``rate`` learns each one's time.

        Each window is cut once the one before is taken (with a ``clock`` and a ``rate``, as
        large as ``paced`` says for the audio buffered then; else as ``windows`` cuts them) and
        decoded at once, while that audio plays; a cancel between two windows stops there."""
        begin, end = self._extent(frames, lead, last_from, span)
        start, base, step = begin, max(lead, begin), self.first
        while start < end:
            opening = False  # a reply's first window, nothing buffered at the listener
            cut: dict[str, Any] = {}  # how the pace cut it (``window_trace``)
            if clock is None or rate is None:
                stop = self._stop(base, step, end, last_from)
            else:
                ahead = clock.ahead()
                opening = ahead <= 0
                estimate = rate.opening_seconds_per_frame if opening else rate.seconds_per_frame
                # the frames kept are audio to play: a sentence's first window decodes its
                # leading pad too (``base - start`` frames), which costs and plays nothing
                silent, margin = base - start, rate.margin
                kept = self.paced(ahead, estimate, margin, silent)
                step = max(1, min(self.size - silent, max(self.first, kept)))
                stop = self._paced_stop(base, step, end, last_from)
                cut = {"sentence_start": start == begin, "ahead_s": ahead}
                cut |= {"seconds_per_frame": estimate, "margin": margin}
                cut |= {"silent": silent, "paced": kept, "streams": rate.streams}
            window = self._window(frames, begin, start, stop)
            job = decode(window)
            if rate is not None:
                job = rate.measured(job, window.decoded_frames, opening=opening)
            started = time.perf_counter()
            result = await job
            if cut and tracing():
                took = time.perf_counter() - started
                traced(
                    "window",
                    clock,
                    opening=opening,
                    start=start,
                    stop=stop,
                    end=end,
                    **cut,
                    decoded=window.decoded_frames,
                    took_s=took,
                )
            yield window, result, stop == end
            start = base = stop
            step = min(self.size, round(step * self.growth))

    def paced(
        self, ahead: float, seconds_per_frame: float, margin: float = PACE_MARGIN, silent: int = 0
    ) -> int:
        """Frames of audio to keep in the next window with ``ahead`` seconds buffered at the
        listener and a decode rate of ``seconds_per_frame``, within ``[first, size]``; nothing
        buffered: ``first`` (the listener is waiting: audio soonest). Else the most whose
        predicted decode times ``margin`` plus ``PACE_MARGIN_S`` ends before that audio does;
        if that window would not add to the buffer (a slow rate, little buffered), the smallest
        that adds to it with the margin, as far as the buffer holds its decode without the
        margin, and never one that falls behind its own decode. A window's decode is its frames,
        ``_fixed``'s and its ``silent`` ones (a sentence's leading pad: decoded, never played);
        the silent frames are paid once, so the floor is what keeps up without them."""
        rate, fixed = max(seconds_per_frame, MIN_SECONDS_PER_FRAME), self._fixed
        if ahead <= 0:
            return self._opening(rate, margin)
        fits = math.floor((ahead - PACE_MARGIN_S) / margin / rate) - fixed - silent
        holds = math.floor(ahead / rate) - fixed - silent  # what the buffer holds, no margin
        grows = min(_keeping_up(fixed + silent, margin * rate), holds)
        return max(self.first, min(self.size, max(fits, _keeping_up(fixed, rate), grows)))

    @property
    def _fixed(self) -> int:
        """What a window costs beyond the frames it keeps, in frames of decode: its context
        either side and the decoder call's own cost (``CALL_FRAMES``)."""
        return 2 * self.context + CALL_FRAMES

    def _opening(self, rate: float, margin: float) -> int:
        """The first window with nothing buffered: ``first`` frames, or more where the rate is
        so slow that the next window, as small as keeps up with its own decode, would not be
        decoded (with the margin) before this one and the listener's lead have played."""
        fixed = self._fixed
        following = max(self.first, _keeping_up(fixed, rate))
        needed = margin * rate * (following + fixed) + PACE_MARGIN_S - self.listener_lead_s
        return max(self.first, min(self.size, math.ceil(needed / FRAME_SECONDS)))

    def windows(
        self,
        frames: int,
        lead: int = 0,
        last_from: int | None = None,
        span: tuple[int, int] | None = None,
    ) -> list[Window]:
        """The windows of a sentence of ``frames`` frames, in order, covering each frame of
        ``span`` (``[start, stop)``; None: all) once; context after it may come from outside it,
        none before it: its first frames are the speech's margin of silence, context enough.

        ``lead`` frames (the leading pad's silence) come before the first window's ``first``:
        a window of silence alone is lifted by the decoder's instance norms. A window takes
        before it the context it cannot have after it. The last window starts at ``last_from``
        or before (the last word's first frame: its mark then goes with the last chunk) and
        ends after it, whatever ``span`` says.
        """
        begin, end = self._extent(frames, lead, last_from, span)
        out: list[Window] = []
        start, base, step = begin, max(lead, begin), self.first
        while start < end:
            stop = self._stop(base, step, end, last_from)
            out.append(self._window(frames, begin, start, stop))
            start = base = stop
            step = min(self.size, round(step * self.growth))
        return out

    def _extent(
        self, frames: int, lead: int, last_from: int | None, span: tuple[int, int] | None
    ) -> tuple[int, int]:
        """The frames ``[begin, end)`` the windows keep: the span, to past ``last_from``."""
        if frames < 0 or lead < 0:
            raise ValueError(f"a sentence cannot have {frames} frames, {lead} of them leading")
        begin, end = span or (0, frames)
        if not 0 <= begin <= end <= frames:
            raise ValueError(f"the span {span} is not within the sentence's {frames} frames")
        if last_from is not None:
            end = max(end, min(frames, last_from + 1))
        return begin, end

    def _stop(self, base: int, step: int, end: int, last_from: int | None) -> int:
        """Where the window ``step`` frames after ``base`` stops: at ``end`` instead if the
        rest would be a last window under ``min_last`` frames, or start past ``last_from``."""
        stop = min(base + step, end)
        if end - stop < self.min_last or (last_from is not None and stop > last_from):
            return end
        return stop

    def _paced_stop(self, base: int, step: int, end: int, last_from: int | None) -> int:
        """``_stop``, but a window merged past its pace stops where the rules let the last one
        be smallest: at ``last_from``, or ``min_last`` frames before the end."""
        stop = self._stop(base, step, end, last_from)
        cut = min(base + step, end - self.min_last, end if last_from is None else last_from)
        merged = stop == end > base + step
        return cut if merged and cut >= base + self.first else stop

    def _window(self, frames: int, begin: int, start: int, stop: int) -> Window:
        """Frames ``[start, stop)`` with their context: what the end denies, taken before; none
        before ``begin``, the span's first frame, whose margin of silence is context enough."""
        right = min(self.context, frames - stop)
        return Window(start, stop, min(2 * self.context - right, start - begin), right)


def _keeping_up(fixed: int, rate: float) -> int:
    """The fewest frames a window costing ``fixed`` frames more, decoded at ``rate`` seconds a
    frame, keeps to play as long as its decode takes (0: none does)."""
    if rate >= FRAME_SECONDS:
        return 0
    return math.ceil(fixed * rate / (FRAME_SECONDS - rate) - 1e-9)  # a float's last digit


def listener_clock(plan: WindowPlan | None) -> PlaybackClock | None:
    """A connection's ``PlaybackClock``, with the lead ``plan`` models; None where the plan is
    not ``paced`` (or there are no windows): each sentence is cut as ``windows`` cuts it."""
    if plan is None or not plan.pace_to_listener:
        return None
    return PlaybackClock(plan.listener_lead_s)


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
        listener_lead_s=_given(settings.window_listener_lead, LISTENER_LEAD_S),
        pace_to_listener=settings.window_pace,
    )


def _given(value: T | None, default: T) -> T:
    """``value``, unless it was not given."""
    return default if value is None else value
