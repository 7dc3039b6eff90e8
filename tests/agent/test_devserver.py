"""The dev server's own request checks, before any turn starts (no TTS server needed)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from agent.config import AgentConfig
from agent.devserver import MAX_BODY_BYTES, create_app

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(AgentConfig(model="demo", tts_url=NOWHERE))) as client:
        yield client


def test_an_oversized_body_is_413_with_a_typed_error(client: TestClient) -> None:
    body = json.dumps({"prompt": "x" * MAX_BODY_BYTES}).encode()
    response = client.post("/invocations", content=body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"
    assert client.get("/ping").json() == {"status": "Healthy"}  # still serving, not busy


@pytest.mark.parametrize("body", [b"{oops", b"\xff\xfe"])
def test_a_body_that_is_not_json_is_400_invalid_json(client: TestClient, body: bytes) -> None:
    response = client.post("/invocations", content=body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_json"


def test_config_offers_the_websocket_leg_first(client: TestClient) -> None:
    assert client.get("/config").json()["transports"] == ["websocket", "sse"]


def test_the_websocket_leg_answers_without_speech(client: TestClient) -> None:
    """/ws is served even while the TTS server is down; a bad message keeps the socket open."""
    with client.websocket_connect("/ws") as socket:
        assert socket.receive_json()["type"] == "ready"
        socket.send_bytes(b"not json")
        assert socket.receive_json()["code"] == "invalid_json"
        socket.send_json({"type": "cancel"})
        assert socket.receive_json() == {"type": "cancelled", "turn_id": None}
