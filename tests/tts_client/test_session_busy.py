"""``TTSSession`` against a server at capacity: ``busy`` is retried with backoff, not fatal.

The server runs a ``FakeEngine`` whose engine thread the test holds (``gate``), so which
segments the server refuses is decided by its limits, not by timing.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest
from websockets.asyncio.server import ServerConnection

import tts_client.parts.keeper
from tests.conftest import start_server
from tests.tts_client.conftest import FAST, raw_server
from tts_client import SegmentFailed, SegmentStatus, TTSBusy, TTSSession, WebSocketTransport
from tts_protocol import Error, ErrorCode, Ready, encode
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
    server = start_server(FakeEngine(gate), max_sessions=1, max_queued=1, max_connections=1)
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
    await until(server, "refused_connections", 2)  # refused, backed off, refused again
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
            await TTSSession.connect(transport, replace(FAST, busy_window=0.3))


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
    config = replace(FAST, busy_window=0.4, backoff_max=0.1)
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


class RecordedSleeps:
    """Stands in for ``asyncio`` inside ``tts_client.parts.keeper``: records each sleep's delay."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __getattr__(self, name: str) -> object:
        return getattr(asyncio, name)

    async def sleep(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(delay)


async def test_start_backs_off_with_growing_jittered_delays_while_the_server_is_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through ``start()``: five busy refusals, then ``ready``. Each wait doubles from
    ``backoff_initial`` up to ``backoff_max``, times a jitter factor drawn for that wait."""
    refusals = 5
    connections = 0

    async def busy_then_ready(websocket: ServerConnection) -> None:
        nonlocal connections
        connections += 1
        if connections <= refusals:
            await websocket.send(encode(Error(id=None, code=ErrorCode.BUSY, message="full")))
            await websocket.close(1013, "busy")
            return
        await websocket.send(encode(Ready(voices=("v",), default_voice="v")))
        await websocket.wait_closed()

    factors = itertools.cycle([0.5, 1.0, 0.75, 0.6, 0.9])
    monkeypatch.setattr("tts_client.config.random.uniform", lambda low, high: next(factors))
    sleeps = RecordedSleeps()
    monkeypatch.setattr(tts_client.parts.keeper, "asyncio", sleeps)
    config = replace(FAST, backoff_initial=0.05, backoff_max=0.5)
    async with raw_server(busy_then_ready) as url:
        started = time.monotonic()
        session = TTSSession(WebSocketTransport(url), config)
        await session.start()
        waited = time.monotonic() - started
        await session.aclose()
    # 0.05, 0.1, 0.2, 0.4, then capped at 0.5; times 0.5, 1.0, 0.75, 0.6, 0.9
    assert sleeps.delays == pytest.approx([0.025, 0.1, 0.15, 0.24, 0.45])
    assert connections == refusals + 1 and session.connections == 1
    assert waited >= sum(sleeps.delays)  # the waits were real


async def test_the_jitter_at_start_is_drawn_between_half_and_the_whole_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sleeps = RecordedSleeps()
    monkeypatch.setattr(tts_client.parts.keeper, "asyncio", sleeps)

    async def busy(websocket: ServerConnection) -> None:
        await websocket.send(encode(Error(id=None, code=ErrorCode.BUSY, message="full")))

    config = replace(FAST, backoff_initial=0.01, backoff_max=0.01, reconnect_window=1.0)
    async with raw_server(busy) as url:
        with pytest.raises(TTSBusy, match="full"):
            await TTSSession(WebSocketTransport(url), config).start()
    assert len(sleeps.delays) >= 5
    assert all(0.005 <= delay <= 0.01 for delay in sleeps.delays)
    assert len(set(sleeps.delays)) > 1  # drawn afresh for each wait
