"""The SageMaker-style gateway: client frames become BINARY, big server frames are fragmented."""

from __future__ import annotations

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection

from tests.tts_client.conftest import raw_server
from tts_client.testing.gateway import Gateway


async def test_gateway_rewrites_client_frames_and_fragments_server_frames() -> None:
    received: list[str | bytes] = []

    async def upstream(websocket: ServerConnection) -> None:
        async for message in websocket:
            received.append(message)
            await websocket.send("x" * 10_000)
            await websocket.send(b"\x01" * 10_000)
            await websocket.close(1000)

    async with (
        raw_server(upstream) as url,
        Gateway(url, fragment_bytes=1000) as gateway,
        connect(gateway.url) as client,
    ):
        await client.send('{"type":"close"}')
        text = [fragment async for fragment in client.recv_streaming()]
        audio = await client.recv()
        assert [f for f in text if f] == ["x" * 1000] * 10  # one message, many frames
        assert audio == b"\x01" * 10_000
        await client.wait_closed()
        assert client.close_code == 1000
    assert received == [b'{"type":"close"}']
    assert gateway.connections == 1
