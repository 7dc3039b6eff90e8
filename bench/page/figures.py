"""The page benchmark's figures from what its init script recorded (``instrument.js``): pure
functions over plain lists, so that each rule is tested without a browser.

A reply's audio is the buffer sources the page started for it, in the order they play. An
underrun is a gap over ``GAP_MS`` between one source's end and the next one's start: what a
listener hears as a hole. Times are the page's clock (``performance.now()``, ms).
"""

from __future__ import annotations

import base64
import itertools
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

GAP_MS = 5.0  # a gap longer than this between consecutive chunks of one reply is an underrun
MIC_RATE = 16_000  # the page's microphone frames (agent.browser_leg.MIC_SAMPLE_RATE)
SPEECH_DB = -40.0  # a 10 ms window this far below the loudest is silence
WINDOW_MS = 10


@dataclass(frozen=True, slots=True)
class Chunk:
    """One buffer source: it plays from ``start`` (ms, page clock) for ``duration_ms``, from
    ``clock_ms`` on its audio context's clock (exact: what gaps are measured on)."""

    start: float
    duration_ms: float
    clock_ms: float
    scheduled_ms: float | None = None  # the audio clock when it was scheduled (arrived)

    @property
    def clock_end(self) -> float:
        return self.clock_ms + self.duration_ms


def chunks(
    sources: Iterable[dict[str, Any]], since: float, until: float = float("inf")
) -> list[Chunk]:
    """The chunks scheduled between ``since`` and ``until`` (page clock), in playing order."""
    found = [
        Chunk(s["plays"], s["duration"] * 1000, s["when"] * 1000, _ms(s.get("now")))
        for s in sources
        if since <= s["at"] < until and s["duration"] > 0
    ]
    return sorted(found, key=lambda c: c.clock_ms)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def least_buffered(reply: Sequence[Chunk]) -> float | None:
    """How close the reply came to running dry: the least audio (ms) still to play when a chunk
    arrived, over every chunk after the first (the first waits the player's lead); negative:
    the audio before it had ended that long before. None: under two chunks or no arrival
    times."""
    ahead = [
        before.clock_end - after.scheduled_ms
        for before, after in itertools.pairwise(reply)
        if after.scheduled_ms is not None
    ]
    return round(min(ahead), 1) if ahead else None


def gaps(reply: Sequence[Chunk]) -> list[float]:
    """The silence (ms) between each chunk of a reply and the next, on the audio clock (one
    context's: a reply plays on one); negative: they overlap."""
    return [after.clock_ms - before.clock_end for before, after in itertools.pairwise(reply)]


def underruns(reply: Sequence[Chunk], over_ms: float = GAP_MS) -> list[float]:
    """The gaps longer than ``over_ms``."""
    return [gap for gap in gaps(reply) if gap > over_ms]


def where_dry(reply: Sequence[Chunk], over_ms: float = GAP_MS) -> list[dict[str, float]]:
    """Each underrun: after how much of the reply's audio (ms) and chunk, and how long."""
    found, played = [], 0.0
    for n, (before, after) in enumerate(itertools.pairwise(reply)):
        played += before.duration_ms
        if (gap := after.clock_ms - before.clock_end) > over_ms:
            found.append(
                {"after_chunk": n, "after_audio_ms": round(played), "gap_ms": round(gap, 1)}
            )
    return found


def first_after(events: Iterable[dict[str, Any]], kind: str, since: float) -> float | None:
    """When the first ``kind`` message after ``since`` was received or sent (None: none)."""
    return next((e["t"] for e in events if e["type"] == kind and e["t"] >= since), None)


def captured(mic: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """The microphone's samples as the page sent them, and each sample's capture time: a frame is
    sent as soon as its last sample is in, so sample ``j`` of a frame of ``n`` sent at ``t`` was
    captured at ``t - (n - 1 - j) / MIC_RATE``."""
    pcms = [np.frombuffer(base64.b64decode(frame["pcm"]), dtype="<i2") for frame in mic]
    times = [
        frame["t"] - (len(pcm) - 1 - np.arange(len(pcm))) * 1000 / MIC_RATE
        for frame, pcm in zip(mic, pcms, strict=True)
    ]
    if not pcms:
        return np.zeros(0, dtype="<i2"), np.zeros(0)
    return np.concatenate(pcms), np.concatenate(times)


def speech_bounds(pcm: np.ndarray, rate: int = MIC_RATE) -> tuple[int, int] | None:
    """The first and last sample of speech in ``pcm``: the 10 ms windows whose RMS is within
    ``SPEECH_DB`` of the loudest window's (None: all silence)."""
    size = rate * WINDOW_MS // 1000
    count = len(pcm) // size
    if count == 0:
        return None
    windows = pcm[: count * size].astype(np.float64).reshape(count, size)
    rms = np.sqrt((windows**2).mean(axis=1))
    if rms.max() <= 0:
        return None
    loud = np.flatnonzero(rms >= rms.max() * 10 ** (SPEECH_DB / 20))
    return int(loud[0] * size), int((loud[-1] + 1) * size - 1)


def end_of_speech(mic: Sequence[dict[str, Any]]) -> float | None:
    """When the captured speech ended (page clock), from the frames the page sent."""
    pcm, times = captured(mic)
    bounds = speech_bounds(pcm)
    return None if bounds is None else float(times[bounds[1]])


def median_of(values: Iterable[float | None]) -> dict[str, Any]:
    """Median, min, max and count of the values that are not None."""
    kept = [v for v in values if v is not None]
    if not kept:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {
        "median": round(statistics.median(kept), 1),
        "min": round(min(kept), 1),
        "max": round(max(kept), 1),
        "n": len(kept),
    }


def stages(marks: dict[str, float | None]) -> dict[str, float | None]:
    """Consecutive differences of the ordered ``marks``: each stage's share of the total."""
    names = list(marks)
    return {
        f"{earlier}→{later}": (
            None
            if marks[earlier] is None or marks[later] is None
            else round(marks[later] - marks[earlier], 1)  # type: ignore[operator]
        )
        for earlier, later in itertools.pairwise(names)
    }
