"""What both front doors share: ``VoiceAgent`` against the real local TTS server; body limits,
through both real apps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from starlette.testclient import TestClient

from agent.config import AgentConfig
from agent.core.llm import ModelSpecError
from agent.core.service import DEFAULT_CONVERSATION, VoiceAgent
from agent.doors import agentcore as agentcore_app
from agent.doors import devserver
from agent.doors.wiring import FrontDoor
from agent.requests import BadRequest, parse_request
from tts_protocol import parse_voice
from tts_server.testing.server_thread import ServerThread

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port


@pytest.fixture
async def voice_agent(tts_server: ServerThread) -> AsyncIterator[VoiceAgent]:
    agent = VoiceAgent(AgentConfig(model="demo", tts_url=tts_server.ws_url))
    yield agent
    await agent.aclose()


async def test_a_voice_the_server_lacks_is_refused_before_the_turn(voice_agent: VoiceAgent) -> None:
    with pytest.raises(BadRequest) as refused:
        await voice_agent.start(parse_request({"prompt": "Hi", "voice": "xx_nobody"}), "c1")
    assert refused.value.code == "unknown_voice" and "jf_alpha" in refused.value.message
    assert "('" not in refused.value.message and ", jf_" in refused.value.message  # words
    assert voice_agent.conversations.get("c1").current is None  # no turn was started


async def test_a_voice_the_server_has_starts_a_turn_in_that_conversation(
    voice_agent: VoiceAgent,
) -> None:
    turn = await voice_agent.start(parse_request({"prompt": "Hi", "voice": "jf_alpha"}), "c2")
    assert turn.request.voice == (("jf_alpha", 1.0),)  # parsed once, by the request
    assert voice_agent.conversations.get("c2").current is turn
    assert voice_agent.conversations.busy
    turn.supersede()


async def test_openai_voice_names_are_what_the_tts_servers_v1_makes_of_them(
    voice_agent: VoiceAgent, tts_server: ServerThread
) -> None:
    async with httpx.AsyncClient(base_url=tts_server.http_url) as client:
        v1 = (await client.get("/v1/audio/voices")).json()["openai_voices"]
    for name, voice in v1.items():  # one mapping for every door: /v1, POST, /ws
        assert await voice_agent.check_voice(parse_voice(name)) == ((voice, 1.0),), name
    turn = await voice_agent.start(parse_request({"prompt": "Hi", "voice": "nova"}), "c5")
    assert turn.request.voice == ((v1["nova"], 1.0),)  # the TTS server is sent its own name
    turn.supersede()


async def test_without_a_conversation_the_default_one_is_used(voice_agent: VoiceAgent) -> None:
    turn = await voice_agent.start(parse_request({"prompt": "Hi"}))
    assert voice_agent.conversations.get(DEFAULT_CONVERSATION).current is turn
    turn.supersede()


async def test_both_doors_refuse_malformed_requests_with_the_shared_parser(
    tts_server: ServerThread,
) -> None:
    door = FrontDoor(AgentConfig(model="demo", tts_url=tts_server.ws_url), None)
    try:
        for payload, code in (
            ({"prompt": "Hi", "speed": 9}, "invalid_speed"),
            ([], "invalid_request"),
        ):
            with pytest.raises(BadRequest) as refused:
                await door.start(payload, "c3")
            assert refused.value.code == code
        turn = await door.start({"prompt": "Hi"}, "c3")
        assert door.busy and door.voice_agent.conversations.get("c3").current is turn
        turn.supersede()
    finally:
        await door.voice_agent.aclose()


async def test_while_speech_is_down_any_voice_name_is_let_through() -> None:
    agent = VoiceAgent(AgentConfig(model="demo", tts_url=NOWHERE))
    try:
        turn = await agent.start(parse_request({"prompt": "Hi", "voice": "xx_nobody"}))
        assert turn.request.voice == (("xx_nobody", 1.0),)  # speech down: the turn reports it
        turn.supersede()
    finally:
        await agent.aclose()


def test_a_bad_model_spec_fails_at_once() -> None:
    with pytest.raises(ModelSpecError):
        VoiceAgent(AgentConfig(model="nonsense:spec", tts_url=NOWHERE))


# --- the bodies both front doors read -----------------------------------------


FRONT_DOORS = {"agentcore": agentcore_app.create_app, "devserver": devserver.create_app}


@pytest.fixture(scope="module", params=sorted(FRONT_DOORS))
def front_door(request: pytest.FixtureRequest) -> Iterator[TestClient]:
    config = AgentConfig(model="demo", tts_url=NOWHERE)
    with TestClient(FRONT_DOORS[request.param](config), base_url="http://localhost") as client:
        yield client


def chunks(total: int) -> Iterator[bytes]:
    """A body of ``total`` bytes in 8 KiB chunks, sent without a Content-Length."""
    for start in range(0, total, 8192):
        yield b" " * min(8192, total - start)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{" + b" " * 64 * 1024 + b"}", 413, "body_too_large"),  # 64 KiB
        (64 * 1024 + 1, 413, "body_too_large"),  # sent chunked: counted as it comes
        (b"[" * 5000 + b"]" * 5000, 400, "invalid_json"),
        (b"{oops", 400, "invalid_json"),
        (b'{"prompt": ' + b"1" * 5000 + b"}", 400, "invalid_json"),
        (b"[]", 400, "invalid_request"),
        (json.dumps({"prompt": "x" * 4001}).encode(), 400, "prompt_too_long"),
        (json.dumps({"prompt": "hi", "speed": 10**400}).encode(), 400, "invalid_speed"),
    ],
)
def test_both_front_doors_refuse_a_body_alike(
    front_door: TestClient, body: bytes | int, status: int, code: str
) -> None:
    content = chunks(body) if isinstance(body, int) else body
    response = front_door.post("/invocations", content=content)
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    assert front_door.get("/ping").json()["status"] == "Healthy"  # still serving, no turn


def test_the_longest_prompt_fits_both_the_body_and_a_message() -> None:
    """A prompt at the limit is refused by no size limit first, however its characters encode."""
    prompt = "😀" * 4000  # the limit; four bytes each in UTF-8
    body = json.dumps({"type": "prompt", "prompt": prompt}, ensure_ascii=False).encode()
    assert len(body) <= 32 * 1024  # a /ws message
    assert len(json.dumps({"prompt": prompt}).encode()) <= 64 * 1024  # a body; escaped: 12 bytes
