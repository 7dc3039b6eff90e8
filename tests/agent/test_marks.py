"""The agent relays word timings: ``segment.marks`` events, only for requests that ask.

One short demo turn against the real local TTS server, with and without ``marks``.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.core.turn import Turn
from agent.leg.messages import parse_config
from agent.requests import BadRequest, TurnRequest, parse_request
from tests.agent.core.test_turn import collect, demo_agent, source
from tts_client import TTSSession, WebSocketTransport
from tts_server.testing.server_thread import ServerThread

PROMPT = "Hello there"  # the demo model answers "You said: Hello there."


async def turn_events(tts_server: ServerThread, marks: bool) -> list[dict[str, Any]]:
    async with TTSSession(WebSocketTransport(tts_server.ws_url)) as session:
        request = TurnRequest(prompt=PROMPT, marks=marks)
        turn = Turn(request, demo_agent(sentences=1, rate=400.0), source(session))
        return await collect(turn)


async def test_marks_are_relayed_before_the_audio_they_time(tts_server: ServerThread) -> None:
    events = await turn_events(tts_server, marks=True)
    kinds = [e["type"] for e in events]
    marks = [e for e in events if e["type"] == "segment.marks"]
    assert marks and kinds.index("segment.marks") < kinds.index("audio.delta")
    words = [w for e in marks for w in e["words"]]
    assert all(e["seq"] == 0 for e in marks)
    assert [w["text"] for w in words] == ["You", "said", "Hello", "there"]
    (end,) = [e for e in events if e["type"] == "segment.end"]
    starts = [w["start_ms"] for w in words]
    assert starts == sorted(starts) and starts[0] >= 0 and words[-1]["end_ms"] <= end["audio_ms"]


async def test_without_marks_the_events_are_as_before(tts_server: ServerThread) -> None:
    events = await turn_events(tts_server, marks=False)
    assert "segment.marks" not in {e["type"] for e in events}
    assert any(e["type"] == "audio.delta" for e in events)


def test_marks_is_a_boolean_in_requests_and_socket_config() -> None:
    assert parse_request({"prompt": "Hi", "marks": True}).marks is True
    assert parse_request({"prompt": "Hi"}).marks is False
    with pytest.raises(BadRequest) as caught:
        parse_request({"prompt": "Hi", "marks": "yes"})
    assert caught.value.code == "invalid_marks"
    assert parse_config({"type": "config", "marks": True}).options == {"marks": True}
    with pytest.raises(BadRequest) as caught:
        parse_config({"type": "config", "marks": 1})
    assert caught.value.code == "invalid_config" and "marks" in caught.value.message
