"""What an acceptance test connects to: a TTS WebSocket URL or a SageMaker endpoint."""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from tts_client.transports import Connection, WebSocketTransport
from tts_protocol import PING_PATH


class AcceptanceTarget(Protocol):
    """What is tested: how to open a connection (frames typed as sent) and where its /ping is."""

    @property
    def name(self) -> str: ...

    @property
    def ping_url(self) -> str | None:
        """None: not ours to reach (SageMaker pings its container itself)."""
        ...

    async def open(self) -> Connection: ...

    async def aclose(self) -> None: ...


def ping_url_for(url: str) -> str:
    """``ws://host:port/...`` → ``http://host:port/ping`` (wss → https)."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, PING_PATH, "", ""))


class WebSocketTarget:
    """A TTS WebSocket URL: the server itself, or a gateway in front of it."""

    def __init__(self, url: str, ping_url: str | None = None) -> None:
        self.name = url
        self.ping_url = ping_url or ping_url_for(url)

    async def open(self) -> Connection:
        transport = WebSocketTransport(self.name)
        return await transport.connect()

    async def aclose(self) -> None:
        """Nothing is shared between connections."""


class SageMakerTarget:
    """A SageMaker endpoint's bidirectional stream; needs Python >= 3.12 and the SDK."""

    ping_url: str | None = None

    def __init__(self, endpoint_name: str, region: str | None = None) -> None:
        from tts_client.transports.sagemaker import SageMakerTransport

        self._transport = SageMakerTransport(endpoint_name, region)  # TransportUnavailable
        self.name = self._transport.endpoint

    async def open(self) -> Connection:
        return await self._transport.connect()

    async def aclose(self) -> None:
        await self._transport.aclose()
