"""A client that stops reading: bounded server memory, paused synthesis, a typed close.

The server is the real ``tts-server`` process (``tests.fake_server``: CLI, uvicorn, a paced
fake engine). The stuck client is a WebSocket on a plain socket with a small receive buffer
(websockets' sans-I/O protocol frames it): it queues 200 segments and then reads nothing, so
its TCP window fills and the server's sends block. Meanwhile a normal client must get its
audio at the engine's pace, the server's RSS must stay within ``RSS_BOUND``, and after
``--send-timeout-s`` the stuck connection is closed: with 1008 ``send_timeout`` for a client
that reads again, and by the kernel (``TCP_USER_TIMEOUT``) for one that never does.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.client import ClientProtocol
from websockets.frames import Close
from websockets.http11 import Response
from websockets.uri import parse_uri

from tests.fake_server import ServerProcess
from tts_protocol import PING_PATH, End, Speak, decode_server, encode
from tts_server.connection import POLICY_VIOLATION
from tts_server.stream import CLOSE_GRACE_S

SEGMENTS = 200
SEND_TIMEOUT_S = 1.0
INFER_S = 0.05  # per sentence: 200 segments are 10 s of engine time if nothing pauses them
SENTENCE = "A sentence of about two seconds of audio, said once."
RSS_BOUND = 4 << 20  # the server's RSS growth while the stuck client holds 200 segments


class StuckClient:
    """A WebSocket client on a blocking socket that reads only when the test says so."""

    def __init__(self, url: str, rcvbuf: int = 4096) -> None:
        self.protocol = ClientProtocol(parse_uri(url), max_size=None)
        uri = parse_uri(url)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect
        self.sock.connect((uri.host, uri.port))
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        while not any(isinstance(e, Response) for e in self._read(65536)):
            pass

    def _flush(self) -> None:
        self.sock.sendall(b"".join(self.protocol.data_to_send()))

    def _read(self, size: int) -> list[object]:
        data = self.sock.recv(size)
        self.protocol.receive_data(data) if data else self.protocol.receive_eof()
        return list(self.protocol.events_received())

    def send(self, text: str) -> None:
        self.protocol.send_text(text.encode())
        self._flush()

    def read_until_closed(self, limit_s: float) -> Close | None:
        """Read everything the server sent; the close frame it ended with, if any."""
        self.sock.settimeout(limit_s)
        with self.sock:
            while self.protocol.close_rcvd is None:
                try:
                    self._read(1 << 20)
                except ConnectionResetError:
                    return None
                if self.protocol.state.name == "CLOSED":
                    break
        return self.protocol.close_rcvd


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    flags = ["--send-timeout-s", str(SEND_TIMEOUT_S), "--max-queue", "256"]
    server = ServerProcess(*flags, "--max-queued", "1024", infer_s=INFER_S).start()
    yield server
    server.kill()


async def ping(server: ServerProcess) -> dict[str, int]:
    async with httpx.AsyncClient(timeout=5) as http:
        return (await http.get(server.http_url + PING_PATH)).json()  # type: ignore[no-any-return]


async def normal_turn(server: ServerProcess, segments: int = 5) -> float:
    """Seconds for a reading client to get ``segments`` sentences of audio."""
    started = time.monotonic()
    async with connect(server.ws_url) as ws:
        await ws.recv()  # ready
        for n in range(segments):
            await ws.send(encode(Speak(id=f"n{n}", text=SENTENCE)))
        ended = 0
        async with asyncio.timeout(60):  # a few seconds of speech per segment, at most
            while ended < segments:
                frame = await ws.recv()
                ended += isinstance(frame, str) and isinstance(decode_server(frame), End)
    return time.monotonic() - started


async def stalled(server: ServerProcess) -> StuckClient:
    """A stuck client with ``SEGMENTS`` queued, once the server stopped synthesizing for it."""
    client = StuckClient(server.ws_url)
    for n in range(SEGMENTS):
        client.send(encode(Speak(id=f"s{n}", text=SENTENCE)))
    previous = -1
    async with asyncio.timeout(10):
        while (queued := (await ping(server))["queued"]) != previous:
            previous = queued
            await asyncio.sleep(0.3)
    return client


async def test_a_client_that_stops_reading_pauses_its_synthesis_and_bounds_memory(
    server: ServerProcess,
) -> None:
    alone = await normal_turn(server)  # also warms every code path before the baseline
    baseline = server.rss_bytes()
    client = await stalled(server)
    status = await ping(server)
    assert status["sessions"] == 1 and status["queued"] > SEGMENTS // 2  # paused, not spent
    meanwhile = await normal_turn(server)
    peak = max(server.rss_bytes() for _ in range(5))
    print(f"RSS {baseline / 2**20:.1f} MiB -> {peak / 2**20:.1f} MiB; queued {status['queued']}")
    assert peak - baseline < RSS_BOUND
    assert meanwhile < alone + 1.0  # the other client is not held up by the stuck one
    # Past the deadline the server stops its synthesis and, for CLOSE_GRACE_S, tries to close:
    # a client that reads again then finds a typed close after the audio it was sent.
    async with asyncio.timeout(SEND_TIMEOUT_S + 2):
        while (await ping(server))["in_flight"]:
            await asyncio.sleep(0.05)
    close = await asyncio.to_thread(client.read_until_closed, 10)
    assert close is not None and close.code == POLICY_VIOLATION
    assert close.reason.startswith("send_timeout: the client took no frame for 1 s")
    status = await ping(server)
    assert (status["sessions"], status["queued"], status["in_flight"]) == (0, 0, 0)


async def test_a_client_that_never_reads_again_is_dropped_by_the_kernel(
    server: ServerProcess,
) -> None:
    fds = server.open_fds()
    client = await stalled(server)
    assert server.open_fds() >= fds + 1  # (an earlier test's socket may still be closing)
    async with asyncio.timeout(SEND_TIMEOUT_S + CLOSE_GRACE_S + 5):
        while server.open_fds() > fds:  # the app lets go, then the kernel resets the socket
            await asyncio.sleep(0.1)
    assert (await ping(server))["sessions"] == 0
    assert await asyncio.to_thread(client.read_until_closed, 10) is None  # reset: no close
