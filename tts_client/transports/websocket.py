"""The WebSocket transport (local/dev and tests): one ``websockets`` asyncio client connection."""

from __future__ import annotations

from dataclasses import dataclass

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from tts_client.errors import TTSConnectionError, TTSTimeout
from tts_client.transports.base import DEFAULT_MAX_FRAME_BYTES, Frame


class WebSocketConnection:
    """A ``Connection`` over an open WebSocket: text frames are control, binary are audio."""

    def __init__(self, websocket: ClientConnection) -> None:
        self._websocket = websocket

    async def send(self, frame: Frame) -> None:
        """Send ``str`` as a text frame, ``bytes`` as a binary one."""
        try:
            await self._websocket.send(frame)
        except ConnectionClosed as exc:
            raise TTSConnectionError(f"connection closed: {exc}") from exc

    async def recv(self) -> Frame:
        """The next message: ``str`` from a text frame, ``bytes`` from a binary one."""
        try:
            return await self._websocket.recv()
        except ConnectionClosed as exc:
            raise TTSConnectionError(f"connection closed: {exc}") from exc

    async def aclose(self) -> None:
        """Close with code 1000 (bounded by the connection's close timeout)."""
        await self._websocket.close()


@dataclass(frozen=True, slots=True)
class WebSocketTransport:
    """Connects to ``url`` (``ws://host:port/invocations-bidirectional-stream`` or ``/ws``)."""

    url: str
    open_timeout: float = 10.0
    ping_interval: float | None = 20.0  # keep-alive; a peer that stops answering is dropped
    ping_timeout: float | None = 20.0
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    close_timeout: float = 2.0
    max_connection_age: float | None = None

    @property
    def endpoint(self) -> str:
        """The URL."""
        return self.url

    async def connect(self) -> WebSocketConnection:
        """Open the WebSocket (no compression: PCM does not deflate, control frames are tiny)."""
        try:
            websocket = await connect(
                self.url,
                open_timeout=self.open_timeout,
                ping_interval=self.ping_interval,
                ping_timeout=self.ping_timeout,
                max_size=self.max_frame_bytes,
                close_timeout=self.close_timeout,
                compression=None,
                proxy=None,
            )
        except TimeoutError as exc:
            raise TTSTimeout(
                f"{self.url}: no WebSocket handshake in {self.open_timeout} s"
            ) from exc
        except (OSError, InvalidHandshake, InvalidURI, ConnectionClosed) as exc:
            raise TTSConnectionError(f"{self.url}: cannot connect: {exc}") from exc
        return WebSocketConnection(websocket)

    async def aclose(self) -> None:
        """Nothing is shared between connections."""
