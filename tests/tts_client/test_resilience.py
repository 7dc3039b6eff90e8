"""Drops, restarts, silent and misbehaving servers: typed errors, nothing lost or repeated."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import pytest
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from tests.conftest import start_server
from tests.tts_client.conftest import FAST, raw_server, reference_pcm, route
from tts_client import (
    ServerError,
    SessionClosed,
    SessionConfig,
    TTSConnectionError,
    TTSError,
    TTSProtocolError,
    TTSSession,
    TTSTimeout,
    WebSocketTransport,
)
from tts_client.segment import SegmentStatus
from tts_client.testing.recording import RecordingTransport
from tts_client.transports.base import Connection
from tts_protocol import (
    End,
    Error,
    ErrorCode,
    Ready,
    Speak,
    Start,
    decode_client,
    encode,
)
from tts_server.engines import Engine

LONG = "First part here. Then a second part. And the third part."
READY = encode(Ready(voices=("v",), default_voice="v"))
SHORT = replace(FAST, reply_timeout=0.3, reconnect_window=1.0, connect_timeout=0.5)


async def test_partially_delivered_segment_resumes_without_repeating(
    ws_url: str, engine: Engine
) -> None:
    recorder = RecordingTransport(WebSocketTransport(ws_url), drop_after_audio=1)
    async with TTSSession(recorder, FAST) as session:
        segment = await session.speak(LONG)
        after = await session.speak("After the drop.")
        pcm, after_pcm = await segment.read(), await after.read()
    assert session.connections == recorder.connects == 2
    assert segment.status is after.status is SegmentStatus.DONE
    assert pcm == await reference_pcm(engine, LONG)  # bit-exact: no gap, no repeat
    assert after_pcm == await reference_pcm(engine, "After the drop.")


async def test_server_restart_loses_and_repeats_nothing(via: str, engine: Engine) -> None:
    server = await asyncio.to_thread(start_server, engine)
    texts = [LONG, "Bravo.", "Charlie.", "Delta."]
    try:
        async with route(via, server.ws_url) as url:
            recorder = RecordingTransport(WebSocketTransport(url))
            async with TTSSession(recorder, FAST) as session:
                segments = [await session.speak(text) for text in texts]
                chunks = aiter(segments[0])
                first = await anext(chunks)
                await asyncio.to_thread(server.stop)
                server = await asyncio.to_thread(start_server, engine, port=server.port)
                audio = [first + b"".join([c async for c in chunks])]
                audio += [await s.read() for s in segments[1:]]
            assert session.connections >= 2
            assert recorder.terminals() == {s.id: 1 for s in segments}
    finally:
        await asyncio.to_thread(server.stop)
    for segment, pcm, text in zip(segments, audio, texts, strict=True):
        assert segment.status is SegmentStatus.DONE
        assert pcm == await reference_pcm(engine, text)


async def test_server_that_never_answers_times_out(via: str) -> None:
    async def mute(websocket: ServerConnection) -> None:
        await websocket.wait_closed()

    async with raw_server(mute) as upstream, route(via, upstream) as url:
        started = time.monotonic()
        with pytest.raises(TTSTimeout, match=r"^ws://127.0.0.1:\d+/.+: not ready within 0.5 s$"):
            await TTSSession.connect(WebSocketTransport(url), SHORT)
        assert time.monotonic() - started < 2.0


async def test_a_server_refusing_the_connection_is_a_connection_error(via: str) -> None:
    """An ``error`` instead of ``ready`` (not ``busy``) is a refusal, not a protocol breach."""

    async def refuses(websocket: ServerConnection) -> None:
        await websocket.send(encode(Error(id=None, code=ErrorCode.INTERNAL, message="no engine")))

    async with raw_server(refuses) as upstream, route(via, upstream) as url:
        with pytest.raises(TTSConnectionError, match="server refused: internal: no engine") as err:
            await TTSSession.connect(WebSocketTransport(url), SHORT)
    assert type(err.value) is TTSConnectionError


@pytest.mark.parametrize("reader", ["starting", "waiting"])
async def test_silent_server_fails_segments_with_a_timeout(via: str, reader: str) -> None:
    async def ready_then_mute(websocket: ServerConnection) -> None:
        await websocket.send(READY)
        await websocket.wait_closed()

    async with raw_server(ready_then_mute) as upstream, route(via, upstream) as url:
        session = await TTSSession.connect(WebSocketTransport(url), SHORT)
        if reader == "waiting":  # already reading with nothing outstanding: no deadline yet
            await asyncio.sleep(0.05)
        segment = await session.speak("Anyone there?")
        started = time.monotonic()
        with pytest.raises(TTSTimeout, match=r"no reply in 0.3 s with 1 segment\(s\) outstanding"):
            await segment.read()
        assert time.monotonic() - started < 5.0
        assert session.closed and isinstance(session.error, TTSTimeout)
        with pytest.raises(SessionClosed):
            await session.speak("Again?")
        await session.aclose()


async def test_an_idle_session_outlives_the_reply_timeout(via: str) -> None:
    """The reply timer runs only while segments are outstanding: silence between turns is fine."""

    async def answers_at_once(websocket: ServerConnection) -> None:
        await websocket.send(READY)
        async for frame in websocket:
            if isinstance(speak := decode_client(frame), Speak):
                await websocket.send(encode(Start(id=speak.id)))
                await websocket.send(b"\x01\x00\x02\x00")
                await websocket.send(encode(End(id=speak.id, samples=2, synth_ms=1.0)))

    errors: list[TTSError] = []
    config = replace(SHORT, reply_timeout=1.0, on_error=errors.append)  # room for a loaded box
    async with (
        raw_server(answers_at_once) as upstream,
        route(via, upstream) as url,
        TTSSession(WebSocketTransport(url), config) as session,
    ):
        await asyncio.sleep(1.5 * config.reply_timeout)
        pcm = await (await session.speak("Still here.")).read()
    assert (session.connections, session.error, errors, pcm) == (1, None, [], b"\x01\x00\x02\x00")


async def test_server_that_keeps_dropping_fails_with_a_connection_error(
    via: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def ready_then_close(websocket: ServerConnection) -> None:
        await websocket.send(READY)
        await websocket.recv()

    errors: list[TTSError] = []
    config = replace(SHORT, on_error=errors.append)
    async with raw_server(ready_then_close) as upstream, route(via, upstream) as url:
        async with TTSSession(WebSocketTransport(url), config) as session:
            segment = await session.speak("Hello?")
            with pytest.raises(TTSConnectionError):
                await segment.read()
        assert segment.status is SegmentStatus.FAILED
    # the failure that ended the session is reported, and logged with the endpoint it concerns
    assert isinstance(session.error, TTSConnectionError) and errors[-1] is session.error
    (giving_up,) = [r for r in caplog.records if "giving up" in r.getMessage()]
    assert giving_up.getMessage() == f"{url}: giving up: {session.error}"


def scripted(*misbehaviours: str) -> Callable[[ServerConnection], Awaitable[None]]:
    """A fake server: connection N answers its first speak with misbehaviour N, then properly.

    ``ok`` answers start, two audio frames, end; an unscripted connection behaves like ``ok``.
    """

    connections = 0

    async def handler(websocket: ServerConnection) -> None:
        nonlocal connections
        script = misbehaviours[connections] if connections < len(misbehaviours) else "ok"
        connections += 1
        await websocket.send(READY)
        try:
            async for frame in websocket:
                speak = decode_client(frame)
                assert isinstance(speak, Speak)
                if script == "binary_first":
                    await websocket.send(b"\x00\x00")
                elif script == "bad_json":
                    await websocket.send("{not json")
                elif script == "unknown_id":
                    await websocket.send(encode(Start(id="someone-else")))
                else:
                    if script == "null_error":
                        error = Error(id=None, code=ErrorCode.INTERNAL, message="hiccup")
                        await websocket.send(encode(error))
                    await websocket.send(encode(Start(id=speak.id)))
                    await websocket.send(b"\x01\x00\x02\x00")
                    await websocket.send(b"\x03\x00")
                    await websocket.send(encode(End(id=speak.id, samples=3, synth_ms=1.0)))
                script = "ok"
        except ConnectionClosed:
            pass

    return handler


@pytest.mark.parametrize("misbehaviour", ["binary_first", "bad_json", "unknown_id"])
async def test_invalid_frames_are_typed_and_the_session_recovers(
    via: str, misbehaviour: str, caplog: pytest.LogCaptureFixture
) -> None:
    errors: list[TTSError] = []
    config = replace(FAST, on_error=errors.append)
    async with (
        raw_server(scripted(misbehaviour)) as upstream,
        route(via, upstream) as url,
        TTSSession(WebSocketTransport(url), config) as session,
    ):
        segment = await session.speak("Hello.")
        assert await segment.read() == b"\x01\x00\x02\x00\x03\x00"
        assert session.connections == 2
    assert [type(e) for e in errors] == [TTSProtocolError]
    logged = [r.getMessage() for r in caplog.records if r.name == "tts_client"]
    # the report and the reconnect name the endpoint and the error
    assert {f"{url}: {errors[0]}", f"{url}: {errors[0]}; reconnecting"} <= set(logged)


async def test_a_server_that_always_misbehaves_closes_the_session_cleanly(via: str) -> None:
    async with raw_server(scripted(*["bad_json"] * 100)) as upstream, route(via, upstream) as url:
        session = await TTSSession.connect(WebSocketTransport(url), SHORT)
        segment = await session.speak("Hello.")
        with pytest.raises(TTSProtocolError):
            await segment.read()
        assert session.closed
        await session.aclose()


async def test_server_error_without_id_is_reported_and_harmless(via: str) -> None:
    errors: list[TTSError] = []
    config = replace(FAST, on_error=errors.append)
    async with (
        raw_server(scripted("null_error")) as upstream,
        route(via, upstream) as url,
        TTSSession(WebSocketTransport(url), config) as session,
    ):
        segment = await session.speak("Hello.")
        assert len(await segment.read()) == 6
        assert session.connections == 1
    assert len(errors) == 1 and isinstance(errors[0], ServerError)
    assert (errors[0].code, errors[0].message) == (ErrorCode.INTERNAL, "hiccup")


async def test_wrong_protocol_version_is_refused(via: str) -> None:
    async def future_server(websocket: ServerConnection) -> None:
        await websocket.send(encode(Ready(voices=("v",), default_voice="v", protocol=2)))
        await websocket.wait_closed()

    async with raw_server(future_server) as upstream, route(via, upstream) as url:
        with pytest.raises(TTSProtocolError, match="protocol 2"):
            await TTSSession.connect(WebSocketTransport(url), SessionConfig(connect_timeout=2))


async def test_progress_resets_the_outage_window() -> None:
    """Drops spread over more than ``reconnect_window`` are survived while segments complete."""

    async def one_segment_per_connection(websocket: ServerConnection) -> None:
        await websocket.send(READY)
        speak = decode_client(await websocket.recv())
        if not isinstance(speak, Speak):  # the session's 'close' at the end
            return
        await websocket.send(encode(Start(id=speak.id)))
        await websocket.send(b"\x01\x00" * 240)
        await websocket.send(encode(End(id=speak.id, samples=240, synth_ms=1.0)))
        await asyncio.sleep(0.05)  # then the server closes the connection, unasked

    config = replace(SHORT, reconnect_window=0.6, backoff_initial=0.02, backoff_max=0.02)
    pcm = []
    async with (
        raw_server(one_segment_per_connection) as url,
        TTSSession(WebSocketTransport(url), config) as session,
    ):
        started = time.monotonic()
        for i in range(10):
            pcm.append(await (await session.speak(f"Sentence {i}.")).read())
            await asyncio.sleep(0.2)  # a drop, then a reconnect, before the next one
        assert time.monotonic() - started > 3 * config.reconnect_window
        assert not session.closed and session.connections >= 10
    assert pcm == [b"\x01\x00" * 240] * 10


async def test_a_retired_connection_is_closed_even_if_the_server_ignores_close() -> None:
    """Rollover sends 'close', then closes the old connection itself after ``close_timeout``."""
    ended: list[asyncio.Event] = []

    async def ignores_close(websocket: ServerConnection) -> None:
        ended.append(done := asyncio.Event())
        await websocket.send(READY)
        try:
            async for frame in websocket:
                speak = decode_client(frame)
                if isinstance(speak, Speak):  # 'close' is read and ignored: the server stays
                    await websocket.send(encode(Start(id=speak.id)))
                    await websocket.send(encode(End(id=speak.id, samples=0, synth_ms=1.0)))
        except ConnectionClosed:
            pass
        done.set()

    config = replace(FAST, close_timeout=0.2)
    async with (
        raw_server(ignores_close) as url,
        TTSSession(WebSocketTransport(url, max_connection_age=0.1), config) as session,
    ):
        await (await session.speak("First.")).read()
        await asyncio.sleep(0.2)  # the connection is now too old, and idle
        await (await session.speak("Second.")).read()
        assert session.connections == 2
        async with asyncio.timeout(5):  # never, if the session waited for the server to close
            await ended[0].wait()


@dataclass
class Faulty:
    """``inner``'s connections: the first wrapped by ``first``, later ones ``later_error``."""

    inner: WebSocketTransport
    first: Callable[[Connection], Connection] | None = None
    later_error: Exception | None = None
    connects: int = 0

    @property
    def endpoint(self) -> str:
        return self.inner.endpoint

    @property
    def max_connection_age(self) -> float | None:
        return None

    async def connect(self) -> Connection:
        self.connects += 1
        if self.connects > 1 and self.later_error is not None:
            await asyncio.sleep(0)
            raise self.later_error
        conn = await self.inner.connect()
        return self.first(conn) if self.connects == 1 and self.first else conn

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (TTSTimeout("no ready in time"), TTSTimeout("no ready in time")),
        (RuntimeError("a transport bug"), TTSConnectionError("RuntimeError('a transport bug')")),
    ],
)
async def test_reconnects_that_keep_failing_end_the_session_with_a_typed_error(
    error: Exception, expected: TTSError
) -> None:
    async def ready_then_close(websocket: ServerConnection) -> None:
        await websocket.send(READY)

    async with raw_server(ready_then_close) as url:
        transport = Faulty(WebSocketTransport(url), later_error=error)
        session = await TTSSession.connect(transport, SHORT)
        async with asyncio.timeout(10):  # reconnect_window is 1 s
            while not session.closed:
                await asyncio.sleep(0.01)
        await session.aclose()
    assert type(session.error) is type(expected) and str(session.error) == str(expected)
    assert transport.connects > 2  # tried again, with backoff, until the window closed


