"""The acceptance test: it passes against the local server, directly and through the gateway, and
fails, on the binary-frame line, against a server that reads only text frames."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from http import HTTPStatus

import pytest
from websockets.asyncio.server import Request, Response, ServerConnection, serve

from tests.tts_client.transports.sdk_shapes import FakeStream, payload_part
from tts_client.acceptance import FAIL, NA, PASS, Acceptance, Check, WebSocketTarget
from tts_client.testing.gateway import Gateway
from tts_client.transports.sagemaker import BINARY, UTF8, SageMakerConnection
from tts_protocol import End, Error, ErrorCode, Ready, Start, encode
from tts_server.testing.server_thread import ServerThread
from voice_agent_cli import cli


def status(checks: list[Check]) -> dict[str, str]:
    return {check.name: check.status for check in checks}


async def test_the_local_server_passes_every_check(tts_server: ServerThread) -> None:
    checks = await Acceptance(WebSocketTarget(tts_server.ws_url)).run()
    assert [c for c in checks if c.status != PASS] == []
    assert len(checks) == 13


async def test_through_the_sagemaker_style_gateway_every_check_passes(
    tts_server: ServerThread,
) -> None:
    async with Gateway(tts_server.ws_url) as gateway:  # client frames arrive as binary
        target = WebSocketTarget(gateway.url, ping_url=f"{tts_server.http_url}/ping")
        checks = await Acceptance(target).run()
    assert [c for c in checks if c.status != PASS] == []
    assert gateway.connections == 1  # every check on one connection


async def text_only_server(websocket: ServerConnection) -> None:
    """A server that reads only text frames: text frames work, a binary frame gets an error."""
    await websocket.send(encode(Ready(voices=("af_heart",), default_voice="af_heart")))
    async for message in websocket:
        if isinstance(message, bytes):  # receive_text() on a binary frame
            error = Error(id=None, code=ErrorCode.INTERNAL, message="expected a text frame")
            await websocket.send(encode(error))
            continue
        request = json.loads(message)
        if not isinstance(request, dict):
            error = Error(id=None, code=ErrorCode.INVALID_MESSAGE, message="not an object")
            await websocket.send(encode(error))
        elif request.get("type") == "speak":
            await websocket.send(encode(Start(id=request["id"])))
            await websocket.send(bytes(4800))
            await websocket.send(encode(End(id=request["id"], samples=2400, synth_ms=1.0)))


def healthy_ping(connection: ServerConnection, request: Request) -> Response | None:
    """``/ping`` says Healthy, as the broken container's did."""
    if request.path == "/ping":
        return connection.respond(HTTPStatus.OK, json.dumps({"status": "Healthy"}))
    return None


@pytest.fixture
async def broken_url() -> AsyncIterator[str]:
    async with serve(text_only_server, "127.0.0.1", 0, process_request=healthy_ping) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/invocations-bidirectional-stream"


async def test_a_server_that_reads_only_text_frames_fails_on_the_binary_line(
    broken_url: str,
) -> None:
    checks = status(await Acceptance(WebSocketTarget(broken_url), timeout_s=5).run())
    assert checks["ping healthy"] == PASS  # /ping alone cannot see it
    assert checks["speak in a binary frame"] == FAIL
    assert checks["speak in a text frame"] == PASS
    assert checks["garbage bytes → invalid_json"] == FAIL
    assert checks["unknown voice → unknown_voice"] == FAIL


async def test_sagemaker_parts_carry_the_data_type_of_the_check() -> None:
    streams: list[FakeStream] = []

    class FakeTarget:  # streams shaped like the SDK's: they answer any speak
        name, ping_url = "sagemaker://fake/kokoro", None

        async def open(self) -> SageMakerConnection:
            streams.append(FakeStream())
            return SageMakerConnection(streams[-1], payload_part)

        async def aclose(self) -> None:
            pass

    checks = (await Acceptance(FakeTarget(), timeout_s=5).run())[:4]
    assert [c.status for c in checks] == [NA, PASS, PASS, PASS]
    assert [event.value.data_type for event in streams[0].sent[:2]] == [BINARY, UTF8]


def test_cli_exits_1_when_the_endpoint_is_down(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(["acceptance", "ws://127.0.0.1:9/invocations-bidirectional-stream"])
    assert exit.value.code == 1
    out = capsys.readouterr().out
    assert "FAIL  ping healthy" in out and "acceptance: FAILED" in out


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the SDK path works on 3.12")
def test_cli_says_plainly_that_sagemaker_needs_python_3_12(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit:
        cli.main(["acceptance", "--endpoint", "kokoro-tts", "--region", "us-east-1"])
    assert exit.value.code == 2
    assert "needs Python >= 3.12" in capsys.readouterr().out
