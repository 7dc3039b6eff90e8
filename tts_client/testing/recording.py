"""``RecordingTransport``: wraps a transport, records control frames, counts connects, cuts one.

For tests of the client's resilience: it sees exactly what the session sent and received, per
connection, and can drop the first connection after a number of audio frames, as a network
failure would.
"""

from __future__ import annotations

from collections import Counter

from tts_client.errors import TTSConnectionError
from tts_client.transports.base import Connection, Frame, Transport
from tts_protocol import Cancelled, End, Error, decode_server


class RecordingTransport:
    """Wraps ``inner``; the first connection is cut after ``drop_after_audio`` audio frames."""

    def __init__(self, inner: Transport, drop_after_audio: int | None = None) -> None:
        self.inner = inner
        self.control: list[str] = []  # every control frame received, in order
        self.sent: list[list[str]] = []  # the control frames sent, one list per connection
        self.connects = 0
        self._drop_after_audio = drop_after_audio

    @property
    def endpoint(self) -> str:
        """The wrapped transport's endpoint."""
        return self.inner.endpoint

    @property
    def max_connection_age(self) -> float | None:
        """The wrapped transport's rollover age."""
        return self.inner.max_connection_age

    async def connect(self) -> Connection:
        """Connect through ``inner``; only the first connection may be cut."""
        conn = await self.inner.connect()
        self.connects += 1
        drop = self._drop_after_audio if self.connects == 1 else None
        self.sent.append([])
        return RecordedConnection(conn, self.control, self.sent[-1], drop)

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self.inner.aclose()

    def terminals(self) -> Counter[str]:
        """How many terminal replies (end, cancelled, error) each segment id got."""
        counts: Counter[str] = Counter()
        for frame in self.control:
            message = decode_server(frame)
            if isinstance(message, End | Cancelled | Error) and message.id is not None:
                counts[message.id] += 1
        return counts

    def types(self, segment_id: str) -> list[str]:
        """The control message types received for one segment."""
        return [
            m.type for m in map(decode_server, self.control) if getattr(m, "id", None) == segment_id
        ]


class RecordedConnection:
    """One connection: records control frames both ways; may drop after some audio."""

    def __init__(
        self, inner: Connection, control: list[str], sent: list[str], drop_after_audio: int | None
    ) -> None:
        self._inner = inner
        self._control = control
        self._sent = sent
        self._drop_after_audio = drop_after_audio
        self._audio_frames = 0

    async def send(self, frame: Frame) -> None:
        """Send through the wrapped connection; a control frame is recorded."""
        if isinstance(frame, str):
            self._sent.append(frame)
        await self._inner.send(frame)

    async def recv(self) -> Frame:
        """The next frame, recorded; ``TTSConnectionError`` once the drop point is reached."""
        if self._drop_after_audio is not None and self._audio_frames >= self._drop_after_audio:
            await self._inner.aclose()
            raise TTSConnectionError("dropped by the test")
        frame = await self._inner.recv()
        if isinstance(frame, str):
            self._control.append(frame)
        else:
            self._audio_frames += 1
        return frame

    async def aclose(self) -> None:
        """Close the wrapped connection."""
        await self._inner.aclose()
