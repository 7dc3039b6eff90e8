"""Normalization on every route, on by default and off per request: the WebSocket's
``normalize`` field and marks with ``spoken``, ``/invocations``' ``normalize``, and the OpenAI
routes' ``normalization_options`` (Kokoro-FastAPI's names), with typed errors for bad values."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from tests.tts_server.test_connection import Peer, controls
from tts_protocol import Marks, Speak
from tts_server.engines import Engine
from tts_server.testing.server_thread import ServerThread

STREET = "Meet me on Oak St. at 5 p.m."  # misaki alone says "Oak saint", "five p m"


async def test_the_websocket_normalizes_by_default_and_marks_name_the_written_words(
    engine: Engine,
) -> None:
    peer = Peer(engine)
    peer.start()
    try:
        await peer.send(Speak(id="on", text=STREET, marks=True))
        await peer.send(Speak(id="off", text=STREET, marks=True, normalize=False))
        events = await peer.until_terminal("on", "off")
    finally:
        await peer.stop()
    marks = [m for m in controls(events) if isinstance(m, Marks)]
    on = [(w.text, w.spoken) for m in marks if m.id == "on" for w in m.words]
    off = [(w.text, w.spoken) for m in marks if m.id == "off" for w in m.words]
    assert on == [
        ("Meet", None),
        ("me", None),
        ("on", None),
        ("Oak", None),
        ("St.", "Street"),
        ("at", None),
        ("5 p.m.", "five PM"),
    ]
    assert [text for text, _ in off] == ["Meet", "me", "on", "Oak", "St.", "at", "5", "p.m."]
    assert all(spoken is None for _, spoken in off)


def invocation(server: ServerThread, **body: object) -> httpx.Response:
    return httpx.post(f"{server.http_url}/invocations", json={"text": STREET, **body}, timeout=60)


def test_invocations_normalize_unless_asked_not_to(tts_server: ServerThread) -> None:
    on, off, explicit = (
        invocation(tts_server, format="pcm"),
        invocation(tts_server, format="pcm", normalize=False),
        invocation(tts_server, format="pcm", normalize=True),
    )
    assert on.status_code == off.status_code == explicit.status_code == 200
    assert on.content == explicit.content  # on is the default
    assert on.content != off.content  # "Street" and "five PM" are not "saint" and "p m"


def test_invocations_refuse_a_normalize_that_is_not_a_boolean(tts_server: ServerThread) -> None:
    response = invocation(tts_server, normalize="yes")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "'normalize' must be true or false"


def captioned(server: ServerThread, **body: object) -> tuple[httpx.Response, list[dict[str, Any]]]:
    request = {"model": "kokoro", "voice": "jf_alpha", "input": STREET, "response_format": "pcm"}
    response = httpx.post(
        f"{server.http_url}/v1/audio/speech/captioned", json=request | body, timeout=60
    )
    lines = [json.loads(line) for line in response.text.splitlines()] if response.is_success else []
    return response, lines


def test_captioned_words_carry_what_was_said_for_the_written_text(
    tts_server: ServerThread,
) -> None:
    _, lines = captioned(tts_server)
    words = {w["text"]: w.get("spoken") for line in lines for w in line["words"]}
    assert words["St."] == "Street" and words["5 p.m."] == "five PM" and words["Oak"] is None
    _, plain = captioned(tts_server, normalization_options={"normalize": False})
    texts = [w["text"] for line in plain for w in line["words"]]
    assert "p.m." in texts and all("spoken" not in w for line in plain for w in line["words"])
    audio = b"".join(base64.b64decode(line["audio"]) for line in lines)
    assert audio != b"".join(base64.b64decode(line["audio"]) for line in plain)


@pytest.mark.parametrize(
    ("options", "param"),
    [
        ({"normalize": "no"}, "normalization_options.normalize"),
        ({"remove_emoji": True}, "normalization_options.remove_emoji"),
    ],
)
def test_bad_normalization_options_are_refused_in_openai_shape(
    tts_server: ServerThread, options: dict[str, object], param: str
) -> None:
    response = httpx.post(
        f"{tts_server.http_url}/v1/audio/speech",
        json={
            "model": "kokoro",
            "voice": "jf_alpha",
            "input": "Hi.",
            "normalization_options": options,
        },
        timeout=30,
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param


def test_a_switch_of_normalization_options_turns_its_reading_off(tts_server: ServerThread) -> None:
    text = {"input": "Call 555-123-4567 now."}
    _, on = captioned(tts_server, **text)
    _, off = captioned(tts_server, **text, normalization_options={"phone_normalization": False})
    spoken_on = [w.get("spoken") for line in on for w in line["words"]]
    assert "five five five one two three four five six seven" in spoken_on  # the words said
    assert not any(
        s and "five five five" in s
        for line in off
        for s in [w.get("spoken") for w in line["words"]]
    )
