"""The playback report over ``/ws`` (a ``heard`` message), through both front doors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from strands import Agent
from websockets.asyncio.client import ClientConnection, connect

from agent.browser_leg import SESSION_HEADER
from agent.config import AgentConfig
from agent.core.memory import INTERRUPTED_NOTE
from agent.core.service import VoiceAgent
from agent.doors import agentcore as agentcore_app
from agent.doors import devserver
from tests.conftest import start_server
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

FRONT_DOORS = {"agentcore": agentcore_app.create_app, "devserver": devserver.create_app}
RECEIVE_S = 30


@pytest.fixture(scope="module")
def fake_server() -> Iterator[ServerThread]:
    server = start_server(FakeEngine())
    yield server
    server.stop()


@pytest.fixture(scope="module", params=sorted(FRONT_DOORS))
def agent_server(
    request: pytest.FixtureRequest, fake_server: ServerThread
) -> Iterator[ServerThread]:
    config = AgentConfig(model="demo", tts_url=fake_server.ws_url)
    server = ServerThread(FRONT_DOORS[request.param](config)).start()
    yield server
    server.stop()


def agent_of(server: ServerThread, conversation: str) -> Agent:
    voice_agent: VoiceAgent = server._server.config.app.state.voice_agent
    agent = voice_agent.conversations.get(conversation).agent
    assert isinstance(agent, Agent)
    return agent


async def frames_until(socket: ClientConnection, kind: str) -> list[dict[str, Any]]:
    """The text frames up to and including the first of type ``kind`` (audio skipped)."""
    frames: list[dict[str, Any]] = []
    async with asyncio.timeout(RECEIVE_S):
        while not frames or frames[-1]["type"] != kind:
            data = await socket.recv()
            if isinstance(data, str):
                frames.append(json.loads(data))
    return frames


async def test_a_heard_message_trims_the_turn_before_the_next_prompt(
    agent_server: ServerThread,
) -> None:
    agent = agent_of(agent_server, "ws-heard")
    agent.model.update_config(sentences=3, first_token_delay_s=0.0)
    url = f"ws://127.0.0.1:{agent_server.port}/ws"
    async with connect(url, additional_headers={SESSION_HEADER: "ws-heard"}) as socket:
        await frames_until(socket, "ready")
        await socket.send(json.dumps({"type": "prompt", "prompt": "Tell me about sockets"}))
        frames = await frames_until(socket, "turn.end")
        turn_id = frames[0]["turn_id"]
        sentences = [f["text"] for f in frames if f["type"] == "segment"]
        # The page played sentence one, then stopped at the very start of sentence two.
        await socket.send(json.dumps({"type": "heard", "turn_id": turn_id, "seq": 1, "ms": 1}))
        await socket.send(json.dumps({"type": "prompt", "prompt": "Go on"}))
        frames = await frames_until(socket, "turn.end")
        assert not [f for f in frames if f["type"] == "error"]  # `heard` has no answer
    assert [(m["role"], m["content"][0]["text"]) for m in agent.messages[:3]] == [
        ("user", "Tell me about sockets"),
        ("assistant", f"{sentences[0]} {INTERRUPTED_NOTE}"),
        ("user", "Go on"),
    ]


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"type": "heard", "turn_id": "ab", "seq": 0}, "invalid_heard"),
        ({"type": "heard", "turn_id": "ab", "seq": 0, "ms": -1}, "invalid_heard"),
        ({"type": "heard", "turn_id": "ab", "seq": 0, "ms": 1, "at": 2}, "unknown_field"),
    ],
)
async def test_a_bad_heard_message_is_refused_and_the_socket_keeps_serving(
    agent_server: ServerThread, message: dict[str, Any], code: str
) -> None:
    url = f"ws://127.0.0.1:{agent_server.port}/ws"
    async with connect(url, additional_headers={SESSION_HEADER: "ws-bad-heard"}) as socket:
        await frames_until(socket, "ready")
        await socket.send(json.dumps(message))
        [error] = await frames_until(socket, "error")
        assert (error["code"], error["in_reply_to"]) == (code, "heard")
        await socket.send(json.dumps({"type": "config", "speed": 1.1}))
        assert (await frames_until(socket, "config"))[-1] == {"type": "config", "speed": 1.1}
