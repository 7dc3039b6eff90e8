"""Graceful shutdown: a draining connection, and the real ``tts-server`` process on SIGTERM.

The connection is driven directly with a ``FakeEngine`` whose engine thread the test holds
(``gate``). The process tests run ``python -m tests.fake_server`` (the real CLI, uvicorn and
signal handling, a paced fake engine) and send it SIGTERM with segments queued.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.fake_server import ServerProcess
from tts_protocol import (
    PING_PATH,
    ClientProtocol,
    ConnectionFailed,
    End,
    Error,
    ErrorCode,
    Ready,
    ServerMessage,
    Speak,
    Start,
    decode_server,
    encode,
)
from tts_server.admission import Admission
from tts_server.connection import SERVICE_RESTART, Ending, SynthesisConnection
from tts_server.drain import Drain
from tts_server.health import Readiness, State
from tts_server.settings import parse_settings
from tts_server.testing.fake_engine import FakeEngine

SENTENCE = "One short sentence to speak."


class Recorder:
    """A connection's replies (control messages decoded, audio as bytes)."""

    def __init__(self) -> None:
        self.events: list[ServerMessage | bytes] = []

    async def text(self, text: str) -> None:
        self.events.append(decode_server(text))

    async def audio(self, data: bytes) -> None:
        self.events.append(data)

    def of(self, kind: type) -> list[ServerMessage]:
        return [e for e in self.events if isinstance(e, kind)]  # type: ignore[misc]


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave the engine thread blocked


def speak(id: str) -> str:
    return encode(Speak(id=id, text=SENTENCE))


async def until(condition: object, limit_s: float = 10.0) -> None:
    async with asyncio.timeout(limit_s):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.005)


async def test_a_draining_connection_finishes_its_queue_refuses_new_speaks_then_ends(
    gate: threading.Event,
) -> None:
    recorder, admission = Recorder(), Admission(4, 16, 4)
    drain = Drain(Readiness(), admission)
    connection = SynthesisConnection(
        FakeEngine(gate), recorder.text, recorder.audio, admission=admission
    )
    drain.add(connection)
    worker = asyncio.create_task(connection.run())
    await connection.feed(speak("a"))
    await connection.feed(speak("b"))
    await until(lambda: recorder.of(Start))  # "a" in synthesis (held by the gate), "b" queued
    admission.connections = 1  # what the route counts for this socket
    draining = asyncio.create_task(drain.run(limit_s=10))
    await until(lambda: drain.started)
    await connection.feed(speak("c"))
    refused = recorder.of(Error)
    assert [(e.id, e.code) for e in refused] == [("c", ErrorCode.SHUTTING_DOWN)]  # type: ignore[attr-defined]
    gate.set()
    await asyncio.wait_for(worker, 5)  # the queue is done: the worker returns
    assert [e.id for e in recorder.of(End)] == ["a", "b"]  # type: ignore[attr-defined]
    assert connection.ending == Ending(SERVICE_RESTART, "shutting_down: the server is restarting")
    assert not draining.done()  # the drain waits for the socket to close
    admission.connections = 0
    assert await asyncio.wait_for(draining, 1) is True


async def test_a_drain_past_its_deadline_reports_it_and_a_connection_added_late_drains() -> None:
    readiness, admission = Readiness(), Admission(4, 16, 4)
    drain = Drain(readiness, admission)
    admission.sessions = 1  # a session that never ends
    started = time.monotonic()
    assert await drain.run(limit_s=0.2) is False
    assert 0.2 <= time.monotonic() - started < 1.0
    assert readiness.state is State.DRAINING
    late = SynthesisConnection(FakeEngine(), Recorder().text, Recorder().audio)
    drain.add(late)  # admitted just before the drain began: it ends at once, with 1012
    await asyncio.wait_for(late.run(), 1)
    assert late.ending is not None and late.ending.code == SERVICE_RESTART


async def test_a_second_ctrl_c_abandons_the_drain() -> None:
    admission = Admission(4, 16, 4)
    admission.sessions = 1
    assert await Drain(Readiness(), admission).run(limit_s=30, abandon=lambda: True) is False


def test_the_drain_deadline_comes_from_flags_or_environment() -> None:
    assert parse_settings([]).drain_s == 20.0
    assert parse_settings(["--drain-s", "3"]).drain_s == 3.0
    assert parse_settings([], {"TTS_DRAIN_S": "4.5"}).drain_s == 4.5
    with pytest.raises(SystemExit):
        parse_settings(["--drain-s", "0"])


# --- the client's side ---------------------------------------------------------------------


