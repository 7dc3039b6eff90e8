"""The fault proxy over raw TCP: it forwards both ways, and each fault does what it says."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tts_client.testing.faultproxy import FaultProxy

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Upstream:
    """A TCP server that keeps each accepted connection for the test to drive."""

    def __init__(self) -> None:
        self.accepted: asyncio.Queue[Streams] = asyncio.Queue()
        self.server: asyncio.Server | None = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self.accepted.put((reader, writer))

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])


@pytest_asyncio.fixture(loop_scope="function")
async def link() -> AsyncIterator[tuple[FaultProxy, Upstream]]:
    upstream = Upstream()
    port = await upstream.start()
    async with FaultProxy("127.0.0.1", port) as proxy:
        yield proxy, upstream
    assert upstream.server is not None
    upstream.server.close()


async def connect(proxy: FaultProxy, upstream: Upstream) -> tuple[Streams, Streams]:
    """A client through the proxy, and the server side of its connection (keep both writers:
    a writer that is garbage-collected closes its socket)."""
    client = await asyncio.open_connection("127.0.0.1", proxy.port)
    server = await asyncio.wait_for(upstream.accepted.get(), 5)
    return client, server


async def test_bytes_flow_both_ways_and_eof_passes_through(
    link: tuple[FaultProxy, Upstream],
) -> None:
    proxy, upstream = link
    (c_read, c_write), (s_read, s_write) = await connect(proxy, upstream)
    c_write.write(b"ping")
    assert await s_read.readexactly(4) == b"ping"
    s_write.write(b"pong" * 10_000)
    assert await c_read.readexactly(40_000) == b"pong" * 10_000
    c_write.write_eof()
    assert await s_read.read() == b""  # a half-close from the client reaches the server
    s_write.write(b"still here")
    assert await c_read.readexactly(10) == b"still here"
    assert proxy.connections == proxy.live == 1


async def test_drop_closes_both_sides(link: tuple[FaultProxy, Upstream]) -> None:
    proxy, upstream = link
    client, server = await connect(proxy, upstream)
    assert proxy.drop() == 1
    assert await client[0].read() == b"" and await server[0].read() == b""


async def test_reset_aborts_both_sides_with_an_rst(link: tuple[FaultProxy, Upstream]) -> None:
    proxy, upstream = link
    client, server = await connect(proxy, upstream)
    assert proxy.reset() == 1
    for reader, _ in (client, server):
        with pytest.raises(ConnectionResetError):
            await reader.read()


@pytest.mark.parametrize("toward", ["client", "server"])
async def test_half_close_ends_one_direction_only(
    link: tuple[FaultProxy, Upstream], toward: str
) -> None:
    proxy, upstream = link
    client, server = await connect(proxy, upstream)
    closed, other = (client, server) if toward == "client" else (server, client)
    proxy.half_close(toward)  # type: ignore[arg-type]
    assert await closed[0].read() == b""
    closed[1].write(b"the other way still works")
    assert await other[0].readexactly(25) == b"the other way still works"


async def test_a_stall_holds_every_byte_then_delivers_them(
    link: tuple[FaultProxy, Upstream],
) -> None:
    proxy, upstream = link
    (c_read, c_write), (s_read, s_write) = await connect(proxy, upstream)
    proxy.stall(0.3)
    started = time.monotonic()
    s_write.write(b"late")
    c_write.write(b"also late")
    assert await c_read.readexactly(4) == b"late"
    assert await s_read.readexactly(9) == b"also late"
    assert time.monotonic() - started >= 0.25


async def test_throttle_caps_the_rate(link: tuple[FaultProxy, Upstream]) -> None:
    proxy, upstream = link
    client, server = await connect(proxy, upstream)
    proxy.throttle(100_000)
    started = time.monotonic()
    server[1].write(b"x" * 30_000)
    assert await client[0].readexactly(30_000) == b"x" * 30_000
    assert time.monotonic() - started >= 0.25  # 30 KB at 100 KB/s: 0.3 s


async def test_hold_lets_through_exactly_the_budget_until_released(
    link: tuple[FaultProxy, Upstream],
) -> None:
    proxy, upstream = link
    (c_read, c_write), (s_read, s_write) = await connect(proxy, upstream)
    proxy.hold(after_bytes=1000)
    s_write.write(b"y" * 5000)
    assert await c_read.readexactly(1000) == b"y" * 1000
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(c_read.readexactly(1), 0.2)
    c_write.write(b"upstream flows")  # a hold is toward the client only
    assert await s_read.readexactly(14) == b"upstream flows"
    proxy.release()
    assert await c_read.readexactly(4000) == b"y" * 4000


async def test_refused_connections_are_reset_and_never_reach_the_server(
    link: tuple[FaultProxy, Upstream],
) -> None:
    proxy, upstream = link
    proxy.refuse()
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    with pytest.raises(ConnectionResetError):
        await reader.read()
    writer.close()
    assert upstream.accepted.empty() and proxy.connections == 1
    proxy.refuse(False)
    await connect(proxy, upstream)
