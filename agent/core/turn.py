"""One turn, as an async generator of events: LLM text → segmenter → TTS session → audio.

Three tasks run side by side. The producer streams the LLM's text and cuts it into segments.
The sender borrows a TTS session at once (its handshake, if any, overlaps the LLM's first
tokens) and sends each segment the moment it is cut (pipelined: it never waits for audio).
The relay reads the segments' audio strictly in order and turns it into ``audio.delta``
events. All three feed one queue, which the generator drains, so text never waits for audio,
nor for a slow or refusing speech server. The session goes back to its lender when the turn
ends: an idle conversation holds none. A busy server or a lost connection is reported at its
first refusal (``tts_busy``, ``tts_reconnecting``) while the session retries, and
``tts_unavailable`` if it gives up. Closing the generator (client gone) or superseding the
turn (a new prompt in the same conversation) cancels the tasks and every segment in flight.
What was sent as audio is recorded (``spoken``), so that the conversation can keep only what
the user heard of a turn cut off (``agent/core/memory.py``); ``on_end`` is told when the turn ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, Protocol

from agent.core.memory import Spoken
from agent.core.playback import Playback
from agent.core.telemetry import TurnTelemetry, detached, read_apart
from agent.core.tool_calls import Filler, ToolCalls
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
from agent.requests import PlaybackReport, TurnRequest
from agent.segmenter import SentenceSegmenter
from tts_client import SegmentFailed, SegmentStream, TTSBusy, TTSError, TTSSession
from tts_protocol import ErrorCode, samples_ms

log = logging.getLogger("agent.turn")


class TextModel(Protocol):
    """What a turn needs of a strands ``Agent``."""

    def stream_async(self, prompt: str) -> AsyncIterator[dict[str, Any]]: ...


class SessionLender(Protocol):
    """Where a turn gets its TTS session (``tts_client.SessionPool``)."""

    async def borrow(self, on_retry: Callable[[TTSError], None] | None = None) -> TTSSession: ...

    def give_back(self, session: TTSSession) -> None: ...


def _ms(since: float, at: float | None) -> float | None:
    return None if at is None else round((at - since) * 1000, 1)


class Turn:
    """The state of one running turn; ``run()`` is its event stream."""

    def __init__(
        self,
        request: TurnRequest,
        llm: TextModel,
        tts: SessionLender,
        *,
        received_at: float | None = None,
        segmenter: SentenceSegmenter | None = None,
        conversation: str | None = None,
        on_end: Callable[[Turn], None] | None = None,
        filler: Filler | None = None,
    ) -> None:
        self.id = uuid.uuid4().hex
        self.conversation = conversation  # for the turn's logs and trace
        self.request = request
        self.received_at = received_at if received_at is not None else time.perf_counter()
        self.finished = asyncio.Event()
        self.began = False  # run() started: ``finished`` will be set
        self.spoken = Spoken()
        self.heard: PlaybackReport | None = None  # where the client reported it stopped playing
        self._on_end = on_end
        self._filler = filler  # said when a tool runs long (None: never)
        self._llm_done = False  # the LLM's stream ran to its end
        self._relay_done = False  # every segment's audio was relayed
        self._llm = llm
        self._tts = tts
        self._segmenter = segmenter or SentenceSegmenter()
        self._events: asyncio.Queue[Event | None] = asyncio.Queue()
        self._outgoing: asyncio.Queue[tuple[int, str] | None] = asyncio.Queue()  # to send
        # a segment and its audio (None: speech is down, it ends without audio), in order
        self._segments: asyncio.Queue[tuple[int, SegmentStream | None] | None] = asyncio.Queue()
        self._borrowing: asyncio.Task[TTSSession] | None = None
        self._session: TTSSession | None = None  # once borrowed
        self._tts_down = False
        self._retry_reported = False
        self._tasks: list[asyncio.Task[None]] = []
        self._cleanup: asyncio.Future[None] | None = None
        self._seq = 0
        self._first_text: float | None = None
        self._first_audio: float | None = None
        self._audio_samples = 0
        self._playback = Playback()  # until when the page plays the audio relayed so far

    @property
    def cut(self) -> bool:
        """Did the turn end before the LLM or its audio did (cancelled, superseded, failed)?"""
        return not (self._llm_done and self._relay_done)

    def supersede(self) -> None:
        """A newer turn takes over: stop generating and speaking now."""
        if not self.finished.is_set():
            self._events.put_nowait(ErrorEvent("superseded", "a newer turn started"))
        for task in self._tasks:
            task.cancel()

    async def run(self) -> AsyncIterator[Event]:
        """Yield every event of the turn, ``turn.end`` last, whatever happens."""
        request = self.request
        self.began = True
        telemetry = self._telemetry = TurnTelemetry(
            self.id, self.conversation, request.mode, request.prompt
        )
        try:
            yield TurnStart(self.id, request.mode)
            self._tools = ToolCalls(
                self._events.put_nowait,
                telemetry.parent,
                self._aside,
                self._filler,
                lambda: self._playback.left(time.perf_counter()),
            )
            self._tasks = [
                telemetry.task(self._produce(), f"turn-{self.id[:8]}-llm", "llm.stream"),
                telemetry.task(self._send(), f"turn-{self.id[:8]}-tts", "tts.send"),
                telemetry.task(self._relay(), f"turn-{self.id[:8]}-audio", "audio.relay"),
            ]
            for task in self._tasks:  # however it ends, even cancelled before it began
                task.add_done_callback(lambda _: self._events.put_nowait(None))
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
        session = await self._borrowed()
        if session is not None:
            if session.pending and not session.closed:
                with contextlib.suppress(TTSError):  # a failing session cannot leak audio anyway
                    await session.cancel_all()
            self._tts.give_back(session)
        self._telemetry.end()
        if self._on_end is not None:
            try:
                self._on_end(self)
            except Exception:  # the turn's end must come whatever its listener does
                log.exception("a turn's end handler failed")
        self.finished.set()

    async def _borrowed(self) -> TTSSession | None:
        """The session the borrow brought, if any (a borrow still connecting is stopped)."""
        if self._borrowing is None:
            return None
        self._borrowing.cancel()  # nothing, once it is done
        [outcome] = await asyncio.gather(self._borrowing, return_exceptions=True)
        return outcome if isinstance(outcome, TTSSession) else None

    def _metrics(self) -> TurnMetrics:
        return TurnMetrics(
            ttft_ms=_ms(self.received_at, self._first_text),
            ttfa_ms=_ms(self.received_at, self._first_audio),
            total_ms=_ms(self.received_at, time.perf_counter()),
            segments=self._seq,
            audio_ms=samples_ms(self._audio_samples),
            tool_calls=self._tools.calls,
            tool_ms=self._tools.busy_ms,
        )

    # --- producer: LLM text → segments → TTS ---------------------------------------------

    async def _produce(self) -> None:
        streaming = self.request.mode == "stream"
        reply: list[str] = []
        self._tools.activate()
        try:
            try:
                async with contextlib.aclosing(self._text()) as deltas:
                    async for delta in deltas:
                        if delta is None:  # a tool call comes: say the text before it now
                            if streaming:
                                for text in self._segmenter.flush():
                                    self._speak(text)
                            continue
                        if not streaming:
                            reply.append(delta)
                            continue
                        for text in self._segmenter.push(delta):
                            self._speak(text)
            except Exception as exc:  # the LLM failed: speak what it said, report, end the turn
                failed = ErrorEvent("llm_failed", f"{type(exc).__name__}: {exc}")
                self._events.put_nowait(failed)
            if streaming:
                for text in self._segmenter.flush():
                    self._speak(text)
            elif spoken := self._segmenter.push("".join(reply)) + self._segmenter.flush():
                self._speak(" ".join(spoken))
        finally:
            self._tools.abandon()
            self._outgoing.put_nowait(None)

    async def _text(self) -> AsyncGenerator[str | None, None]:
        """The LLM's text, read apart (``agent/core/telemetry.py``: strands' spans stay in their
        task however the turn ends); None where a model message ends or a tool call begins, and
        the text after it set off from the text before by a space."""
        apart = False  # a message ended or a tool call came since the last text
        last = ""
        async for event in read_apart(self._llm.stream_async(self.request.prompt)):
            if "current_tool_use" in event or "message" in event:
                apart = apart or bool(last)
                yield None
                continue
            text = event.get("data")
            if isinstance(text, str) and text:
                if self._first_text is None:
                    self._first_text = time.perf_counter()
                if apart and not (last[-1].isspace() or text[0].isspace()):
                    text = " " + text  # the model's next message: not glued to the last word
                apart, last = False, text
                self._events.put_nowait(TextDelta(text))
                yield text
        self._llm_done = True

    def _speak(self, text: str, *, aside: bool = False) -> None:
        seq, self._seq = self._seq, self._seq + 1
        self._events.put_nowait(Segment(seq, text))
        self.spoken.said(seq, text, aside=aside)
        self._outgoing.put_nowait((seq, text))

    def _aside(self, text: str) -> None:
        """Speak words of the service's own (a tool's filler): memory never counts them."""
        self._speak(text, aside=True)

    # --- sender: segments → TTS session ----------------------------------------------------

    async def _send(self) -> None:
        try:
            # outside the turn's context (the session outlives the turn), and shielded: if the
            # turn is cancelled meanwhile, ``_stop`` gives back what the borrow brings
            self._borrowing = detached(self._tts.borrow(self._retrying))
            try:
                self._session = await asyncio.shield(self._borrowing)
            except Exception as exc:  # TTSError, or a bug: either way the user is told
                self._tts_failed(exc)
            while (item := await self._outgoing.get()) is not None:
                seq, text = item
                self._segments.put_nowait((seq, await self._sent(seq, text)))
        finally:
            self._segments.put_nowait(None)

    async def _sent(self, seq: int, text: str) -> SegmentStream | None:
        """Send one segment; None (it ends without audio) once speech is down."""
        if self._session is None or self._tts_down:
            return None
        self._telemetry.segment_sent(seq, text)
        request = self.request
        try:
            return await self._session.speak(text, request.voice, request.speed, request.marks)
        except Exception as exc:
            self._tts_failed(exc)
            return None

    def _retrying(self, error: TTSError) -> None:
        """The session met a busy server or lost its connection and retries: say so once."""
        if self._retry_reported or self._tts_down:
            return
        self._retry_reported = True
        if isinstance(error, TTSBusy) or (
            isinstance(error, SegmentFailed) and error.code == ErrorCode.BUSY
        ):
            message = f"the speech server is at capacity ({error}); retrying, the text goes on"
            self._events.put_nowait(ErrorEvent("tts_busy", message))
        else:
            message = f"speech was interrupted ({type(error).__name__}: {error}); reconnecting"
            self._events.put_nowait(ErrorEvent("tts_reconnecting", message))

    def _tts_failed(self, exc: Exception) -> None:
        if not isinstance(exc, TTSError):  # not the network's doing: a bug to be seen
            log.error("speech failed unexpectedly", exc_info=exc)
        if not self._tts_down:
            self._tts_down = True
            message = f"speech is unavailable ({type(exc).__name__}: {exc}); text continues"
            self._events.put_nowait(ErrorEvent("tts_unavailable", message))

    # --- relay: audio in segment order → events ----------------------------------------

    async def _relay(self) -> None:
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
                        self.spoken.timed(seq, pcm)
                        continue
                    if self._first_audio is None:
                        self._first_audio = time.perf_counter()
                    samples += len(pcm) // 2
                    self.spoken.sounded(seq, len(pcm) // 2)
                    self._playback.sent(time.perf_counter(), len(pcm) // 2, self.id)
                    for event in audio_deltas(seq, pcm):
                        self._events.put_nowait(event)
            except SegmentFailed as exc:  # this segment only; the next ones still play
                failed = ErrorEvent("synthesis_failed", f"segment {seq}: {exc}")
                self._events.put_nowait(failed)
            except TTSError as exc:
                self._tts_failed(exc)
            self._audio_samples += samples
            self._telemetry.segment_ended(seq, stream)
            self.spoken.ended(seq)
            self._events.put_nowait(SegmentEnd.after(seq, samples))
        self._relay_done = True
