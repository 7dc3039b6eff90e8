"""One synthesis connection: the asyncio shell around ``ServerProtocol``.

The connection knows nothing about WebSockets: it is fed frame payloads (``str`` or ``bytes``)
and sends through two callables. The WebSocket route and the readiness warm-up both drive it,
so the health check exercises exactly the decode path that requests use. The rules of the wire
(decoding, duplicate ids, the queue bound, cancel, close, drain) are ``ServerProtocol``'s; the
shell adds what needs the engine or the server (the voice, the server-wide queue), one
synthesis worker, the send and idle timeouts, and metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tts_protocol import (
    DEFAULT_MAX_QUEUE,
    DEFAULT_MAX_TEXT_CHARS,
    Action,
    CancelCurrent,
    Cancelled,
    CancelQueued,
    End,
    Error,
    ErrorCode,
    Finish,
    Marks,
    ProtocolError,
    QueueSegment,
    Refuse,
    ServerMessage,
    ServerProtocol,
    Speak,
    Start,
    Word,
    encode,
    samples_ms,
    split_audio,
)
from tts_server.admission import Admission
from tts_server.engines.base import Engine, to_pcm16
from tts_server.engines.prepared import NORMALIZED, Prepared, Refusal
from tts_server.engines.window_trace import traced, tracing
from tts_server.engines.windows import listener_clock
from tts_server.metrics import TTSMetrics
from tts_server.timing import Timing

SendText = Callable[[str], Awaitable[None]]
SendBytes = Callable[[bytes], Awaitable[None]]

NORMAL_CLOSURE, POLICY_VIOLATION, SERVICE_RESTART = 1000, 1008, 1012  # WebSocket close codes


def frame_payload(message: Mapping[str, Any]) -> str | bytes:
    """The payload of an ASGI ``websocket.receive`` message, whichever frame type carried it."""
    data = message.get("bytes")
    if data is not None:
        return data
    text = message.get("text")
    return text if text is not None else b""


@dataclass(frozen=True, slots=True)
class Ending:
    """Why the server ends a connection: the WebSocket close code and ``"<code>: <why>"``."""

    code: int
    reason: str = ""


_RESTARTING = Ending(SERVICE_RESTART, f"{ErrorCode.SHUTTING_DOWN}: the server is restarting")


class ConnectionEnding(Exception):
    """Nothing more is sent: the connection is ending (``SynthesisConnection.ending`` says why)."""


@dataclass(frozen=True, slots=True)
class _Segment:
    """A queued ``speak``, prepared when it was queued."""

    speak: Speak
    prepared: Prepared
    queued_at: float = field(default_factory=time.perf_counter)

    @property
    def id(self) -> str:
        """The segment id."""
        return self.speak.id


class SynthesisConnection:
    """One connection's ``ServerProtocol``, driven by its frames and one synthesis worker.

    A segment is prepared once, when it is queued: a refusal (an unknown voice, unsupported
    text) is answered with its code right away, and the engine speaks the prepared segment.
    """

    def __init__(
        self,
        engine: Engine,
        send_text: SendText,
        send_bytes: SendBytes,
        *,
        max_queue: int = DEFAULT_MAX_QUEUE,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        admission: Admission | None = None,
        metrics: TTSMetrics | None = None,
        send_timeout_s: float | None = None,
        idle_timeout_s: float | None = None,
    ) -> None:
        self._engine = engine
        self._send_text = send_text
        self._send_bytes = send_bytes
        self._protocol = ServerProtocol(max_queue, max_text_chars)
        self._admission = admission or Admission.unlimited()  # the server-wide limits
        self._working = False  # counted as a session with work (segments queued or in synthesis)
        self._waiting: dict[str, _Segment] = {}  # the protocol's queue, prepared
        self._wakeup = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._current_task: asyncio.Task[None] | None = None
        self._metrics = metrics  # None: not counted (the warm-up)
        self._send_timeout_s = send_timeout_s  # a client that takes no frame this long is cut
        self._idle_timeout_s = idle_timeout_s  # no frame and nothing to do this long: closed
        self.ending: Ending | None = None  # set once the server decided to end the connection
        self._clock = listener_clock(engine.window_plan)  # the listener, where it paces windows
        self._stream = contextlib.ExitStack()  # the listener counted as a stream, while working
        self._reply: str | None = None  # the reply of the latest segment started

    @property
    def closing(self) -> bool:
        """True once a ``close`` message was received: no more frames are read."""
        return self._protocol.closing

    async def send(self, message: ServerMessage) -> None:
        """Send one control message."""
        await self._deliver(self._send_text, encode(message))
        if self._metrics is not None and isinstance(message, Error):
            self._metrics.error(message.code)

    async def _deliver(self, send: SendText | SendBytes, data: Any) -> None:
        """Send one frame; a client that takes none for ``send_timeout_s`` ends the connection."""
        async with self._send_lock:
            if self.ending is not None:
                raise ConnectionEnding(self.ending.reason)
            try:
                async with asyncio.timeout(self._send_timeout_s):
                    await send(data)
            except TimeoutError:
                why = f"the client took no frame for {self._send_timeout_s:g} s"
                self._end_for(ErrorCode.SEND_TIMEOUT, POLICY_VIOLATION, why)
                raise ConnectionEnding(why) from None

    def _end(self, ending: Ending) -> None:
        if self.ending is None:
            self.ending = ending
        self._wakeup.set()

    def _end_for(self, code: ErrorCode, close: int, why: str) -> None:
        """End with close reason ``"<code>: <why>"``, counted as an error with ``code``."""
        if self._metrics is not None and self.ending is None:
            self._metrics.error(code)
        self._end(Ending(close, f"{code}: {why}"))

    def drain(self) -> None:
        """The server is shutting down: refuse new segments, end (1012) once the queue is done."""
        self._protocol.drain()
        self._wakeup.set()

    async def feed(self, payload: str | bytes) -> None:
        """Handle one client frame. Errors are answered with typed ``error`` frames."""
        self._wakeup.set()  # any frame restarts the idle timer
        with contextlib.suppress(ConnectionEnding):  # the worker ends the connection
            for action in self._protocol.receive(payload):
                await self._act(action)

    async def _act(self, action: Action) -> None:
        if isinstance(action, QueueSegment):
            try:
                self._admit(action.speak)
            except ProtocolError as exc:
                await self.send(Error.of(exc))
        elif isinstance(action, Refuse):
            await self.send(action.error)
        elif isinstance(action, CancelQueued):
            self._unqueue(action.ids)
            for segment_id in action.ids:
                await self.send(Cancelled(id=segment_id))
        elif isinstance(action, CancelCurrent) and self._current_task is not None:
            self._current_task.cancel()  # `_report` sends its `cancelled`
            if self._clock is not None:
                self._clock.reset()  # the listener drops what it had

    def _admit(self, speak: Speak) -> None:
        """Admit a segment the protocol passed: the engine must prepare it, the server have room
        (a session with work free, if this connection had none; a place in the queues)."""
        normalization = NORMALIZED if speak.normalize else None
        try:
            prepared = self._engine.prepare(speak.text, speak.voice, speak.speed, normalization)
        except Refusal as exc:
            raise ProtocolError(exc.code, exc.message, speak.id) from exc
        if not self._working:
            if not self._admission.open_session():
                raise ProtocolError(ErrorCode.BUSY, self._admission.sessions_full, speak.id)
            self._working = True
            if self._clock is not None:  # one stream from its first segment to its queue empty
                self._stream.enter_context(self._engine.decode_rate.streaming(self._clock))
        try:
            self._admission.queue_segment(speak.id)
        except ProtocolError:
            self._rest()
            raise
        self._protocol.accept(speak)
        self._waiting[speak.id] = _Segment(speak, prepared)
        self._wakeup.set()

    def _rest(self) -> None:
        """With nothing queued and nothing in synthesis, stop counting as a session with work."""
        if self._working and not self._waiting and self._current_task is None:
            self._working = False
            self._admission.close_session()
            self._stream.close()

    def _unqueue(self, ids: tuple[str, ...]) -> None:
        """Forget segments that left the protocol's queue without synthesis."""
        self._admission.leave_queue(len(ids))
        for segment_id in ids:
            del self._waiting[segment_id]
        self._rest()

    async def run(self) -> None:
        """Synthesize queued segments strictly in arrival order until the connection ends."""
        while self.ending is None:
            step = self._protocol.next_step()
            if isinstance(step, Finish):
                return self._end(_RESTARTING if step.draining else Ending(NORMAL_CLOSURE))
            if step is None:
                await self._idle()
                continue
            segment = self._waiting.pop(step.id)
            self._admission.start_segment()
            task = self._current_task = asyncio.create_task(self._synthesize(segment))
            try:
                await asyncio.wait([task])
                await self._report(segment.id, task)
            except ConnectionEnding:
                return
            finally:
                task.cancel()
                self._admission.end_segment()
                self._protocol.segment_ended()
                self._current_task = None
                self._rest()

    async def _idle(self) -> None:
        """Wait for a frame; none for ``idle_timeout_s`` ends the connection."""
        self._wakeup.clear()
        try:
            async with asyncio.timeout(self._idle_timeout_s):
                await self._wakeup.wait()
        except TimeoutError:
            idle = f"no frame for {self._idle_timeout_s:g} s"
            self._end_for(ErrorCode.IDLE_TIMEOUT, NORMAL_CLOSURE, idle)

    async def _report(self, segment_id: str, task: asyncio.Task[None]) -> None:
        if self._metrics is not None:
            self._metrics.ended(self._engine.name, _outcome(task))
        if task.cancelled():
            await self.send(Cancelled(id=segment_id))
        elif isinstance(exc := task.exception(), ConnectionEnding):
            return
        elif exc is not None:
            await self.send(
                Error(id=segment_id, code=ErrorCode.SYNTHESIS_FAILED, message=f"{exc!r}")
            )

    async def _synthesize(self, segment: _Segment) -> None:
        """Stream one segment as it was prepared when queued, telling the listener's clock of
        each chunk sent (across one reply's segments: a later one's windows start large if
        audio is buffered; a segment of another reply starts a new playback)."""
        speak = segment.speak
        if speak.reply is not None and speak.reply != self._reply and self._clock is not None:
            self._clock.reset()
        self._reply = speak.reply
        timing = Timing(queued=segment.queued_at)
        await self.send(Start(id=speak.id))
        synthesis = self._engine.synthesize(segment.prepared, self._clock)
        async with contextlib.aclosing(synthesis) as chunks:  # a cancel ends its stream at once
            async for chunk in timing.measured(chunks):
                offset = timing.samples - chunk.audio.size  # its first sample in the segment
                if speak.marks and chunk.words:  # each piece's words, before its audio
                    words = [
                        Word(
                            w.text,
                            samples_ms(offset + w.start),
                            samples_ms(offset + w.end),
                            w.spoken,
                        )
                        for w in chunk.words
                    ]
                    await self.send(Marks(id=speak.id, words=tuple(words)))
                for frame in split_audio(to_pcm16(chunk.audio)):
                    await self._deliver(self._send_bytes, frame)
                if self._clock is not None:
                    seconds = chunk.audio.size / self._engine.sample_rate
                    waited = self._clock.sent(seconds)
                    if waited > 0 and tracing():  # the pace's model of the listener ran dry
                        traced("dry", self._clock, waited_s=waited, chunk_s=seconds)
        if self._metrics is not None:
            self._metrics.synthesized(self._engine.name, timing)
        await self.send(End(id=speak.id, samples=timing.samples, synth_ms=timing.synthesis_ms))

    async def abort(self) -> None:
        """The peer is gone: drop the queue and stop the segment in progress."""
        self._unqueue(self._protocol.abort())
        self._wakeup.set()
        if self._current_task:
            self._current_task.cancel()


def _outcome(task: asyncio.Task[None]) -> str:
    """How a segment's synthesis task ended: ``done``, ``cancelled`` or ``failed``."""
    if task.cancelled():
        return "cancelled"
    return "failed" if task.exception() is not None else "done"