async def test_speaking_while_reconnecting_waits_for_the_new_connection() -> None:
    """With rollover on, a segment spoken while no connection is live goes on the next one."""
    reconnecting = asyncio.Event()
    connections = 0

    async def drops_first_then_serves(websocket: ServerConnection) -> None:
        nonlocal connections
        connections += 1
        if connections == 1:
            await websocket.send(READY)
            return  # the first connection ends at once: the session reconnects
        reconnecting.set()
        await asyncio.sleep(0.2)  # the client waits for 'ready' meanwhile: no live link
        await scripted()(websocket)

    async with (
        raw_server(drops_first_then_serves) as url,
        TTSSession(WebSocketTransport(url, max_connection_age=30.0), FAST) as session,
    ):
        await reconnecting.wait()
        segment = await session.speak("Hello.")
        assert segment.timings.sent is None  # held: not tried on the connection that ended
        assert await segment.read() == b"\x01\x00\x02\x00\x03\x00"
        assert session.connections == 2


@dataclass
class Stalled:
    """A connection whose sends block, as on a peer whose TCP window stays shut."""

    conn: Connection

    async def send(self, frame: str | bytes) -> None:
        await asyncio.Event().wait()

    async def recv(self) -> str | bytes:
        return await self.conn.recv()

    async def aclose(self) -> None:
        await self.conn.aclose()


