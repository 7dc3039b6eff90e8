"""Admission control: the counts and limits, and the server refusing with ``busy`` on sockets.

The server runs a ``FakeEngine`` whose engine thread the test holds busy (``gate``), so what is
queued and what is in synthesis is decided by the test, not by timing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.conftest import start_server
from tts_protocol import (
    End,
    Error,
    ErrorCode,
    ProtocolError,
    Ready,
    Speak,
    Start,
    decode_server,
    encode,
)
from tts_server.admission import Admission, default_max_sessions
from tts_server.settings import parse_settings
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

# --- the object ----------------------------------------------------------------------------


def test_defaults_depend_on_engine_and_device() -> None:
    assert default_max_sessions("onnx", None) == 16
    assert default_max_sessions("torch", "cpu") == 16
    assert default_max_sessions("torch", "cuda") == 128
    assert default_max_sessions("torch", None) == 128  # the GPU image's default
    admission = Admission.for_server("onnx", None, None, None)
    assert (admission.max_sessions, admission.max_queued, admission.max_connections) == (
        16,
        64,
        256,
    )
    gpu = Admission.for_server("torch", "cuda", None, None)
    assert (gpu.max_sessions, gpu.max_queued, gpu.max_connections) == (128, 512, 2048)
    assert Admission.for_server("torch", "cuda", 3, 5, 7) == Admission(3, 5, 7)


def test_limits_come_from_flags_or_environment() -> None:
    settings = parse_settings(
        ["--max-sessions", "7", "--max-connections", "70"], {"TTS_MAX_QUEUED": "9"}
    )
    assert (settings.max_sessions, settings.max_queued, settings.max_connections) == (7, 9, 70)
    assert parse_settings([], {}).max_sessions is None
    assert parse_settings([], {}).max_connections is None
    assert parse_settings([], {"TTS_MAX_SESSIONS": "3"}).max_sessions == 3
    assert parse_settings([], {"TTS_MAX_CONNECTIONS": "30"}).max_connections == 30
    for limits in [(0, 1, 1), (1, 0, 1), (1, 1, 0)]:
        with pytest.raises(ValueError) as refused:
            Admission(*limits)
        assert str(refused.value) == (
            "max_sessions, max_queued and max_connections must be at least 1"
        )
    assert Admission.for_server("torch", "cpu", None, None).max_sessions == 16  # the device


def test_connections_and_sessions_are_counted_apart_and_refused_beyond_their_limits() -> None:
    admission = Admission(max_sessions=2, max_queued=10, max_connections=3)
    assert [admission.open_connection() for _ in range(5)] == [True, True, True, False, False]
    assert [admission.open_session() for _ in range(3)] == [True, True, False]
    assert admission.sessions_full == "2 sessions are synthesizing; try again later"
    admission.close_session()
    admission.close_connection()
    assert admission.open_session() and admission.open_connection()
    counts = admission.snapshot()
    assert (counts["connections"], counts["sessions"]) == (3, 2)
    assert (counts["refused_connections"], counts["refused_sessions"]) == (2, 1)


def test_queued_segments_are_refused_as_busy_beyond_the_limit() -> None:
    admission = Admission(max_sessions=1, max_queued=2, max_connections=4)
    admission.queue_segment("a")
    admission.queue_segment("b")
    for _ in range(2):
        with pytest.raises(ProtocolError) as refused:
            admission.queue_segment("c")
    assert (refused.value.code, refused.value.id) == (ErrorCode.BUSY, "c")
    assert refused.value.message == "the server has 2 segments queued; try again later"
    admission.start_segment()  # "a" goes to synthesis: one place in the queue is free
    admission.queue_segment("c")
    admission.leave_queue()  # one, by default
    assert admission.queued == 1
    admission.leave_queue(1)
    admission.end_segment()
    assert admission.snapshot() == {
        "max_sessions": 1,
        "max_queued": 2,
        "max_connections": 4,
        "connections": 0,
        "sessions": 0,
        "queued": 0,
        "in_flight": 0,
        "refused_connections": 0,
        "refused_sessions": 0,
        "refused_segments": 2,
    }


# --- the server ----------------------------------------------------------------------------


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Set: the fake engine runs; cleared by a test: its engine thread is held busy."""
    event = threading.Event()
    event.set()
    yield event
    event.set()  # never leave the engine thread blocked


@pytest.fixture
def server(gate: threading.Event) -> Iterator[ServerThread]:
    server = start_server(FakeEngine(gate), max_sessions=2, max_queued=3, max_connections=3)
    yield server
    gate.set()
    server.stop()