def test_a_client_sends_a_segment_refused_as_shutting_down_again_on_its_next_connection() -> None:
    protocol = ClientProtocol()
    protocol.connection_opened()
    protocol.receive(encode(Ready(voices=("af_fake",), default_voice="af_fake")))
    protocol.speak(Speak(id="a", text=SENTENCE))
    protocol.speak(Speak(id="b", text=SENTENCE))
    assert [s.id for s in protocol.take_speaks()] == ["a", "b"]
    refusal = Error(id="b", code=ErrorCode.SHUTTING_DOWN, message="shutting down")
    assert protocol.receive(encode(refusal)) == []  # not terminal: nothing for the caller
    assert (protocol.pending, protocol.in_flight, protocol.take_speaks()) == (2, 1, [])
    protocol.connection_lost()  # the server closed with 1012
    protocol.connection_opened()
    handshake = protocol.receive(encode(Error(id=None, code=ErrorCode.SHUTTING_DOWN, message="")))
    assert handshake == [ConnectionFailed("server refused: shutting_down: ", False, busy=True)]
    protocol.connection_opened()  # the replacement is up: "a" lost its reply, "b" was refused
    protocol.receive(encode(Ready(voices=("af_fake",), default_voice="af_fake")))
    assert [s.id for s in protocol.take_speaks()] == ["a", "b"]


# --- the real process ----------------------------------------------------------------------


async def replies(ws: ClientConnection, into: list[ServerMessage | bytes]) -> int | None:
    """Read until the server closes; every frame goes to ``into``; returns the close code."""
    try:
        async for frame in ws:
            into.append(frame if isinstance(frame, bytes) else decode_server(frame))
    except ConnectionClosed:
        pass
    return ws.close_code


def ids(events: list[ServerMessage | bytes], kind: type) -> list[str]:
    return [e.id for e in events if isinstance(e, kind)]  # type: ignore[attr-defined]


async def test_sigterm_drains_the_queue_refuses_new_work_and_exits() -> None:
    server = ServerProcess("--drain-s", "10", infer_s=1.0).start()
    try:
        async with connect(server.ws_url) as ws, httpx.AsyncClient(timeout=5) as http:
            assert isinstance(decode_server(str(await ws.recv())), Ready)
            for id in ("a", "b", "c"):
                await ws.send(speak(id))
            events: list[ServerMessage | bytes] = []
            assert isinstance(decode_server(str(await ws.recv())), Start)
            # the signal comes once "b" and "c" are queued behind "a" (a second of synthesis):
            # sent at "a"'s start, it raced the server's reading of "c" (CI once drained "a"
            # and "b" only), and a speak read after it is refused, not drained
            deadline = time.monotonic() + 5
            while (await http.get(server.http_url + PING_PATH)).json()["queued"] < 2:
                assert time.monotonic() < deadline, "b and c were not queued 5 s after a's start"
                await asyncio.sleep(0.01)
            server.signal(signal.SIGTERM)
            ping = await http.get(server.http_url + PING_PATH)
            deadline = time.monotonic() + 10
            while ping.status_code == 200:  # the signal is handled on uvicorn's next tick
                assert time.monotonic() < deadline, "/ping still answers 200 10 s after SIGTERM"
                await asyncio.sleep(0.01)
                ping = await http.get(server.http_url + PING_PATH)
            assert ping.status_code == 503 and ping.json()["status"] == "Draining"
            async with connect(server.ws_url) as late:  # a new session: typed refusal, 1012
                refusal = decode_server(str(await late.recv()))
                assert isinstance(refusal, Error) and refusal.code is ErrorCode.SHUTTING_DOWN
                await late.wait_closed()
                assert late.close_code == SERVICE_RESTART
            await ws.send(speak("d"))
            code = await asyncio.wait_for(replies(ws, events), 10)
        assert ids(events, End) == ["a", "b", "c"]  # the queue finished
        assert [(e.id, e.code) for e in events if isinstance(e, Error)] == [
            ("d", ErrorCode.SHUTTING_DOWN)
        ]
        assert code == SERVICE_RESTART
        assert server.wait(10) == -signal.SIGTERM  # uvicorn re-raises the signal it handled
    finally:
        server.kill()


async def test_sigterm_past_the_drain_deadline_closes_with_1012_and_exits() -> None:
    server = ServerProcess("--drain-s", "0.5", infer_s=0.4).start()
    try:
        async with connect(server.ws_url) as ws:
            await ws.recv()  # ready
            for n in range(10):  # 4 s of synthesis: far past the deadline
                await ws.send(speak(f"s{n}"))
            await ws.recv()  # the first start
            started = time.monotonic()
            server.signal(signal.SIGTERM)
            events: list[ServerMessage | bytes] = []
            code = await asyncio.wait_for(replies(ws, events), 10)
        assert code == SERVICE_RESTART and len(ids(events, End)) < 5  # cut at the deadline
        assert server.wait(10) == -signal.SIGTERM
        assert time.monotonic() - started < 4.0
    finally:
        server.kill()
