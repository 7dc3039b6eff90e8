"""The WebSocket transport: frame types both ways, and typed errors for every way it fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from websockets.asyncio.server import ServerConnection

from tests.tts_client.conftest import raw_server
from tts_client import TTSConnectionError, TTSTimeout, WebSocketTransport


async def echo(websocket: ServerConnection) -> None:
    """Sends every message back in a frame of the same type."""
    async for message in websocket:
        await websocket.send(message)


async def test_str_travels_as_text_and_bytes_as_binary() -> None:
    async with raw_server(echo) as url:
        conn = await WebSocketTransport(url).connect()
        await conn.send('{"type":"close"}')
        await conn.send(b"\x00\x01")
        assert await conn.recv() == '{"type":"close"}'
        assert await conn.recv() == b"\x00\x01"
        await conn.aclose()


async def test_a_closed_connection_is_a_connection_error() -> None:
    async def close_at_once(websocket: ServerConnection) -> None:
        await websocket.close()

    async with raw_server(close_at_once) as url:
        conn = await WebSocketTransport(url).connect()
        with pytest.raises(TTSConnectionError, match="connection closed"):
            await conn.recv()
        with pytest.raises(TTSConnectionError):
            await conn.send("{}")


async def test_nothing_listening_is_a_connection_error() -> None:
    with pytest.raises(TTSConnectionError, match="cannot connect"):
        await WebSocketTransport("ws://127.0.0.1:9/ws", open_timeout=2).connect()


@pytest.fixture
async def silent_tcp() -> AsyncIterator[str]:
    """Accepts TCP connections and never answers the WebSocket handshake."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"ws://127.0.0.1:{port}/ws"
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_a_handshake_that_never_comes_is_a_timeout(silent_tcp: str) -> None:
    transport = WebSocketTransport(silent_tcp, open_timeout=0.3)
    with pytest.raises(TTSTimeout, match=r"no WebSocket handshake in 0\.3 s"):
        await transport.connect()
    assert transport.endpoint == silent_tcp