@pytest.fixture
async def client(server: ServerThread) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=server.http_url, timeout=30) as http:
        yield http


async def ping_until(client: httpx.AsyncClient, **counts: int) -> dict[str, object]:
    """Poll ``/ping`` until its counts are ``counts`` (for at most 10 s); return the body."""
    body: dict[str, object] = {}
    try:
        async with asyncio.timeout(10):
            while not all(body.get(key) == value for key, value in counts.items()):
                await asyncio.sleep(0.02)
                body = (await client.get("/ping")).json()
    except TimeoutError:
        raise AssertionError(f"/ping never showed {counts} in 10 s; last {body}") from None
    return body


async def opened(url: str) -> ClientConnection:
    socket = await connect(url)
    assert isinstance(decode_server(await socket.recv()), Ready)
    return socket


async def test_a_connection_beyond_the_limit_is_refused_busy_with_1013(
    server: ServerThread, client: httpx.AsyncClient
) -> None:
    sockets = [await opened(server.ws_url) for _ in range(3)]
    async with connect(server.ws_url) as fourth:
        refusal = decode_server(await fourth.recv())
        with pytest.raises(ConnectionClosed) as closed:
            await fourth.recv()
    assert isinstance(refusal, Error) and refusal.id is None and refusal.code is ErrorCode.BUSY
    assert refusal.message == "3 connections are open; try again later"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
    await ping_until(client, connections=3, sessions=0, refused_connections=1)
    await sockets[0].close()
    await ping_until(client, connections=2)
    sockets[0] = await opened(server.ws_url)  # a place was freed: admitted again
    for socket in sockets:
        await socket.close()
    await ping_until(client, connections=0)


async def test_idle_connections_hold_no_session_so_work_elsewhere_goes_on(
    server: ServerThread, client: httpx.AsyncClient
) -> None:
    idle = [await opened(server.ws_url) for _ in range(3)]  # more than max_sessions (2)
    await ping_until(client, connections=3, sessions=0)
    speech = {"model": "kokoro", "input": "Hi.", "voice": "af_fake", "response_format": "pcm"}
    for _ in range(3):  # the HTTP routes are not locked out by idle sockets
        assert (await client.post("/v1/audio/speech", json=speech)).status_code == 200
        assert (await client.post("/invocations", json={"text": "Hi."})).status_code == 200
    for n, socket in enumerate(idle):  # one after another, each socket is spoken
        await socket.send(encode(Speak(id=f"s{n}", text="My turn.")))
        assert [m.id for m in await terminal_replies(socket, 1)] == [f"s{n}"]
    await ping_until(client, connections=3, sessions=0, refused_sessions=0)
    for socket in idle:
        await socket.close()


async def test_a_speak_beyond_the_sessions_with_work_is_busy_until_one_rests(
    server: ServerThread, client: httpx.AsyncClient, gate: threading.Event
) -> None:
    gate.clear()  # the engine thread is held: each first segment stays in synthesis
    sockets = [await opened(server.ws_url) for _ in range(3)]
    for n, socket in enumerate(sockets[:2]):
        await socket.send(encode(Speak(id=f"w{n}", text="Working.")))
    await ping_until(client, sessions=2, in_flight=2)
    await sockets[2].send(encode(Speak(id="late", text="No session free.")))
    refusal = decode_server(await sockets[2].recv())
    assert isinstance(refusal, Error) and (refusal.id, refusal.code) == ("late", ErrorCode.BUSY)
    assert refusal.message == "2 sessions are synthesizing; try again later"
    await sockets[0].send(encode(Speak(id="w0b", text="More of the same session.")))
    await ping_until(client, sessions=2, queued=1, refused_sessions=1)  # a working one goes on
    gate.set()
    assert [m.id for m in await terminal_replies(sockets[0], 2)] == ["w0", "w0b"]
    assert [m.id for m in await terminal_replies(sockets[1], 1)] == ["w1"]
    await ping_until(client, sessions=0, connections=3)  # both rest: their sessions are free
    await sockets[2].send(encode(Speak(id="late", text="Now there is room.")))
    assert [m.id for m in await terminal_replies(sockets[2], 1)] == ["late"]
    for socket in sockets:
        await socket.close()


