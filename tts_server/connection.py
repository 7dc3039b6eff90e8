"""One synthesis connection: decode frames, queue segments, stream audio back in order.

The connection knows nothing about WebSockets: it is fed frame payloads (``str`` or ``bytes``)
and sends through two callables. The WebSocket route and the readiness warm-up both drive it,
so the health check exercises exactly the decode path that requests use.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tts_protocol import (
    DEFAULT_MAX_TEXT_CHARS,
    Cancel,
    Cancelled,
    Close,
    End,
    Error,
    ErrorCode,
    ProtocolError,
    ServerMessage,
    Speak,
    Start,
    decode_client,
    encode,
    split_audio,
)
from tts_server.admission import Admission
from tts_server.engines.base import Engine, UnknownVoice, to_pcm16

SendText = Callable[[str], Awaitable[None]]
SendBytes = Callable[[bytes], Awaitable[None]]

DEFAULT_MAX_QUEUE = 64


def frame_payload(message: Mapping[str, Any]) -> str | bytes:
    """The payload of an ASGI ``websocket.receive`` message, whichever frame type carried it."""
    data = message.get("bytes")
    if data is not None:
        return data
    text = message.get("text")
    return text if text is not None else b""


@dataclass(frozen=True, slots=True)
class _Segment:
    """A queued ``speak`` and the voice it resolved to when it was queued."""

    speak: Speak
    voice: str

    @property
    def id(self) -> str:
        """The segment id."""
        return self.speak.id


class SynthesisConnection:
    """Per-connection state: a bounded FIFO of segments and one synthesis worker.

    A segment's voice is resolved once, when it is queued: an unknown voice is answered with
    ``unknown_voice`` right away, and the queue holds the resolved name the engine speaks with.
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
    ) -> None:
        self._engine = engine
        self._send_text = send_text
        self._send_bytes = send_bytes
        self._max_queue = max_queue
        self._max_text_chars = max_text_chars
        self._admission = admission or Admission.unlimited()  # the server-wide queue limit
        self._queue: deque[_Segment] = deque()
        self._wakeup = asyncio.Event()
        self._send_lock = asyncio.Lock()
        self._current: _Segment | None = None
        self._current_task: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def closing(self) -> bool:
        """True once a ``close`` message was received: no more frames are read."""
        return self._closing

    async def send(self, message: ServerMessage) -> None:
        """Send one control message."""
        async with self._send_lock:
            await self._send_text(encode(message))

    async def feed(self, payload: str | bytes) -> None:
        """Handle one client frame. Errors are answered with typed ``error`` frames."""
        try:
            message = decode_client(payload, max_text_chars=self._max_text_chars)
            if isinstance(message, Speak):
                self._enqueue(message)
            elif isinstance(message, Cancel):
                await self._cancel(message.id)
            elif isinstance(message, Close):
                self._closing = True
                self._wakeup.set()
        except ProtocolError as exc:
            await self.send(Error.of(exc))

    def _enqueue(self, speak: Speak) -> None:
        if self._closing:
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "connection is closing", speak.id)
        in_flight = (self._current.id,) if self._current else ()
        if speak.id in in_flight or any(s.id == speak.id for s in self._queue):
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "duplicate segment id", speak.id)
        if len(self._queue) >= self._max_queue:
            raise ProtocolError(
                ErrorCode.QUEUE_FULL, f"{self._max_queue} segments are already queued", speak.id
            )
        try:
            voice = self._engine.resolve_voice(speak.voice)
        except UnknownVoice as exc:
            raise ProtocolError(ErrorCode.UNKNOWN_VOICE, str(exc), speak.id) from exc
        self._admission.queue_segment(speak.id)
        self._queue.append(_Segment(speak, voice))
        self._wakeup.set()

    async def _cancel(self, segment_id: str | None) -> None:
        doomed = [s for s in self._queue if segment_id is None or s.id == segment_id]
        for segment in doomed:
            self._queue.remove(segment)
            self._admission.leave_queue()
            await self.send(Cancelled(id=segment.id))
        current = self._current
        if current and (segment_id is None or current.id == segment_id) and self._current_task:
            self._current_task.cancel()

    async def run(self) -> None:
        """Synthesize queued segments strictly in arrival order until closed and drained."""
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            segment = self._queue.popleft()
            self._admission.start_segment()
            self._current = segment
            self._current_task = asyncio.create_task(self._synthesize(segment))
            try:
                await asyncio.wait([self._current_task])
                await self._report(segment.id, self._current_task)
            finally:
                self._current_task.cancel()
                self._admission.end_segment()
                self._current = None
                self._current_task = None

    async def _report(self, segment_id: str, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            await self.send(Cancelled(id=segment_id))
        elif (exc := task.exception()) is not None:
            await self.send(
                Error(id=segment_id, code=ErrorCode.SYNTHESIS_FAILED, message=f"{exc!r}")
            )

    async def _synthesize(self, segment: _Segment) -> None:
        """Stream one segment in the voice it was resolved to when queued."""
        speak = segment.speak
        started = time.perf_counter()
        samples = 0
        await self.send(Start(id=speak.id))
        chunks = self._engine.synthesize_resolved(speak.text, segment.voice, speak.speed or 1.0)
        async for chunk in chunks:
            samples += chunk.size
            for frame in split_audio(to_pcm16(chunk)):
                async with self._send_lock:
                    await self._send_bytes(frame)
        synth_ms = round((time.perf_counter() - started) * 1000, 1)
        await self.send(End(id=speak.id, samples=samples, synth_ms=synth_ms))

    async def abort(self) -> None:
        """The peer is gone: drop the queue and stop the segment in progress."""
        self._admission.leave_queue(len(self._queue))
        self._queue.clear()
        self._closing = True
        self._wakeup.set()
        if self._current_task:
            self._current_task.cancel()
