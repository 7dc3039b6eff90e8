"""Where a sentence's decoder windows fall: pure arithmetic over Kokoro's frames.

Kokoro's decoder turns aligned frames (one frame = ``SAMPLES_PER_FRAME`` samples, 25 ms at
24 kHz) into audio. Decoding a sentence in windows lets its first audio go out before the rest
is decoded. Each ``Window`` keeps the frames ``[start, stop)`` and is decoded with up to
``context`` frames either side (``left``, ``right``: fewer at the sentence's edges), so that the
kept part sees nearly what it would see in the whole sentence; the context's audio is dropped.
The first window is short (first audio fast), later ones longer (less overhead per frame).
The frames before and after the sentence's speech (its leading pad, the long last phoneme and
the closing mark, silence the trim drops) need not be decoded at all: ``speech_span`` finds
them in the text side's predicted energy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLES_PER_FRAME = 600  # the decoder's 2x upsampling x the generator's 10 x 6 x iSTFT hop 5
ENERGY_STEPS_PER_FRAME = 2  # Kokoro's energy (and F0) curves run at twice the frame rate
SPEECH_ENERGY = -6.0  # predicted log energy: silence sits near -9, speech well above 0
SPEECH_MARGIN = 4  # frames kept either side of the predicted speech (100 ms)


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