async def test_a_speak_beyond_the_server_queue_is_busy_and_the_connection_stays(
    server: ServerThread, client: httpx.AsyncClient, gate: threading.Event
) -> None:
    gate.clear()  # the engine thread is held: the first segment stays in synthesis
    first, second = await opened(server.ws_url), await opened(server.ws_url)
    await first.send(encode(Speak(id="a1", text="Held in synthesis.")))
    await ping_until(client, in_flight=1)
    await second.send(encode(Speak(id="b1", text="Waiting for the engine thread.")))
    await ping_until(client, in_flight=2)  # each connection's head is in synthesis
    await first.send(encode(Speak(id="a2", text="Queued one.")))
    await first.send(encode(Speak(id="a3", text="Queued two.")))
    await second.send(encode(Speak(id="b2", text="Queued three.")))
    await ping_until(client, queued=3)
    await second.send(encode(Speak(id="b3", text="One too many.")))
    assert decode_server(await second.recv()) == Start(id="b1")  # sent before its audio
    refusal = decode_server(await second.recv())
    assert isinstance(refusal, Error) and (refusal.id, refusal.code) == ("b3", ErrorCode.BUSY)
    ping = await client.get("/ping")  # the engine thread is saturated; /ping still answers
    assert ping.status_code == 200
    assert ping.json() | {"warmup_ms": 0} == ping.json() | {
        "status": "Healthy",
        "connections": 2,
        "sessions": 2,
        "queued": 3,
        "in_flight": 2,
        "refused_segments": 1,
        "warmup_ms": 0,
    }
    gate.set()
    # once b2 has ended it has left the queue, so there is room again (deterministically)
    assert [m.id for m in await terminal_replies(second, 2)] == ["b1", "b2"]
    await second.send(encode(Speak(id="b3", text="Sent again.")))  # the same id is free
    assert [m.id for m in await terminal_replies(second, 1)] == ["b3"]
    assert [m.id for m in await terminal_replies(first, 3)] == ["a1", "a2", "a3"]
    await ping_until(client, queued=0, in_flight=0)
    await first.close()
    await second.close()


async def terminal_replies(socket: ClientConnection, count: int) -> list[End]:
    """The next ``count`` ``end`` messages (audio frames skipped); anything else fails."""
    ends: list[End] = []
    async with asyncio.timeout(20):
        while len(ends) < count:
            frame = await socket.recv()
            if isinstance(frame, bytes):
                continue
            message = decode_server(frame)
            assert not isinstance(message, Error), message
            if isinstance(message, End):
                ends.append(message)
    return ends


async def test_a_closed_connection_releases_its_queue_and_its_session(
    server: ServerThread, client: httpx.AsyncClient, gate: threading.Event
) -> None:
    gate.clear()
    socket = await opened(server.ws_url)
    for n in range(3):
        await socket.send(encode(Speak(id=f"s{n}", text="Hold on.")))
    await ping_until(client, sessions=1, in_flight=1, queued=2)
    await socket.close()
    await ping_until(client, sessions=0, queued=0)
    gate.set()
    await ping_until(client, in_flight=0)


async def test_http_synthesis_holds_a_session_and_is_refused_busy_when_full(
    server: ServerThread, client: httpx.AsyncClient, gate: threading.Event
) -> None:
    speech = {"model": "kokoro", "input": "Hi there.", "voice": "af_fake", "response_format": "pcm"}
    gate.clear()  # the engine thread is held: an HTTP request keeps its slot while it waits
    held = asyncio.create_task(client.post("/invocations", json={"text": "Held."}))
    await ping_until(client, sessions=1, in_flight=0)
    socket = await opened(server.ws_url)
    await socket.send(encode(Speak(id="ws", text="A socket with work.")))
    await ping_until(client, sessions=2)
    invocation = await client.post("/invocations", json={"text": "One too many."})
    assert invocation.status_code == 429 and invocation.headers["retry-after"] == "1"
    assert invocation.json()["error"]["code"] == ErrorCode.BUSY
    openai = await client.post("/v1/audio/speech", json=speech)
    assert openai.status_code == 429 and openai.json()["error"]["code"] == "busy"
    assert (await ping_until(client, refused_sessions=2))["sessions"] == 2
    gate.set()
    assert (await held).status_code == 200
    assert [m.id for m in await terminal_replies(socket, 1)] == ["ws"]
    await ping_until(client, sessions=0, connections=1)  # the socket rests, and stays open
    spoken = await client.post("/v1/audio/speech", json=speech)  # a slot is free again
    assert spoken.status_code == 200 and len(spoken.content) > 0
    await ping_until(client, sessions=0)  # the stream ended: its slot is back
    await socket.close()
    await ping_until(client, connections=0)
