"""What a sentence's windows are paced by (``windows.WindowPlan.decoded``): the engine's
measured decode rate (``DecodeRate``, one per engine) and the listener's buffer as the server
models it (``PlaybackClock``, one per connection). The plan, which reads them, is
``windows``'s alone (docs/tts_server.md, "Decoding in windows", "The pace")."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from tts_protocol import PLAYER_LEAD_S

T = TypeVar("T")

LISTENER_LEAD_S = PLAYER_LEAD_S  # a player's wait before a reply's first chunk (the page's)
DEFAULT_SECONDS_PER_FRAME = 0.0125  # before any measurement: a real-time factor of 0.5
MIN_SECONDS_PER_FRAME = 1e-6
RATE_HALF_LIFE_FRAMES = 64  # decoded frames after which an old rate counts half


class DecodeRate:
    """An engine's measured decode rate: seconds per decoded frame (context included), shared
    by every connection, so that it says what a window costs under the load of the moment.

    Each window job is timed from submission to result (queueing behind other connections'
    counts), pooled into an average weighing each job by its frames (an old rate counts half
    after ``RATE_HALF_LIFE_FRAMES`` new ones). The first measurement (the engine's calibration,
    if any) replaces ``seconds_per_frame``, a conservative guess. Thread-safe.

    The streams decoding at once share the engine: a job is learned per stream (its time over
    the streams that decoded beside it), and ``seconds_per_frame`` is that times the streams
    decoding now, so that a second listener's opening is sized for the engine it will share,
    not for the one the first had alone (docs/tts_server.md, "Two listeners at once").
    """

    def __init__(
        self,
        seconds_per_frame: float = DEFAULT_SECONDS_PER_FRAME,
        now: Callable[[], float] = time.perf_counter,
    ) -> None:
        if not seconds_per_frame > 0:
            raise ValueError(f"a decode rate must be positive ({seconds_per_frame})")
        self.now = now
        self._rate = seconds_per_frame
        self._latest = 0.0  # the last job's own rate
        self._measured = False
        self._streams = 0  # sentences decoding now (``streaming``)
        self._lock = threading.Lock()

    @property
    def seconds_per_frame(self) -> float:
        """A stream's estimate now: the average, or the last job's rate if it was slower (a load
        that has just come shows there first), times the streams decoding (at least one)."""
        with self._lock:
            return max(self._rate, self._latest) * max(1, self._streams)

    @property
    def streams(self) -> int:
        """The sentences decoding now."""
        with self._lock:
            return self._streams

    @contextlib.contextmanager
    def streaming(self) -> Iterator[None]:
        """One sentence decoding, from its text side to its last window: a stream sharing the
        engine with every other one inside this block."""
        with self._lock:
            self._streams += 1
        try:
            yield
        finally:
            with self._lock:
                self._streams -= 1

    def learn(self, seconds: float, frames: int, streams: float = 1.0) -> None:
        """Pool one job that decoded ``frames`` frames in ``seconds`` while ``streams`` streams
        (on average, at least one) decoded."""
        if frames <= 0 or seconds < 0:
            return
        observed = max(seconds / frames / max(1.0, streams), MIN_SECONDS_PER_FRAME)
        weight = 1 - 0.5 ** (frames / RATE_HALF_LIFE_FRAMES)
        with self._lock:
            self._rate = observed if not self._measured else self._rate
            self._rate += weight * (observed - self._rate)
            self._latest = observed
            self._measured = True

    async def measured(self, job: Awaitable[T], frames: int) -> T:
        """``job``'s result, its time (submission to result) learned for ``frames`` frames and
        the streams decoding meanwhile (those at its submission and at its result, averaged)."""
        started, streams = self.now(), self.streams
        result = await job
        self.learn(self.now() - started, frames, (streams + self.streams) / 2)
        return result


class PlaybackClock:
    """One connection's listener, as the schedule models it: each chunk sent plays back to back
    from when it arrives, the first (or the first after the listener ran dry) ``lead_s`` later."""

    def __init__(
        self, lead_s: float = LISTENER_LEAD_S, now: Callable[[], float] = time.perf_counter
    ) -> None:
        if lead_s < 0:
            raise ValueError(f"the listener's lead cannot be negative ({lead_s})")
        self.lead_s = lead_s
        self.now = now
        self.ends_at: float | None = None  # when the audio sent so far ends playing

    def sent(self, seconds: float) -> float:
        """A chunk of ``seconds`` of audio sent now: how long the listener waited for it after
        the audio before it ended (0: in time, or nothing came before it)."""
        now, ends_at = self.now(), self.ends_at
        self.ends_at = ends_at if ends_at is not None and ends_at > now else now + self.lead_s
        self.ends_at += seconds
        return 0.0 if ends_at is None else max(0.0, now - ends_at)

    def ahead(self) -> float:
        """Seconds of audio sent but not yet played."""
        return 0.0 if self.ends_at is None else max(0.0, self.ends_at - self.now())

    def reset(self) -> None:
        """The listener dropped what it had (a cancel): nothing is buffered."""
        self.ends_at = None
