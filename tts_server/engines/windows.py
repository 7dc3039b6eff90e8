"""Where a sentence's decoder windows fall: pure arithmetic over Kokoro's frames.

Kokoro's decoder turns aligned frames (one frame = ``SAMPLES_PER_FRAME`` samples, 25 ms at
24 kHz) into audio. Decoding a sentence in windows lets its first audio go out before the rest
is decoded. Each ``Window`` keeps the frames ``[start, stop)`` and is decoded with up to
``context`` frames either side (``left``, ``right``: fewer at the sentence's edges), so that the
kept part sees nearly what it would see in the whole sentence; the context's audio is dropped.
The first window is short (first audio fast), later ones longer (less overhead per frame).
"""

from __future__ import annotations

from dataclasses import dataclass

SAMPLES_PER_FRAME = 600  # the decoder's 2x upsampling x the generator's 10 x 6 x iSTFT hop 5


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

    def windows(self, frames: int, lead: int = 0, last_from: int | None = None) -> list[Window]:
        """The windows of a sentence of ``frames`` frames, in order, covering each frame once.

        ``lead`` frames (the leading boundary pad's: silence) come before the first window's
        ``first``, so that the first window holds speech: a window of silence alone is lifted
        by the decoder's instance norms (see ``kokoro_stream``). A window takes before it the
        context it cannot have after it (the sentence's end fades out; its statistics need the
        frames before it). The last window starts at ``last_from`` or before (the last word's
        first frame: its mark then goes with the last chunk, timed against the trimmed end).
        """
        if frames < 0 or lead < 0:
            raise ValueError(f"a sentence cannot have {frames} frames, {lead} of them leading")
        stops: list[int] = []
        stop, step = min(lead + self.first, frames), self.first
        while stop < frames:
            stops.append(stop)
            step = min(self.size, round(step * self.growth))
            stop = min(stop + step, frames)
        if frames:
            stops.append(frames)
        if len(stops) > 1 and stops[-1] - stops[-2] < self.min_last:
            del stops[-2]
        while last_from is not None and len(stops) > 1 and stops[-2] > last_from:
            del stops[-2]
        out = []
        start = 0
        for stop in stops:
            right = min(self.context, frames - stop)
            left = min(2 * self.context - right, start)
            out.append(Window(start, stop, left, right))
            start = stop
        return out
