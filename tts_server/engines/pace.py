"""What a sentence's windows are paced by (``windows.WindowPlan.decoded``): the engine's
measured decode rate (``DecodeRate``, one per engine) and the listener's buffer as the server
models it (``PlaybackClock``, one per connection). The plan, which reads them, is
``windows``'s alone (docs/tts_server.md, "Decoding in windows", "The pace")."""

from __future__ import annotations

import collections
import contextlib
import math
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
# A decoder call costs as much as this many more frames, whatever its size (docs/tts_server.md,
# "A call's own cost"): a window of ``n`` decoded frames takes ``(n + CALL_FRAMES)`` times the
# rate. Measured on the 2-core box (bench.latency.call_cost): 2.8 frames, one stream alone;
# rounded up, as a window predicted short runs late.
CALL_FRAMES = 4
# The margin a window's predicted decode is given (docs/tts_server.md, "The pace"): at least
# ``PACE_MARGIN`` (a window's time strays ~20 % from the average rate on a shared box); where
# the latest ``MISSES_KEPT`` jobs strayed more, the ``MISS_QUANTILE`` of their time over their
# estimate, at most ``MOST_PACE_MARGIN``. A reply's opening window (nothing buffered) is
# estimated at the rate times the same quantile of the latest ``OPENINGS_KEPT`` openings' miss,
# at most ``MOST_OPENING_SLOWDOWN`` (the page's first windows ran 10-12 ms a frame against 8
# idle; an opening sized for a stall, as slow as real time, would cost its reply seconds).
PACE_MARGIN = 1.3
MOST_PACE_MARGIN = 2.0
MISSES_KEPT = 32
OPENINGS_KEPT = 8
MISS_QUANTILE = 0.9
MOST_OPENING_SLOWDOWN = 1.5


