"""One connection under test: ``ClientProtocol`` checks every frame, events are recorded."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable

from tts_client.transports import Connection
from tts_protocol import (
    Audio,
    ClientEvent,
    ClientProtocol,
    ConnectionFailed,
    Ready,
    SegmentCancelled,
    SegmentEnded,
    SegmentErrorReported,
    SegmentStarted,
    ServerErrorReported,
    Speak,
    VoiceMix,
    encode,
)


class Failed(Exception):
    """A check did not pass; the message says why."""


Terminal = SegmentEnded | SegmentCancelled | SegmentErrorReported


class ConnectionUnderTest:
    """One connection under test: frames go through ``ClientProtocol``, events are recorded."""

    def __init__(self, conn: Connection, protocol: ClientProtocol, timeout_s: float) -> None:
        self.conn = conn
        self.protocol = protocol
        if protocol.ready is None:
            raise ValueError("the protocol has not seen 'ready' yet")
        self.ready: Ready = protocol.ready
        self.timeout_s = timeout_s
        self.starts: list[str] = []
        self.terminals: dict[str, Terminal] = {}
        self.terminal_at: dict[str, float] = {}
        self.audio: dict[str, int] = defaultdict(int)
        self.audio_at: dict[str, float] = {}
        self.errors: list[ServerErrorReported] = []  # errors no segment owns

    async def speak(
        self, id: str, text: str, voice: VoiceMix | None = None, binary: bool = False
    ) -> float:
        """Send a ``speak`` in a binary or text frame; returns when it was sent."""
        self.protocol.speak(Speak(id=id, text=text, voice=voice))
        sent = time.perf_counter()
        for speak in self.protocol.take_speaks():
            frame = encode(speak)
            await self.conn.send(frame.encode() if binary else frame)
        return sent

    async def until_ended(self, *ids: str) -> ServerErrorReported | None:
        """Read until each of ``ids`` has its terminal reply; an id-less error stops it early."""
        before = len(self.errors)
        await self.until(lambda: all(i in self.terminals for i in ids) or len(self.errors) > before)
        return self.errors[before] if len(self.errors) > before else None

    async def until(self, done: Callable[[], bool]) -> None:
        """Read frames until ``done()``; ``Failed`` after ``timeout_s`` without it."""
        try:
            async with asyncio.timeout(self.timeout_s):
                while not done():
                    self._record(self.protocol.receive(await self.conn.recv()))
        except TimeoutError:
            raise Failed(f"no reply within {self.timeout_s:g} s") from None

    def _record(self, events: list[ClientEvent]) -> None:
        now = time.perf_counter()
        for event in events:
            if isinstance(event, Audio):
                self.audio[event.segment_id] += len(event.pcm)
                self.audio_at.setdefault(event.segment_id, now)
            elif isinstance(event, SegmentStarted):
                self.starts.append(event.segment_id)
            elif isinstance(event, ServerErrorReported):
                self.errors.append(event)
            elif isinstance(event, Terminal):
                self.terminals[event.segment_id] = event
                self.terminal_at[event.segment_id] = now
            elif isinstance(event, ConnectionFailed):
                raise Broken(event.reason)


class Broken(Failed):
    """The server broke the protocol: the connection cannot be used any more."""


def describe(event: Terminal | ServerErrorReported | None) -> str:
    """A reply as a report line shows it."""
    if isinstance(event, SegmentErrorReported | ServerErrorReported):
        return f"error {event.code}: {event.message}"
    return "no reply" if event is None else f"'{type(event).__name__}'"
