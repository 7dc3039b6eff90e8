"""One spoken segment as the caller sees it: an async iterator of PCM chunks plus its outcome.

A segment spoken with ``marks=True`` also has word timings: ``words`` collects them, and
``with_marks()`` yields them in order with the audio (each batch of words before the audio it
times); plain iteration still yields audio bytes only.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum

from tts_client.errors import SegmentFailed, TTSError
from tts_protocol import (
    BYTES_PER_SAMPLE,
    End,
    SegmentCancelled,
    SegmentEnded,
    SegmentErrorReported,
    VoiceMix,
    Word,
)

Marked = tuple[Word, ...]  # word timings, ms from the start of the segment's audio


class SegmentStatus(StrEnum):
    """Where a segment is; every segment ends in exactly one of the last three."""

    PENDING = "pending"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(slots=True)
class SegmentTimings:
    """``time.perf_counter()`` stamps: sent, first audio chunk, terminal status."""

    sent: float | None = None
    first_audio: float | None = None
    end: float | None = None

    @property
    def first_audio_s(self) -> float | None:
        """Seconds from sending to the first audio chunk."""
        if self.sent is None or self.first_audio is None:
            return None
        return self.first_audio - self.sent

    @property
    def total_s(self) -> float | None:
        """Seconds from sending to the terminal status."""
        if self.sent is None or self.end is None:
            return None
        return self.end - self.sent


class SegmentStream:
    """The audio of one ``speak``: ``async for chunk in stream`` yields s16le mono PCM bytes.

    Iteration stops after the last chunk when the segment is done or cancelled (buffered
    audio of a cancelled segment is discarded) and raises its error when it failed.
    """

    def __init__(self, id: str, text: str, voice: VoiceMix | None, speed: float) -> None:
        self.id = id
        self.text = text
        self.voice = voice
        self.speed = speed
        self.status = SegmentStatus.PENDING
        self.error: TTSError | None = None
        self.end: End | None = None  # the server's `end` (samples, synth_ms) when done
        self.timings = SegmentTimings()
        self.delivered_bytes = 0  # audio handed to the caller's buffer, over every attempt
        self.words: list[Word] = []  # every word timing received, in order
        self._chunks: deque[bytes | Marked] = deque()
        self._changed = asyncio.Event()

    def __repr__(self) -> str:
        return f"<SegmentStream {self.id[:8]} {self.status} {self.text[:24]!r}>"

    @property
    def done(self) -> bool:
        """True once the segment has its terminal status."""
        return self.status is not SegmentStatus.PENDING

    @property
    def samples(self) -> int:
        """PCM samples delivered so far."""
        return self.delivered_bytes // BYTES_PER_SAMPLE

    def __aiter__(self) -> SegmentStream:
        return self

    async def __anext__(self) -> bytes:
        while True:
            item = await self._next()
            if isinstance(item, bytes):
                return item

    async def with_marks(self) -> AsyncIterator[bytes | Marked]:
        """Audio (``bytes``) and word timings (a tuple of ``Word``), in the order they came."""
        while True:
            try:
                yield await self._next()
            except StopAsyncIteration:
                return

    async def _next(self) -> bytes | Marked:
        while not self._chunks:
            if self.done:
                if self.error is not None:
                    raise self.error
                raise StopAsyncIteration
            self._changed.clear()
            await self._changed.wait()
        return self._chunks.popleft()

    async def read(self) -> bytes:
        """All (remaining) audio, once the segment is done; raises if it failed."""
        return b"".join([chunk async for chunk in self])

    async def wait(self) -> SegmentStatus:
        """Wait for the terminal status without consuming audio."""
        while not self.done:
            self._changed.clear()
            await self._changed.wait()
        return self.status

    # --- driven by the session (``ClientProtocol`` has already ordered and de-duplicated) ---

    def mark_sent(self) -> None:
        """The ``speak`` went out (the first time counts for the timings)."""
        if self.timings.sent is None:
            self.timings.sent = time.perf_counter()

    def feed(self, pcm: bytes) -> None:
        """New audio for the caller; ignored once the segment is over."""
        if self.done or not pcm:
            return
        if self.timings.first_audio is None:
            self.timings.first_audio = time.perf_counter()
        self.delivered_bytes += len(pcm)
        self._chunks.append(pcm)
        self._changed.set()

    def feed_marks(self, words: Marked) -> None:
        """Timings of the words whose audio comes next; ignored once the segment is over."""
        if self.done or not words:
            return
        self.words.extend(words)
        self._chunks.append(words)
        self._changed.set()

    def finish(
        self, status: SegmentStatus, error: TTSError | None = None, end: End | None = None
    ) -> None:
        """Set the terminal status (the first one wins); a cancel drops buffered audio."""
        if self.done:
            return
        self.status = status
        self.error = error
        self.end = end
        self.timings.end = time.perf_counter()
        if status is SegmentStatus.CANCELLED:
            self._chunks.clear()
        self._changed.set()

    def finish_by(self, reply: SegmentEnded | SegmentCancelled | SegmentErrorReported) -> None:
        """Finish as the server's terminal reply says."""
        if isinstance(reply, SegmentEnded):
            self.finish(SegmentStatus.DONE, end=reply.end)
        elif isinstance(reply, SegmentCancelled):
            self.finish(SegmentStatus.CANCELLED)
        else:
            failure = SegmentFailed(reply.code, reply.message, reply.segment_id)
            self.finish(SegmentStatus.FAILED, failure)