@dataclass
class Buggy(Stalled):
    """Reads ``ready``, then raises what no transport should: not a ``TTSError``."""

    reads: int = 0

    async def send(self, frame: str | bytes) -> None:
        await self.conn.send(frame)

    async def recv(self) -> str | bytes:
        self.reads += 1
        if self.reads > 1:
            raise RuntimeError("a transport bug")
        return await self.conn.recv()


async def test_a_transport_bug_is_logged_and_the_session_reconnects(
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors: list[TTSError] = []
    config = replace(FAST, on_error=errors.append)
    async with raw_server(scripted()) as url:
        async with TTSSession(Faulty(WebSocketTransport(url), first=Buggy), config) as session:
            segment = await session.speak("Hello.")
            assert await segment.read() == b"\x01\x00\x02\x00\x03\x00"
        assert session.connections == 2
    (logged,) = [r for r in caplog.records if r.name == "tts_client" and r.exc_info]
    assert logged.getMessage() == f"{url}: unexpected error"
    assert "a transport bug" in str(logged.exc_info[1])
    reconnecting = f"{url}: unexpected RuntimeError('a transport bug'); reconnecting"
    assert reconnecting in [r.getMessage() for r in caplog.records]  # as a connection error
    assert errors == []  # not the server's fault: reconnected, not reported as a protocol error


async def test_a_send_that_never_completes_moves_the_segment_to_a_new_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "tts_client")
    config = replace(FAST, reply_timeout=0.3)
    async with raw_server(scripted()) as url:
        transport = Faulty(WebSocketTransport(url), first=Stalled)
        async with TTSSession(transport, config) as session:
            segment = await session.speak("Hello.")
            async with asyncio.timeout(10):
                assert await segment.read() == b"\x01\x00\x02\x00\x03\x00"
        assert session.connections == 2
    assert f"{url}: send failed: TimeoutError()" in [r.getMessage() for r in caplog.records]


async def test_a_drain_that_runs_out_of_time_cancels_the_rest_and_closes() -> None:
    async def ready_then_mute(websocket: ServerConnection) -> None:
        await websocket.send(READY)
        await websocket.wait_closed()

    config = replace(FAST, drain_timeout=0.2)
    async with raw_server(ready_then_mute) as url:
        session = await TTSSession.connect(WebSocketTransport(url), config)
        segment = await session.speak("Never answered.")
        async with asyncio.timeout(10):
            await session.aclose()  # returns after drain_timeout, without raising
    assert segment.status is SegmentStatus.CANCELLED and session.closed
