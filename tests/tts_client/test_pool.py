"""SessionPool: sessions lent one turn at a time, kept warm between turns, closed when idle."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from tests.tts_client.conftest import FAST, reference_pcm
from tests.tts_client.test_session import LONG, first_chunk
from tts_client import SegmentStatus, SessionPool, TTSConnectionError, WebSocketTransport
from tts_client.testing.recording import RecordingTransport
from tts_server.engines import Engine


async def test_a_session_given_back_is_lent_again_without_leaking_a_cancelled_turn(
    ws_url: str, engine: Engine
) -> None:
    transport = RecordingTransport(WebSocketTransport(ws_url))
    pool = SessionPool(transport, FAST)
    first = await pool.borrow()
    try:
        assert pool.lent == {first} and pool.idle == 0
        interrupted = [await first.speak(text) for text in (LONG, "Never heard.")]
        await first_chunk(interrupted[0])
        await first.cancel_all()  # barge-in: the turn ends with its segments in flight
        assert [s.status for s in interrupted] == [SegmentStatus.CANCELLED] * 2
        pool.give_back(first)
        assert pool.lent == set() and pool.idle == 1

        second = await pool.borrow()  # the next turn: the warm session, no new handshake
        assert second is first and transport.connects == 1
        segment = await second.speak("Next turn.")
        assert await segment.read() == await reference_pcm(engine, "Next turn.")
        assert await interrupted[0].read() == b""
    finally:
        await pool.aclose()
    assert first.closed


async def test_turns_at_once_get_sessions_of_their_own_and_at_most_max_idle_stay(
    ws_url: str,
) -> None:
    transport = RecordingTransport(WebSocketTransport(ws_url))
    pool = SessionPool(transport, FAST, max_idle=2)
    try:
        sessions = await asyncio.gather(*(pool.borrow() for _ in range(3)))
        assert len(set(sessions)) == 3 and transport.connects == 3
        for session in sessions:
            pool.give_back(session)
        assert pool.idle == 2
        async with asyncio.timeout(5):  # the third is closed in the background
            while not sessions[2].closed:
                await asyncio.sleep(0.01)
        assert await pool.borrow() is sessions[1]  # the most recently used first
    finally:
        await pool.aclose()


async def test_an_idle_session_is_closed_after_the_idle_timeout(ws_url: str) -> None:
    pool = SessionPool(WebSocketTransport(ws_url), FAST, idle_timeout_s=0.2)
    try:
        session = await pool.borrow()
        pool.give_back(session)
        assert pool.idle == 1
        async with asyncio.timeout(5):
            while not session.closed:
                await asyncio.sleep(0.02)
        assert pool.idle == 0
        fresh = await pool.borrow()  # the next turn connects anew
        assert fresh is not session and not fresh.closed
    finally:
        await pool.aclose()


async def test_a_closed_session_is_not_lent_and_ready_is_remembered(ws_url: str) -> None:
    transport = RecordingTransport(WebSocketTransport(ws_url))
    pool = SessionPool(transport, FAST)
    try:
        ready = await pool.ready()  # learned by opening a warm session
        assert ready.voices and pool.idle == 1 and transport.connects == 1
        assert await pool.ready() is ready and transport.connects == 1
        warm = await pool.borrow()
        await warm.aclose()
        pool.give_back(warm)
        assert pool.idle == 0
        session = await pool.borrow()
        assert session is not warm and transport.connects == 2
    finally:
        await pool.aclose()


async def test_a_borrow_that_cannot_connect_raises_and_is_logged_once_at_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = SessionPool(WebSocketTransport("ws://127.0.0.1:9/ws", open_timeout=2), FAST)
    caplog.set_level(logging.INFO, "tts_client")
    try:
        for _ in range(3):
            with pytest.raises(TTSConnectionError):
                await pool.borrow()
    finally:
        await pool.aclose()
    levels = [r.levelno for r in caplog.records if "cannot open a session" in r.message]
    assert levels == [logging.WARNING, logging.INFO, logging.INFO]
    assert pool.lent == set() and pool.idle == 0


async def test_each_turn_lent_a_session_speaks_one_reply_of_its_own(ws_url: str) -> None:
    transport = RecordingTransport(WebSocketTransport(ws_url))
    pool = SessionPool(transport, FAST)
    try:
        replies = []
        for texts in (("One.", "Two."), ("Three.",)):
            session = await pool.borrow()
            for text in texts:
                await (await session.speak(text)).read()
            pool.give_back(session)
            replies.append(session.reply)
    finally:
        await pool.aclose()
    assert transport.connects == 1  # one warm session, lent twice
    speaks = [json.loads(f) for f in transport.sent[0] if json.loads(f)["type"] == "speak"]
    assert [s["reply"] for s in speaks] == [replies[0], replies[0], replies[1]]
    assert replies[0] != replies[1] and None not in replies
