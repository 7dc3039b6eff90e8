"""Hostile JSON on every TTS server entry point: a typed ``invalid_json``, and it keeps serving.

Five thousand nested arrays make ``json.loads`` raise ``RecursionError``, and an integer of more
than 4,300 digits a plain ``ValueError``; neither may escape as a 500 or a dropped socket.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from websockets.sync.client import connect

from tests.conftest import start_server
from tts_protocol import Error, ErrorCode, Ready, Speak, decode_server, encode
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

NESTED = b"[" * 5000 + b"]" * 5000
HOSTILE = [
    NESTED,
    b'{"text": ' + NESTED + b"}",
    b'{"text": "hi", "speed": ' + b"9" * 5000 + b"}",
]


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    served = start_server(FakeEngine())
    yield served
    served.stop()


@pytest.mark.parametrize("body", HOSTILE, ids=["nested", "nested-field", "long-integer"])
def test_invocations_answer_hostile_json_with_invalid_json(
    server: ServerThread, body: bytes
) -> None:
    response = httpx.post(f"{server.http_url}/invocations", content=body, timeout=10)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == ErrorCode.INVALID_JSON
    assert httpx.get(f"{server.http_url}/ping", timeout=10).status_code == 200


@pytest.mark.parametrize("body", HOSTILE, ids=["nested", "nested-field", "long-integer"])
def test_openai_speech_answers_hostile_json_with_invalid_json(
    server: ServerThread, body: bytes
) -> None:
    response = httpx.post(f"{server.http_url}/v1/audio/speech", content=body, timeout=10)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"  # pydantic's parser, its limits


def test_the_stream_answers_hostile_frames_and_keeps_the_connection(server: ServerThread) -> None:
    with connect(server.ws_url) as socket:
        assert isinstance(decode_server(socket.recv()), Ready)
        for frame in (NESTED, NESTED.decode(), HOSTILE[2]):
            socket.send(frame)
            error = decode_server(socket.recv())
            assert isinstance(error, Error) and error.code == ErrorCode.INVALID_JSON
        socket.send(encode(Speak(id="after", text="Still here.")))
        assert decode_server(socket.recv()).type == "start"  # type: ignore[union-attr]
