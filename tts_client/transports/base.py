"""The transport interface: moves protocol frames, knows nothing of segments or sessions.

A frame is ``str`` for a control message (a WebSocket text frame, a SageMaker ``UTF8`` part)
and ``bytes`` for audio (a binary frame, a ``BINARY`` part). The session tells them apart by
that type alone, never by looking at the bytes.
"""

from __future__ import annotations

from typing import Protocol

Frame = str | bytes
DEFAULT_MAX_FRAME_BYTES = 1 << 20  # a larger frame from the server ends the connection


class Connection(Protocol):
    """One open, ordered, bidirectional stream of frames."""

    async def send(self, frame: Frame) -> None:
        """Send one frame, typed by its Python type (the session sends only ``str``).

        Raises ``TTSConnectionError`` if the stream is gone.
        """
        ...

    async def recv(self) -> Frame:
        """The next whole frame. Raises ``TTSConnectionError`` when the stream ends."""
        ...

    async def aclose(self) -> None:
        """Close the stream; never raises."""
        ...


class Transport(Protocol):
    """Opens connections to one endpoint; may be connected any number of times."""

    @property
    def endpoint(self) -> str:
        """A stable name for the endpoint (a pool key, for logs)."""
        ...

    @property
    def max_connection_age(self) -> float | None:
        """Seconds after which a connection is rolled over between segments; None: never."""
        ...

    async def connect(self) -> Connection:
        """Open a connection. Raises ``TTSConnectionError`` (or ``TTSTimeout``)."""
        ...

    async def aclose(self) -> None:
        """Release shared resources (an HTTP client); ``connect`` may be called again later.

        Sessions never call it: a transport belongs to its creator and may serve many sessions.
        """
        ...