class DecodeRate:
    """An engine's measured decode rate: seconds per decoded frame (context included), shared
    by every connection, so that it says what a window costs under the load of the moment. A
    decoder call of ``n`` frames costs ``n + CALL_FRAMES`` of them: so small windows do not
    make the rate look slower than large ones decode.

    Each window job is timed from submission to result (queueing behind other connections'
    counts), pooled into an average weighing each job by its frames (an old rate counts half
    after ``RATE_HALF_LIFE_FRAMES`` new ones). The first measurement (the engine's calibration,
    if any) replaces ``seconds_per_frame``, a conservative guess. Thread-safe.

    The streams decoding at once share the engine: a job is learned per stream (its time over
    the streams that decoded beside it), and ``seconds_per_frame`` is that times the streams
    decoding now, so that a second listener's opening is sized for the engine it will share,
    not for the one the first had alone (docs/tts_server.md, "Two listeners at once").

    ``margin`` is how far a job's time may stray from the estimate it was cut by, measured: the
    latest jobs' time over their estimate (a load that comes and goes), so that windows are cut
    for the misses this machine has. Openings, the first window of a reply, miss on their own:
    a reply starts the listener's work too (a page that starts playing and drawing), so they
    are estimated at ``opening_seconds_per_frame``, the rate times their own latest misses.
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
        self._streams: collections.Counter[object] = collections.Counter()  # ``streaming``'s
        self._misses: collections.deque[float] = collections.deque(maxlen=MISSES_KEPT)
        self._opening_misses: collections.deque[float] = collections.deque(maxlen=OPENINGS_KEPT)
        self._lock = threading.Lock()

    @property
    def seconds_per_frame(self) -> float:
        """A stream's estimate now: the average, or the last job's rate if it was slower (a load
        that has just come shows there first), times the streams decoding (at least one)."""
        with self._lock:
            return max(self._rate, self._latest) * max(1, len(self._streams))

    @property
    def margin(self) -> float:
        """The factor a window's predicted decode is given: ``PACE_MARGIN``, or where the latest
        jobs took longer over their estimate, the ``MISS_QUANTILE`` of that (at most
        ``MOST_PACE_MARGIN``)."""
        with self._lock:
            miss = _quantile(self._misses)
        return min(MOST_PACE_MARGIN, max(PACE_MARGIN, miss))

    @property
    def opening_seconds_per_frame(self) -> float:
        """The estimate for a reply's opening window: ``seconds_per_frame`` times the latest
        openings' miss (``MISS_QUANTILE``; none measured, or on time: 1; at most
        ``MOST_OPENING_SLOWDOWN``)."""
        with self._lock:
            miss = _quantile(self._opening_misses)
        return self.seconds_per_frame * min(MOST_OPENING_SLOWDOWN, max(1.0, miss))

    @property
    def streams(self) -> int:
        """The streams decoding now (inside ``streaming``)."""
        with self._lock:
            return len(self._streams)

    @contextlib.contextmanager
    def streaming(self, listener: object | None = None) -> Iterator[None]:
        """A stream sharing the engine with every other one inside this block: a sentence, from
        its text side to its last window, or a ``listener``'s whole reply. Blocks of one
        ``listener`` count as one stream however they nest (its connection holds one from a
        segment queued to its queue empty, so that the pause between its sentences, their G2P,
        hides it from no other listener's windows); None: a stream of its own."""
        key = object() if listener is None else listener
        with self._lock:
            self._streams[key] += 1
        try:
            yield
        finally:
            with self._lock:
                self._streams[key] -= 1
                if not self._streams[key]:
                    del self._streams[key]

    def learn(self, seconds: float, frames: int, streams: float = 1.0) -> None:
        """Pool one decoder call that decoded ``frames`` frames in ``seconds`` while ``streams``
        streams (on average, at least one) decoded; the call's own cost is ``CALL_FRAMES``."""
        if frames <= 0 or seconds < 0:
            return
        observed = seconds / (frames + CALL_FRAMES) / max(1.0, streams)
        observed = max(observed, MIN_SECONDS_PER_FRAME)
        weight = 1 - 0.5 ** (frames / RATE_HALF_LIFE_FRAMES)
        with self._lock:
            self._rate = observed if not self._measured else self._rate
            self._rate += weight * (observed - self._rate)
            self._latest = observed
            self._measured = True

    async def measured(self, job: Awaitable[T], frames: int, *, opening: bool = False) -> T:
        """``job``'s result, its time (submission to result) learned for ``frames`` frames and
        the streams decoding meanwhile (those at its submission and at its result, averaged),
        and how far that time missed ``seconds_per_frame`` at its submission: ``margin``'s, or
        with ``opening`` (a reply's first window), ``opening_seconds_per_frame``'s."""
        started, streams = self.now(), self.streams
        expected = self.seconds_per_frame * (frames + CALL_FRAMES)
        result = await job
        seconds = self.now() - started
        self.learn(seconds, frames, (streams + self.streams) / 2)
        if frames > 0:
            with self._lock:
                (self._opening_misses if opening else self._misses).append(seconds / expected)
        return result


def _quantile(misses: collections.deque[float]) -> float:
    """The ``MISS_QUANTILE`` of ``misses`` (0 for none)."""
    ranked = sorted(misses)
    return ranked[math.ceil(MISS_QUANTILE * len(ranked)) - 1] if ranked else 0.0


class PlaybackClock:
    """One connection's listener, as the schedule models it: each chunk sent plays back to back
    from when it arrives, the first (or the first after the listener ran dry) ``lead_s`` later.
    A chunk that comes just as the audio before it ends still plays back to back (the page's
    player counts an underrun only after it)."""

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
        self.ends_at = ends_at if ends_at is not None and ends_at >= now else now + self.lead_s
        self.ends_at += seconds
        return 0.0 if ends_at is None else max(0.0, now - ends_at)

    def ahead(self) -> float:
        """Seconds of audio sent but not yet played."""
        return 0.0 if self.ends_at is None else max(0.0, self.ends_at - self.now())

    def reset(self) -> None:
        """The listener dropped what it had (a cancel): nothing is buffered."""
        self.ends_at = None
