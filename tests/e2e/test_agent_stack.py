"""The whole local stack over real sockets: TTS server ← agent (AgentCore app or dev server) ← HTTP.

Every test runs against both front doors, which must behave the same.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import numpy as np
import pytest

from agent.config import AgentConfig
from agent.core.memory import INTERRUPTED_NOTE, NOTHING_HEARD_NOTE
from agent.core.service import VoiceAgent
from agent.doors import agentcore as agentcore_app
from agent.doors import devserver
from tts_server.testing.server_thread import ServerThread

Event = dict[str, Any]
SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
FRONT_DOORS = {"agentcore": agentcore_app.create_app, "devserver": devserver.create_app}


@pytest.fixture(scope="module", params=sorted(FRONT_DOORS))
def agent_server(
    request: pytest.FixtureRequest, tts_server: ServerThread
) -> Iterator[ServerThread]:
    config = AgentConfig(model="demo", tts_url=tts_server.ws_url)
    server = ServerThread(FRONT_DOORS[request.param](config)).start()
    yield server
    server.stop()


def voice_agent(server: ServerThread) -> VoiceAgent:
    return server._server.config.app.state.voice_agent  # type: ignore[no-any-return]


async def sse(response: httpx.Response) -> AsyncIterator[Event]:
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            yield json.loads(line.removeprefix("data:").strip())


async def turn(url: str, payload: dict[str, Any], session: str = "e2e") -> list[Event]:
    async with (
        httpx.AsyncClient(base_url=url, timeout=60) as client,
        client.stream("POST", "/invocations", json=payload, headers={SESSION_HEADER: session}) as r,
    ):
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        return [event async for event in sse(r)]


def kinds(events: list[Event]) -> list[str]:
    return [e["type"] for e in events]


def last_index(items: list[str], value: str) -> int:
    return len(items) - 1 - items[::-1].index(value)


async def test_stream_mode_speaks_sentence_one_before_the_last_text(
    agent_server: ServerThread,
) -> None:
    events = await turn(agent_server.http_url, {"prompt": "Tell me about streaming speech"})
    order = kinds(events)
    assert order[0] == "turn.start" and order[-2:] == ["metrics", "turn.end"]
    assert order.count("segment") >= 4 and order.count("segment") == order.count("segment.end")
    # Sentence one is sent to speech before the text ends (the event order is the producer's);
    # whether its audio also arrives first depends on the machine's load: the benchmark's job.
    assert order.index("segment") < last_index(order, "text.delta")
    pcm = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "audio.delta")
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
    assert samples.size > 24000 * 3 and np.sqrt(np.mean(samples**2)) > 0.03
    metrics = events[-2]
    assert metrics["ttfa_ms"] < metrics["total_ms"] and metrics["segments"] >= 4


async def test_batch_mode_first_audio_after_last_text(agent_server: ServerThread) -> None:
    events = await turn(agent_server.http_url, {"prompt": "Tell me about batch", "mode": "batch"})
    order = kinds(events)
    assert order.index("audio.delta") > last_index(order, "text.delta")
    assert order[-1] == "turn.end"


BAD_BODIES = [
    (b'{"prompt": ', None),  # malformed JSON
    (b"[1, 2]", "invalid_request"),
    (b"{}", "invalid_prompt"),
    (b'{"prompt": 42}', "invalid_prompt"),
    (json.dumps({"prompt": "x" * 5000}).encode(), "prompt_too_long"),
    (b'{"prompt": "hi", "mode": "turbo"}', "invalid_mode"),
    (b'{"prompt": "hi", "voice": "af_nobody"}', "unknown_voice"),
    (b'{"prompt": "hi", "speed": 7}', "invalid_speed"),
]


async def test_bad_input_is_a_4xx_json_error_and_the_next_turn_works(
    agent_server: ServerThread,
) -> None:
    """Every bad body in turn (tests/agent/test_service.py checks each one's code on both
    front doors), then a turn: nothing of the refusals is left behind."""
    async with httpx.AsyncClient(base_url=agent_server.http_url, timeout=30) as client:
        for body, code in BAD_BODIES:
            response = await client.post("/invocations", content=body)
            assert response.status_code == 400, body
            error = response.json()["error"]
            assert code is None or error["code"] == code, body
    events = await turn(agent_server.http_url, {"prompt": "Still there?", "voice": "jm_kumo"})
    assert kinds(events)[-1] == "turn.end" and "audio.delta" in kinds(events)


async def test_client_disconnect_mid_turn_cancels_synthesis(agent_server: ServerThread) -> None:
    session = "disconnect"
    payload = {"prompt": "A long answer please, with many sentences in it"}
    async with (
        httpx.AsyncClient(base_url=agent_server.http_url, timeout=60) as client,
        client.stream("POST", "/invocations", json=payload, headers={SESSION_HEADER: session}) as r,
    ):
        async for event in sse(r):
            if event["type"] == "segment" and event["seq"] >= 2:
                [tts] = voice_agent(agent_server).conversations.pool.lent  # the turn's session
                break  # hang up while segments are in flight
    conversation = voice_agent(agent_server).conversations.get(session)
    current = conversation.current
    assert current is not None
    for _ in range(200):  # the turn stops and the server confirms every cancelled segment
        if current.finished.is_set() and tts.pending == 0:
            break
        await asyncio.sleep(0.05)
    assert current.finished.is_set() and tts.pending == 0
    # Cancelled at once, not run to completion for nobody: the LLM never finished its reply,
    # and the history keeps only what was sent as audio, marked as cut off.
    messages = conversation.agent.messages  # type: ignore[attr-defined]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    [reply] = messages[1]["content"]
    assert reply["text"].endswith(INTERRUPTED_NOTE) or reply["text"] == NOTHING_HEARD_NOTE, reply


async def test_ping_reports_busy_while_a_turn_streams(agent_server: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=agent_server.http_url, timeout=60) as client:
        assert (await client.get("/ping")).json()["status"] == "Healthy"
        async with client.stream(
            "POST", "/invocations", json={"prompt": "busy"}, headers={SESSION_HEADER: "busy"}
        ) as r:
            statuses = set()
            async for event in sse(r):
                if event["type"] == "text.delta":
                    statuses.add((await client.get("/ping")).json()["status"])
        assert "HealthyBusy" in statuses
        for _ in range(100):
            if (await client.get("/ping")).json()["status"] == "Healthy":
                break
            await asyncio.sleep(0.05)
        assert (await client.get("/ping")).json()["status"] == "Healthy"


@pytest.mark.parametrize("front_door", sorted(FRONT_DOORS))
async def test_tts_down_text_still_streams_then_error_then_turn_end(front_door: str) -> None:
    config = AgentConfig(model="demo", tts_url="ws://127.0.0.1:9/invocations-bidirectional-stream")
    server = ServerThread(FRONT_DOORS[front_door](config)).start()
    try:
        events = await turn(server.http_url, {"prompt": "Is anyone listening?"})
    finally:
        server.stop()
    order = kinds(events)
    assert order.count("text.delta") > 5 and "audio.delta" not in order
    assert [e["code"] for e in events if e["type"] == "error"] == ["tts_unavailable"]
    assert order[-1] == "turn.end"
