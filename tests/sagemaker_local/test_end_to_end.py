"""Agent turn → real SDK → emulator → real ``tts_server`` → audio (Python >= 3.12 job).

The TTS server runs as a child process of the main venv's interpreter (``$TTS_SERVER_PYTHON``,
default ``.venv/bin/python``: it has onnxruntime and the embedded Kokoro model; this venv has
neither). A container that reads only text frames, in front of the same server, shows the
failure the acceptance test exists for: its ``/ping`` stays healthy, the acceptance test through
the emulator fails.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the SageMaker SDK needs Python >= 3.12", allow_module_level=True)

from websockets.asyncio.client import connect
from websockets.asyncio.server import Request, Response, ServerConnection, serve

from agent.core.turn import Turn
from agent.requests import TurnRequest
from sagemaker_local.emulator import SageMakerEmulator
from tests.sagemaker_local.helpers import local_tls, transport_for
from tts_client import SessionConfig, SessionPool
from tts_client.acceptance import FAIL, NA, PASS, Acceptance, SageMakerTarget
from tts_protocol import BYTES_PER_SAMPLE, PING_PATH, samples_ms
from voice_agent_cli.local_tts import local_tts

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def tts_server() -> Iterator[str]:
    """The real TTS server (embedded int8 ONNX model): its ``http://`` address."""
    python = os.environ.get("TTS_SERVER_PYTHON") or str(ROOT / ".venv/bin/python")
    if not Path(python).exists():
        pytest.fail(f"no interpreter with the tts extra at {python}: set TTS_SERVER_PYTHON")
    os.environ["TTS_SERVER_PYTHON"] = python
    port = _free_port()
    with local_tts("127.0.0.1", port):
        yield f"http://127.0.0.1:{port}"


class Sentences:
    """A text model (the strands ``stream_async`` shape) that streams fixed sentences."""

    def __init__(self, *sentences: str) -> None:
        self._text = " ".join(sentences)

    async def stream_async(self, prompt: str) -> AsyncIterator[dict[str, Any]]:
        for word in self._text.split(" "):
            yield {"data": word + " "}


async def test_agent_turn_speaks_through_the_emulator(tts_server: str, tmp_path: Path) -> None:
    async with SageMakerEmulator(tts_server, local_tls(tmp_path)) as emulator:
        transport = transport_for(emulator)
        pool = SessionPool(transport, SessionConfig(connect_timeout=30, reply_timeout=60))
        try:
            llm = Sentences("Hello from the local endpoint.", "The stream is working.")
            turn = Turn(TurnRequest("Say hello"), llm, pool)  # borrows, as a conversation does
            events = [event.to_dict() async for event in turn.run()]
            assert pool.lent == set() and pool.idle == 1  # given back warm
        finally:
            await pool.aclose()
        await transport.aclose()

    kinds = [event["type"] for event in events]
    assert kinds[0] == "turn.start" and kinds[-1] == "turn.end"
    assert [e["text"] for e in events if e["type"] == "segment"] == [
        "Hello from the local endpoint.",
        "The stream is working.",
    ]
    pcm = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "audio.delta")
    ends = [e for e in events if e["type"] == "segment.end"]
    audio_ms = sum(e["audio_ms"] for e in ends)
    assert len(ends) == 2 and audio_ms > 1000
    assert abs(samples_ms(len(pcm) // BYTES_PER_SAMPLE) - audio_ms) < 1  # every byte arrived
    (invocation,) = emulator.invocations  # one stream carried the whole turn
    assert {p.data_type for p in invocation.parts} == {"UTF8"}


async def _acceptance(emulator: SageMakerEmulator, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """``voice-agent acceptance --endpoint`` as a user runs it: the SDK configured by env."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2", emulator.url)
    monkeypatch.setenv("TTS_SAGEMAKER_CA_BUNDLE", str(emulator.tls.ca_file))
    target = SageMakerTarget(emulator.endpoint_name, "us-east-1")
    return await Acceptance(target, timeout_s=60).run()


async def test_acceptance_passes_through_the_emulator(
    tts_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with SageMakerEmulator(tts_server, local_tls(tmp_path)) as emulator:
        checks = await _acceptance(emulator, monkeypatch)
    failed = [c for c in checks if c.status == FAIL]
    assert failed == []
    assert {c.status for c in checks} <= {PASS, NA} and sum(c.status == PASS for c in checks) > 5


class TextOnlyContainer:
    """A container that calls ``receive_text()`` only: binary frames get an error.

    It answers ``/ping`` (healthy) and relays text frames to the real server, so everything
    but the frame type works.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = "ws" + upstream.removeprefix("http") + "/invocations-bidirectional-stream"

    def ping(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path == PING_PATH:
            return connection.respond(200, "healthy\n")
        return None

    async def handle(self, client: ServerConnection) -> None:
        async with connect(self.upstream) as server:
            await client.send(await server.recv())  # ready
            async for message in client:
                if isinstance(message, bytes):  # receive_text() raised KeyError('text')
                    error = {
                        "type": "error",
                        "id": None,
                        "code": "internal_error",
                        "message": "KeyError('text')",
                    }
                    await client.send(json.dumps(error))
                    continue
                await server.send(message)
                while (reply := await server.recv()) and not _terminal(reply):
                    await client.send(reply)
                await client.send(reply)


def _ping(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        return int(response.status)


def _terminal(reply: str | bytes) -> bool:
    return isinstance(reply, str) and json.loads(reply).get("type") in ("end", "error", "cancelled")


async def test_text_only_container_fails_acceptance_while_ping_is_healthy(
    tts_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = TextOnlyContainer(tts_server)
    async with serve(container.handle, "127.0.0.1", 0, process_request=container.ping) as server:
        address = f"http://127.0.0.1:{next(iter(server.sockets)).getsockname()[1]}"
        status = await asyncio.to_thread(_ping, address + PING_PATH)
        assert status == 200  # SageMaker would report the endpoint InService
        async with SageMakerEmulator(address, local_tls(tmp_path)) as emulator:
            checks = await _acceptance(emulator, monkeypatch)
    failed = [c.name for c in checks if c.status == FAIL]
    assert any("binary" in name for name in failed), [(c.name, c.status) for c in checks]
