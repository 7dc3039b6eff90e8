"""One turn, as an async generator of events: LLM text → segmenter → TTS session → audio.

Two tasks run side by side. The producer streams the LLM's text, cuts it into segments and
sends each one on the TTS session the moment it is complete (pipelined: it never waits for
audio). The relay reads the segments' audio strictly in order and turns it into
``audio.delta`` events. Both feed one queue, which the generator drains, so text never waits
for audio and audio never waits for text. Closing the generator (client gone) or superseding
the turn (a new prompt in the same conversation) cancels both tasks and every segment still in
flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from agent.events import (
    ErrorEvent,
    Event,
    Segment,
    SegmentEnd,
    SegmentMarks,
    TextDelta,
    TurnEnd,
    TurnMetrics,
    TurnStart,
    audio_deltas,
)
from agent.requests import TurnRequest
from agent.segmenter import SentenceSegmenter
from agent.telemetry import TurnTelemetry, detached
from tts_client import SegmentFailed, SegmentStream, TTSError, TTSSession
from tts_protocol import samples_ms


class TextModel(Protocol):
    """What a turn needs of a strands ``Agent``."""

    def stream_async(self, prompt: str) -> AsyncIterator[dict[str, Any]]: ...


SessionSource = Callable[[], Awaitable[TTSSession]]


def _ms(since: float, at: float | None) -> float | None:
    return None if at is None else round((at - since) * 1000, 1)


class Turn:
    """The state of one running turn; ``run()`` is its event stream."""

    def __init__(
        self,
        request: TurnRequest,
        llm: TextModel,
        tts: SessionSource,
        *,
        received_at: float | None = None,
        segmenter: SentenceSegmenter | None = None,
        conversation: str | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex
        self.conversation = conversation  # for the turn's logs and trace
        self.request = request
        self.received_at = received_at if received_at is not None else time.perf_counter()
        self.finished = asyncio.Event()
        self._llm = llm
        self._tts = tts
        self._segmenter = segmenter or SentenceSegmenter()
        self._events: asyncio.Queue[Event | None] = asyncio.Queue()
        # a segment and its audio (None: speech is down, it ends without audio), in order
        self._segments: asyncio.Queue[tuple[int, SegmentStream | None] | None] = asyncio.Queue()
        self._session: TTSSession | None = None
        self._tts_down = False
        self._tasks: list[asyncio.Task[None]] = []
        self._cleanup: asyncio.Future[None] | None = None
        self._seq = 0
        self._first_text: float | None = None
        self._first_audio: float | None = None
        self._audio_samples = 0

    def supersede(self) -> None:
        """A newer turn takes over: stop generating and speaking now."""
        if not self.finished.is_set():
            self._events.put_nowait(ErrorEvent("superseded", "a newer turn started"))
        for task in self._tasks:
            task.cancel()

    async def run(self) -> AsyncIterator[Event]:
        """Yield every event of the turn, ``turn.end`` last, whatever happens."""
        request = self.request
        telemetry = self._telemetry = TurnTelemetry(
            self.id, self.conversation, request.mode, request.prompt
        )
        try:
            yield TurnStart(self.id, request.mode)
            self._tasks = [
                telemetry.task(self._produce(), f"turn-{self.id[:8]}-llm", "llm.stream"),
                telemetry.task(self._relay(), f"turn-{self.id[:8]}-audio", "audio.relay"),
            ]
            running = len(self._tasks)
            while running:
                event = await self._events.get()
                if event is None:
                    running -= 1
                else:
                    yield telemetry.saw(event)
            yield telemetry.saw(self._metrics())
            yield telemetry.saw(TurnEnd())
        finally:
            # A task of its own: a cancelled caller (anyio cancels every later await in its
            # scope) must not cut the clean-up short, or segments would go on being spoken.
            self._cleanup = asyncio.ensure_future(self._stop())
            await asyncio.shield(self._cleanup)

    async def _stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._session is not None and self._session.pending and not self._session.closed:
            with contextlib.suppress(TTSError):  # a failing session cannot leak audio anyway
                await self._session.cancel_all()
        self._telemetry.end()
        self.finished.set()

    def _metrics(self) -> TurnMetrics:
        return TurnMetrics(
            ttft_ms=_ms(self.received_at, self._first_text),
            ttfa_ms=_ms(self.received_at, self._first_audio),
            total_ms=_ms(self.received_at, time.perf_counter()),
            segments=self._seq,
            audio_ms=samples_ms(self._audio_samples),
        )

    # --- producer: LLM text → segments → TTS ---------------------------------------------

    async def _produce(self) -> None:
        streaming = self.request.mode == "stream"
        reply: list[str] = []
        try:
            try:
                async for delta in self._text():
                    if not streaming:
                        reply.append(delta)
                        continue
                    for text in self._segmenter.push(delta):
                        await self._speak(text)
            except Exception as exc:  # the LLM failed: speak what it said, report, end the turn
                failed = ErrorEvent("llm_failed", f"{type(exc).__name__}: {exc}")
                self._events.put_nowait(failed)
            if streaming:
                for text in self._segmenter.flush():
                    await self._speak(text)
            elif spoken := self._segmenter.push("".join(reply)) + self._segmenter.flush():
                await self._speak(" ".join(spoken))
        finally:
            self._segments.put_nowait(None)
            self._events.put_nowait(None)

    async def _text(self) -> AsyncIterator[str]:
        async for event in self._llm.stream_async(self.request.prompt):
            text = event.get("data")
            if isinstance(text, str) and text:
                if self._first_text is None:
                    self._first_text = time.perf_counter()
                self._events.put_nowait(TextDelta(text))
                yield text

    async def _speak(self, text: str) -> None:
        seq, self._seq = self._seq, self._seq + 1
        self._events.put_nowait(Segment(seq, text))
        if self._tts_down:
            return self._segments.put_nowait((seq, None))
        self._telemetry.segment_sent(seq, text)
        try:
            if self._session is None:  # outside the turn's context: the session outlives it
                self._session = await detached(self._tts())
            request = self.request
            stream = await self._session.speak(text, request.voice, request.speed, request.marks)
        except TTSError as exc:
            self._tts_failed(exc)
            return self._segments.put_nowait((seq, None))
        self._segments.put_nowait((seq, stream))

    def _tts_failed(self, exc: TTSError) -> None:
        if not self._tts_down:
            self._tts_down = True
            message = f"speech is unavailable ({type(exc).__name__}: {exc}); text continues"
            self._events.put_nowait(ErrorEvent("tts_unavailable", message))

    # --- relay: audio in segment order → events ----------------------------------------

    async def _relay(self) -> None:
        try:
            while (item := await self._segments.get()) is not None:
                seq, stream = item
                samples = 0
                if stream is None:  # every segment gets its segment.end, in order
                    self._events.put_nowait(SegmentEnd.after(seq, samples))
                    continue
                try:
                    async for pcm in stream.with_marks():
                        if not isinstance(pcm, bytes):  # word timings, before their audio
                            self._events.put_nowait(SegmentMarks(seq, pcm))
                            continue
                        if self._first_audio is None:
                            self._first_audio = time.perf_counter()
                        samples += len(pcm) // 2
                        for event in audio_deltas(seq, pcm):
                            self._events.put_nowait(event)
                except SegmentFailed as exc:  # this segment only; the next ones still play
                    failed = ErrorEvent("synthesis_failed", f"segment {seq}: {exc}")
                    self._events.put_nowait(failed)
                except TTSError as exc:
                    self._tts_failed(exc)
                self._audio_samples += samples
                self._telemetry.segment_ended(seq, stream)
                self._events.put_nowait(SegmentEnd.after(seq, samples))
        finally:
            self._events.put_nowait(None)
