"""SessionPool: one warm session per endpoint across turns, no audio leaking between turns."""

from __future__ import annotations

from tests.tts_client.conftest import FAST, reference_pcm
from tests.tts_client.test_session import LONG, first_chunk
from tts_client import SegmentStatus, SessionPool, WebSocketTransport
from tts_server.engines import Engine


async def test_pool_reuses_the_session_without_leaking_a_cancelled_turn(
    ws_url: str, engine: Engine
) -> None:
    pool = SessionPool(FAST)
    first = await pool.session(WebSocketTransport(ws_url))  # warmed before the first turn
    try:
        interrupted = [await first.speak(text) for text in (LONG, "Never heard.")]
        await first_chunk(interrupted[0])
        await first.cancel_all()  # barge-in: the turn ends with its segments in flight
        assert [s.status for s in interrupted] == [SegmentStatus.CANCELLED] * 2

        second = await pool.session(WebSocketTransport(ws_url))  # the next turn, same endpoint
        assert second is first and second.connections == 1
        segment = await second.speak("Next turn.")
        pcm = await segment.read()
        assert pcm == await reference_pcm(engine, "Next turn.")
        assert await interrupted[0].read() == b""
    finally:
        await pool.aclose()
    assert first.closed


async def test_pool_keys_replaces_and_discards_sessions(ws_url: str) -> None:
    pool = SessionPool(FAST)
    transport = WebSocketTransport(ws_url)
    try:
        old = await pool.session(transport)
        await old.aclose()
        new = await pool.session(transport)
        assert new is not old and not new.closed
        alice, bob = await pool.session(transport, "alice"), await pool.session(transport, "bob")
        assert len({id(new), id(alice), id(bob)}) == 3
        assert await pool.session(transport, "alice") is alice
        await pool.discard(transport, "alice")
        assert alice.closed and not bob.closed
        assert await (await bob.speak("Hi.")).read()
    finally:
        await pool.aclose()
    assert bob.closed and new.closed
