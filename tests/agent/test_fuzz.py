"""The agent's request parsers over hostile input: arbitrary bytes, text and JSON values.

The POST body (``decode_json`` then ``parse_request``, as both front doors read it) and a
``/ws`` message (``parse_message``, which parses a prompt with ``parse_request``) give a valid
request or typed message, or a ``BadRequest`` with one of the codes below, nothing else;
through the real dev server, every refused body is a typed JSON error and the server keeps
serving.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent.browser_leg import MIC_MAGIC
from agent.config import AgentConfig
from agent.doors.devserver import create_app
from agent.leg.messages import Config, MicFrame, Prompt, parse_message
from agent.requests import (
    MAX_PROMPT_CHARS,
    OPTION_FIELDS,
    TURN_MODES,
    BadRequest,
    TurnRequest,
    decode_json,
    parse_request,
)
from tests.tts_protocol.test_fuzz import FIELDS, JSON_VALUES
from tts_protocol import MAX_SPEED, MIN_SPEED

FUZZ = settings(max_examples=300, deadline=None)
REQUEST_CODES = {
    "invalid_utf8",
    "invalid_json",
    "invalid_request",
    "invalid_prompt",
    "prompt_too_long",
    "invalid_mode",
    "invalid_voice",
    "invalid_speed",
    "invalid_marks",
    "unknown_field",
}
MESSAGE_CODES = {
    "invalid_utf8",
    "invalid_json",
    "message_too_large",
    "invalid_message",
    "unknown_type",
    "unknown_field",
}
CONFIG_CODES = {"invalid_config", "unknown_field"}
LISTEN_CODES = {"invalid_listen", "unsupported_audio_format", "invalid_heard"}
NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port

REQUESTS = st.fixed_dictionaries(
    {},
    optional={
        "prompt": JSON_VALUES | st.text(max_size=40),
        "mode": JSON_VALUES | st.sampled_from(TURN_MODES),
        "voice": FIELDS["voice"],
        "speed": FIELDS["speed"],
        "marks": JSON_VALUES,
    },
)
WS_MESSAGES = st.fixed_dictionaries(
    {"type": st.sampled_from(["prompt", "cancel", "config", "heard", "listen"]) | JSON_VALUES}
) | REQUESTS.map(lambda fields: {"type": "prompt", **fields})


def parse_body(body: bytes) -> TurnRequest | None:
    """A POST body as the front doors read it: the request, or None for a typed refusal."""
    try:
        request = parse_request(decode_json(body, "the body"))
    except BadRequest as exc:
        assert exc.code in REQUEST_CODES, exc.code
        assert exc.to_json() == {"error": {"code": exc.code, "message": exc.message}}
        return None
    assert request.prompt.strip() and len(request.prompt) <= MAX_PROMPT_CHARS
    assert request.mode in TURN_MODES and isinstance(request.marks, bool)
    assert MIN_SPEED <= request.speed <= MAX_SPEED
    return request


@FUZZ
@given(st.binary(max_size=200))
@example(b"[" * 5000 + b"]" * 5000)
@example(b'{"prompt": "hi", "speed": ' + b"9" * 5000 + b"}")
def test_any_body_is_a_request_or_a_typed_refusal(body: bytes) -> None:
    parse_body(body)


@FUZZ
@given(JSON_VALUES | REQUESTS, st.booleans())
@example({"prompt": "hi", "speed": 10**400}, False)
def test_any_json_body_is_a_request_or_a_typed_refusal(value: object, ascii: bool) -> None:
    parse_body(json.dumps(value, ensure_ascii=ascii).encode())


@FUZZ
@given(st.binary(max_size=200) | st.text(max_size=200))
@example("[" * 5000 + "]" * 5000)
@example("\ud800")
def test_any_frame_is_a_message_or_a_typed_refusal(frame: str | bytes) -> None:
    try:
        message = parse_message(frame)
    except BadRequest as exc:
        assert exc.code in MESSAGE_CODES | CONFIG_CODES | REQUEST_CODES | LISTEN_CODES, exc.code
        return
    is_audio = isinstance(frame, bytes) and frame.startswith(MIC_MAGIC)
    assert isinstance(message, MicFrame) == is_audio  # no text, nor JSON in bytes, is audio


@FUZZ
@given(WS_MESSAGES | JSON_VALUES)
def test_any_json_message_is_parsed_to_the_end_or_refused_typed(value: object) -> None:
    """A message as ``VoiceSocket`` reads it: parsed once, its config or its prompt typed; a
    prompt is refused or accepted exactly as the same fields in a POST body are."""
    try:
        message = parse_message(json.dumps(value))
    except BadRequest as exc:
        assert exc.code in MESSAGE_CODES | CONFIG_CODES | REQUEST_CODES | LISTEN_CODES, exc.code
        if isinstance(value, dict) and value.get("type") == "prompt":
            fields = {k: v for k, v in value.items() if k != "type"}
            assert parse_body(json.dumps(fields).encode()) is None
        return
    if isinstance(message, Config):
        assert set(message.options) == set(message.sent) <= set(OPTION_FIELDS)
    elif isinstance(message, Prompt):
        assert isinstance(value, dict)
        fields = {k: v for k, v in value.items() if k != "type"}
        assert parse_body(json.dumps(fields).encode()) == message.request


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(
        create_app(AgentConfig(model="demo", tts_url=NOWHERE)), base_url="http://localhost"
    ) as client:
        yield client


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200) | JSON_VALUES.map(lambda value: json.dumps(value).encode()))
@example(b"[" * 5000 + b"]" * 5000)
def test_through_the_dev_server_every_refusal_is_a_typed_json_error(
    client: TestClient, body: bytes
) -> None:
    response = client.post("/invocations", content=body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] in REQUEST_CODES
    assert client.get("/ping").json() == {"status": "Healthy"}
