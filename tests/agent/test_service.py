"""``VoiceAgent``: what both front doors share, against the real local TTS server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.config import AgentConfig
from agent.llm import ModelSpecError
from agent.pipeline import BadRequest
from agent.service import DEFAULT_CONVERSATION, VoiceAgent
from tests.servers import ServerThread

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port


@pytest.fixture
async def voice_agent(tts_server: ServerThread) -> AsyncIterator[VoiceAgent]:
    agent = VoiceAgent(AgentConfig(model="demo", tts_url=tts_server.ws_url))
    yield agent
    await agent.aclose()


async def test_a_voice_the_server_lacks_is_refused_before_the_turn(voice_agent: VoiceAgent) -> None:
    with pytest.raises(BadRequest) as refused:
        await voice_agent.start({"prompt": "Hi", "voice": "xx_nobody"}, "c1")
    assert refused.value.code == "unknown_voice" and "jf_alpha" in refused.value.message
    assert voice_agent.conversations.get("c1").current is None  # no turn was started


async def test_a_voice_the_server_has_starts_a_turn_in_that_conversation(
    voice_agent: VoiceAgent,
) -> None:
    turn = await voice_agent.start({"prompt": "Hi", "voice": "jf_alpha"}, "c2")
    assert turn.request.voice == "jf_alpha"
    assert voice_agent.conversations.get("c2").current is turn
    assert voice_agent.conversations.busy
    turn.supersede()


async def test_without_a_conversation_the_default_one_is_used(voice_agent: VoiceAgent) -> None:
    turn = await voice_agent.start({"prompt": "Hi"})
    assert voice_agent.conversations.get(DEFAULT_CONVERSATION).current is turn
    turn.supersede()


async def test_malformed_requests_are_refused_by_the_shared_parser(
    voice_agent: VoiceAgent,
) -> None:
    for payload, code in (({"prompt": "Hi", "speed": 9}, "invalid_speed"), ([], "invalid_request")):
        with pytest.raises(BadRequest) as refused:
            await voice_agent.start(payload, "c3")
        assert refused.value.code == code


async def test_while_speech_is_down_any_voice_name_is_let_through() -> None:
    agent = VoiceAgent(AgentConfig(model="demo", tts_url=NOWHERE))
    try:
        turn = await agent.start({"prompt": "Hi", "voice": "xx_nobody"})
        assert turn.request.voice == "xx_nobody"  # the turn itself reports tts_unavailable
        turn.supersede()
    finally:
        await agent.aclose()


def test_a_bad_model_spec_fails_at_once() -> None:
    with pytest.raises(ModelSpecError):
        VoiceAgent(AgentConfig(model="nonsense:spec", tts_url=NOWHERE))
