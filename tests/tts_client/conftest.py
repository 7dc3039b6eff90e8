"""Client test fixtures: every integration test runs direct and through the SageMaker gateway."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
import pytest_asyncio
from websockets.asyncio.server import ServerConnection, serve

from tts_client.config import SessionConfig
from tts_client.testing.gateway import Gateway
from tts_server.engines import Engine
from tts_server.engines.base import to_pcm16
from tts_server.testing.server_thread import ServerThread

FAST = SessionConfig(
    connect_timeout=5.0,
    reply_timeout=5.0,
    reconnect_window=15.0,
    backoff_initial=0.05,
    backoff_max=0.5,
    close_timeout=1.0,
)


@contextlib.asynccontextmanager
async def route(via: str, url: str) -> AsyncIterator[str]:
    """``url`` itself, or a gateway in front of it."""
    if via == "direct":
        yield url
        return
    async with Gateway(url, fragment_bytes=4096) as gateway:
        yield gateway.url


@contextlib.asynccontextmanager
async def raw_server(handler: Callable[[ServerConnection], Awaitable[None]]) -> AsyncIterator[str]:
    """A bare ``websockets`` server on loopback running ``handler`` per connection."""
    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/ws"


@pytest.fixture(params=["direct", "gateway"])
def via(request: pytest.FixtureRequest) -> str:
    """How the client reaches the server."""
    return request.param


@pytest_asyncio.fixture(loop_scope="function")
async def ws_url(via: str, tts_server: ServerThread) -> AsyncIterator[str]:
    """The shared real server's WebSocket URL, direct or through a gateway."""
    async with route(via, tts_server.ws_url) as url:
        yield url


async def reference_pcm(engine: Engine, text: str) -> bytes:
    """What the server sends for ``text`` with the default voice (the engine is deterministic)."""
    chunks = engine.synthesize(engine.prepare(text))
    return b"".join([to_pcm16(chunk.audio) async for chunk in chunks])


@pytest.fixture(autouse=True)
def no_event_loop_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fail a test whose event loop logged an error (a broken callback, a lost task exception)."""
    yield
    errors = [r.getMessage() for r in caplog.get_records("call") if r.name == "asyncio"]
    assert not errors, f"the event loop logged: {errors}"
