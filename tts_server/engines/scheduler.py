"""Continuous batching of sentence pieces from every connection onto the engine's worker lanes.

Callers on any event loop ``await scheduler.synthesize(piece)``. Pieces wait in one FIFO queue.
Each lane is one thread that owns one model instance (the torch engine has one lane; the ONNX
engine may have several, each with its share of the cores). A free lane takes the oldest piece
and, from the same length bucket, up to ``max_batch - 1`` more in arrival order, waiting at
most ``wait_s`` after the oldest piece arrived for the batch to fill. A piece that arrives while
a batch runs joins the next one: there are no waves. A cancelled caller's piece leaves the
queue; if its batch is already running, its result is discarded, and when every piece of a
running batch is cancelled the lane's inference is interrupted (where the engine can).

A batch holds jobs of one kind: pieces, or (for an engine that decodes in windows) windows of
sentences already started; a window job is queued like a piece and batches with the windows of
other connections. The scheduler plans no window: which windows a sentence has, their size (a
window job's ``size`` is ``Window.decoded_frames``) and when the next is submitted are the
window plan's (``windows.WindowPlan.decoded``: once the one before is decoded and taken). A
connection awaits one job before it submits the next, so its order is kept, lanes are shared
fairly between connections, and a cancel between two windows stops the sentence there. With
``max_batch=1`` and one lane, pieces run one at a time in arrival order on one thread.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tts_protocol.validation import VoiceMix

# Token-count edges of the length buckets: a batch mixes only pieces of one bucket, so the
# padding stays below about a third of the batch's frames.
BUCKET_EDGES = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384)


@dataclass(frozen=True, slots=True)
class Piece:
    """One model-sized phoneme string to speak, in a checked voice (a mix) at a speed."""

    phonemes: str
    voice: VoiceMix
    speed: float


Job = Any  # a Piece, or a later step of one (a window of a started sentence)
Result = Any  # what the engine makes of a job: its audio (and its timings)
RunBatch = Callable[[int, Sequence[Job]], list[Result]]  # (lane, jobs of one kind) -> result each
Interrupt = Callable[[int], None]  # abort the inference running on a lane
Size = Callable[[Job], int]  # a job's length (a piece's in model tokens)


def bucket_of(tokens: int) -> int:
    """The index of the length bucket a piece of ``tokens`` tokens belongs to."""
    return bisect.bisect_left(BUCKET_EDGES, tokens)


@dataclass(eq=False)
class _Job:
    piece: Job
    bucket: tuple[str, int]  # the job's kind and length bucket
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Result]
    enqueued: float = field(default_factory=time.monotonic)
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class SchedulerStats:
    """What the scheduler holds now: pieces waiting and pieces inside running batches."""

    queued: int
    in_flight: int
    batches: int  # batches run since start
    pieces: int  # pieces run since start
    sizes: Mapping[int, int] = field(default_factory=dict)  # batches run, by pieces in each


class BatchScheduler:
    """One queue of pieces, ``lanes`` worker threads, batches of up to ``max_batch`` pieces."""

    def __init__(
        self,
        run_batch: RunBatch,
        *,
        size: Size,
        interrupt: Interrupt | None = None,
        lanes: int = 1,
        max_batch: int = 1,
        wait_s: float = 0.0,
        name: str = "engine",
    ) -> None:
        if lanes < 1 or max_batch < 1 or wait_s < 0:
            raise ValueError(f"need lanes >= 1, max_batch >= 1, wait >= 0 ({lanes=}, {max_batch=})")
        self._run_batch = run_batch
        self._size = size
        self._interrupt = interrupt
        self.lanes = lanes
        self.max_batch = max_batch
        self.wait_s = wait_s
        self._queue: list[_Job] = []
        self._running: list[list[_Job] | None] = [None] * lanes
        self._cond = threading.Condition()
        self._batches = 0
        self._pieces = 0
        self._sizes: Counter[int] = Counter()
        self._closed = False
        self._threads = [
            threading.Thread(
                target=self._lane, args=(lane,), name=f"{name}-lane-{lane}", daemon=True
            )
            for lane in range(lanes)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def stats(self) -> SchedulerStats:
        """Queue depth and in-flight count (for metrics and admission control)."""
        with self._cond:
            in_flight = sum(len(batch) for batch in self._running if batch)
            return SchedulerStats(
                len(self._queue), in_flight, self._batches, self._pieces, dict(self._sizes)
            )

    async def synthesize(self, piece: Job) -> Result:
        """The result of ``piece`` (or window), once a lane has run the batch it joined."""
        loop = asyncio.get_running_loop()
        bucket = (type(piece).__name__, bucket_of(self._size(piece)))
        job = _Job(piece, bucket, loop, loop.create_future())
        with self._cond:
            if self._closed:
                raise RuntimeError("the engine's scheduler is closed")
            self._queue.append(job)
            self._cond.notify_all()
        try:
            return await job.future
        except asyncio.CancelledError:
            self._cancel(job)
            raise

    def close(self) -> None:
        """Stop the lanes once their running batches end; queued callers get an error."""
        with self._cond:
            self._closed = True
            doomed, self._queue = self._queue, []
            self._cond.notify_all()
        for job in doomed:
            _deliver(job, RuntimeError("the engine's scheduler is closed"))

    def _cancel(self, job: _Job) -> None:
        with self._cond:
            job.cancelled = True
            if job in self._queue:
                self._queue.remove(job)
                return
            for lane, batch in enumerate(self._running):
                abandoned = batch is not None and job in batch and all(j.cancelled for j in batch)
                if abandoned and self._interrupt is not None:
                    self._interrupt(lane)  # under the lock: the batch cannot change meanwhile

    def _take(self) -> list[_Job] | None:
        """Block until a batch is ready (called with the lock held); None once closed."""
        while True:
            if self._closed:
                return None
            if not self._queue:
                self._cond.wait()
                continue
            first = self._queue[0]
            peers = [job for job in self._queue if job.bucket == first.bucket][: self.max_batch]
            remaining = first.enqueued + self.wait_s - time.monotonic()
            if len(peers) < self.max_batch and remaining > 0:
                self._cond.wait(remaining)  # more may arrive; the queue is re-read after
                continue
            for job in peers:
                self._queue.remove(job)
            return peers

    def _lane(self, lane: int) -> None:
        while True:
            with self._cond:
                batch = self._take()
                if batch is None:
                    return
                self._running[lane] = batch
            try:
                results = self._run(lane, batch)
            finally:
                with self._cond:
                    self._running[lane] = None
                    self._batches += 1
                    self._pieces += len(batch)
                    self._sizes[len(batch)] += 1
            for job, result in zip(batch, results, strict=True):
                _deliver(job, result)

    def _run(self, lane: int, batch: list[_Job]) -> list[Result | BaseException]:
        """Run ``batch``; if it fails as a whole, run its pieces alone so one bad piece is alone."""
        pieces = [job.piece for job in batch]
        try:
            return list(self._run_batch(lane, pieces))
        except Exception as exc:
            if len(batch) == 1 or all(job.cancelled for job in batch):
                return [exc] * len(batch)
        results: list[Result | BaseException] = []
        for job in batch:
            if job.cancelled:
                results.append(asyncio.CancelledError())
                continue
            try:
                results.append(self._run_batch(lane, [job.piece])[0])
            except Exception as exc:
                results.append(exc)
        return results


def _deliver(job: _Job, result: Result | BaseException) -> None:
    """Hand ``result`` to the job's caller on its own loop; a cancelled caller gets nothing."""

    def resolve() -> None:
        if job.future.done():
            return
        if isinstance(result, BaseException):
            job.future.set_exception(result)
        else:
            job.future.set_result(result)

    if job.cancelled:
        return
    with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits
        job.loop.call_soon_threadsafe(resolve)
