"""``TTSSession`` against a server at capacity: ``busy`` is retried with backoff, not fatal.

The server runs a ``FakeEngine`` whose engine thread the test holds (``gate``), so which
segments the server refuses is decided by its limits, not by timing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from tests.conftest import start_server
from tests.tts_client.conftest import FAST
from tts_client import SegmentFailed, SegmentStatus, TTSBusy, TTSSession, WebSocketTransport
from tts_protocol import ErrorCode
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    event.set()
    yield event
    event.set()


@pytest.fixture
def server(gate: threading.Event) -> Iterator[ServerThread]:
    server = start_server(FakeEngine(gate), max_sessions=1, max_queued=1)
    yield server
    gate.set()
    server.stop()


async def counts(server: ServerThread) -> dict[str, int]:
    async with httpx.AsyncClient() as client:
        return (await client.get(f"{server.http_url}/ping")).json()  # type: ignore[no-any-return]


async def until(server: ServerThread, key: str, value: int) -> None:
    async with asyncio.timeout(10):
        while (await counts(server))[key] < value:
            await asyncio.sleep(0.02)


async def test_a_refused_connection_is_retried_until_a_place_frees(server: ServerThread) -> None:
    transport = WebSocketTransport(server.ws_url)
    first = await TTSSession.connect(transport, FAST)
    second = asyncio.create_task(TTSSession.connect(transport, FAST))
    await until(server, "refused_sessions", 2)  # refused, backed off, refused again
    assert not second.done()
    await first.aclose()
    session = await asyncio.wait_for(second, 10)
    try:
        assert session.connections == 1
        assert (await (await session.speak("Admitted at last.")).wait()) is SegmentStatus.DONE
    finally:
        await session.aclose()


async def test_a_server_busy_for_the_whole_window_fails_the_connect_as_busy(
    server: ServerThread,
) -> None:
    transport = WebSocketTransport(server.ws_url)
    async with TTSSession(transport, FAST):
        with pytest.raises(TTSBusy, match="busy"):
            await TTSSession.connect(transport, replace(FAST, reconnect_window=0.3))


async def test_segments_refused_as_busy_are_sent_again_and_all_play_in_order(
    server: ServerThread, gate: threading.Event
) -> None:
    gate.clear()  # the first segment holds the engine thread; the queue has room for one
    async with TTSSession(WebSocketTransport(server.ws_url), FAST) as session:
        segments = [await session.speak(text) for text in ("One.", "Two.", "Three.", "Four.")]
        await until(server, "refused_segments", 1)
        gate.set()
        audio = [await segment.read() for segment in segments]
    assert [s.status for s in segments] == [SegmentStatus.DONE] * 4
    assert [len(pcm) for pcm in audio] == [2 * s.end.samples for s in segments if s.end]
    assert all(audio)
    assert (await counts(server))["refused_segments"] >= 1


async def test_a_segment_refused_for_the_whole_window_fails_with_busy(
    server: ServerThread, gate: threading.Event
) -> None:
    gate.clear()
    config = replace(FAST, reconnect_window=0.4, backoff_max=0.1)
    async with TTSSession(WebSocketTransport(server.ws_url), config) as session:
        held = await session.speak("One.")
        await until(server, "in_flight", 1)  # the engine thread holds it: the queue is empty
        queued, refused = await session.speak("Two."), await session.speak("Three.")
        assert await refused.wait() is SegmentStatus.FAILED
        assert isinstance(refused.error, SegmentFailed) and refused.error.code is ErrorCode.BUSY
        assert refused.error.segment_id == refused.id
        assert "queue" in refused.error.message  # the server's own words
        gate.set()
        assert [await s.wait() for s in (held, queued)] == [SegmentStatus.DONE] * 2
        assert not session.closed  # one refused segment does not end the session
