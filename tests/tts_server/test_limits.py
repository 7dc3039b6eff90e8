"""Limits on a client's input, each with a typed answer: frame size and idle connections.

The server is the real ``tts-server`` process (``tests.fake_server``) with small limits, so
that what a client sees is what uvicorn and the app do together: a frame over
``--max-frame-bytes`` ends the connection with 1009; a connection that sends nothing and has
nothing to do for ``--idle-timeout-s`` is closed with 1000 ``idle_timeout``, and a
``TTSSession`` reconnects past it. (Open sessions, queued segments and text length are in
test_admission.py and test_connection.py.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.fake_server import ServerProcess
from tts_client import SessionConfig, TTSSession, WebSocketTransport
from tts_protocol import Error, ErrorCode, Speak, decode_server, encode
from tts_server.connection import NORMAL_CLOSURE
from tts_server.settings import parse_settings

MAX_FRAME = 64 * 1024
IDLE_S = 0.6
MESSAGE_TOO_BIG = 1009


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    flags = ("--max-frame-bytes", str(MAX_FRAME), "--idle-timeout-s", str(IDLE_S))
    server = ServerProcess(*flags).start()
    yield server
    server.kill()


def test_the_limits_come_from_flags_or_environment() -> None:
    defaults = parse_settings([], {})
    assert (defaults.send_timeout_s, defaults.idle_timeout_s) == (30.0, 300.0)
    assert defaults.max_frame_bytes == 1 << 20
    env = {"TTS_SEND_TIMEOUT_S": "5", "TTS_IDLE_TIMEOUT_S": "60", "TTS_MAX_FRAME_BYTES": "4096"}
    settings = parse_settings(["--idle-timeout-s", "9"], env)
    assert (settings.send_timeout_s, settings.idle_timeout_s) == (5.0, 9.0)
    assert settings.max_frame_bytes == 4096
    with pytest.raises(SystemExit):
        parse_settings(["--send-timeout-s", "-1"])


async def test_a_frame_over_the_limit_closes_with_1009_one_under_it_gets_a_typed_error(
    server: ServerProcess,
) -> None:
    async with connect(server.ws_url, max_size=None) as ws:
        await ws.recv()  # ready
        await ws.send(encode(Speak(id="big", text="x" * (MAX_FRAME - 100))))  # under the limit
        error = decode_server(str(await ws.recv()))
        assert isinstance(error, Error) and error.code is ErrorCode.TEXT_TOO_LONG
        await ws.send(b"{" + b" " * MAX_FRAME + b"}")  # one frame, over the limit
        with pytest.raises(ConnectionClosed):
            await ws.recv()
    assert ws.close_code == MESSAGE_TOO_BIG
    assert ws.close_reason == f"frame exceeds limit of {MAX_FRAME} bytes"


async def test_an_idle_connection_is_closed_with_a_typed_reason_frames_keep_it_open(
    server: ServerProcess,
) -> None:
    async with connect(server.ws_url) as ws:
        await ws.recv()  # ready
        for _ in range(3):  # any frame, even a bad one, is activity
            await asyncio.sleep(IDLE_S / 2)
            quiet = time.monotonic()  # the server hears the frame after this, never before
            await ws.send("not json")
            assert decode_server(str(await ws.recv())).code is ErrorCode.INVALID_JSON  # type: ignore[union-attr]
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert IDLE_S <= time.monotonic() - quiet < IDLE_S + 1.0
    assert ws.close_code == NORMAL_CLOSURE
    assert ws.close_reason == f"idle_timeout: no frame for {IDLE_S:g} s"
    assert errors_counted(server, "idle_timeout") >= 1  # in /metrics, as the frames' errors are


def errors_counted(server: ServerProcess, code: str) -> float:
    """``tts_errors_total{code=...}`` from the server's /metrics."""
    text = httpx.get(f"{server.http_url}/metrics", timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "tts_errors_total" and sample.labels.get("code") == code
    )


async def test_a_session_reconnects_past_an_idle_close_and_speaks(server: ServerProcess) -> None:
    config = SessionConfig(backoff_initial=0.05, backoff_max=0.1)
    async with TTSSession(WebSocketTransport(server.ws_url), config) as session:
        await asyncio.sleep(IDLE_S * 1.5)
        stream = await session.speak("Still here after a quiet spell.")
        assert len(await stream.read()) > 0
        assert session.connections >= 2
