"""A client that goes away at any stage of a turn: synthesis for it stops within one segment.

The TTS server runs the fake engine with a fixed time per inference, and the demo model
writes faster than that, so segments queue on the server. When the client hangs up (before the
first token, mid-text, mid-audio; over SSE and over ``/ws``), the engine's inference count at
that moment is compared with its count once the turn has stopped and the server is idle: at
most one more segment may start (the one the server was already taking up).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from agent.browser_leg import SESSION_HEADER
from agent.config import AgentConfig
from agent.core.llm import DemoModel
from agent.core.memory import INTERRUPTED_NOTE, NOTHING_HEARD_NOTE
from agent.core.service import VoiceAgent
from agent.core.turn import Turn
from agent.doors import devserver
from tests.conftest import start_server
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

SENTENCES = 8
INFER_S = 0.15  # per segment: the demo model (400 tokens/s) cuts sentences faster than this
STAGES = ("before_first_token", "mid_text", "mid_audio")
WAIT_S = 10.0


@pytest.fixture(scope="module")
def fake() -> FakeEngine:
    return FakeEngine(delay_s=INFER_S)


@pytest.fixture(scope="module")
def tts(fake: FakeEngine) -> Iterator[ServerThread]:
    server = start_server(fake)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def agent_server(tts: ServerThread) -> Iterator[ServerThread]:
    server = ServerThread(devserver.create_app(AgentConfig(model="demo", tts_url=tts.ws_url)))
    yield server.start()
    server.stop()


def voice_agent(server: ServerThread) -> VoiceAgent:
    return server._server.config.app.state.voice_agent  # type: ignore[no-any-return]


def prepare(server: ServerThread, key: str, stage: str) -> None:
    """A conversation whose demo model writes ``SENTENCES`` sentences at 400 tokens/s."""
    model = voice_agent(server).conversations.get(key).agent.model  # type: ignore[attr-defined]
    assert isinstance(model, DemoModel)
    delay = 1.0 if stage == "before_first_token" else 0.01
    model.update_config(sentences=SENTENCES, tokens_per_second=400, first_token_delay_s=delay)


def reached(stage: str, event: dict[str, Any]) -> bool:
    """Whether the client has seen enough of the turn to hang up at ``stage``."""
    wanted = {"before_first_token": "turn.start", "mid_text": "text.delta"}
    return event["type"] == wanted.get(stage, "audio.delta")


async def hang_up_over_sse(url: str, key: str, stage: str) -> list[str]:
    seen: list[str] = []
    headers = {SESSION_HEADER: key}
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as client,
        client.stream("POST", "/invocations", json={"prompt": key}, headers=headers) as r,
    ):
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                event = json.loads(line.removeprefix("data:"))
                seen.append(event["type"])
                if reached(stage, event):
                    break
    return seen


async def hang_up_over_ws(url: str, key: str, stage: str) -> list[str]:
    seen: list[str] = []
    ws_url = url.replace("http", "ws", 1) + f"/ws?{SESSION_HEADER}={key}"
    async with connect(ws_url) as websocket:
        await websocket.recv()  # ready
        await websocket.send(json.dumps({"type": "prompt", "prompt": key}))
        async for frame in websocket:
            event = {"type": "audio.delta"} if isinstance(frame, bytes) else json.loads(frame)
            seen.append(event["type"])
            if reached(stage, event):
                websocket.transport.abort()  # gone, without a close handshake
                break
    return seen


async def idle(tts: ServerThread, turn: Turn) -> None:
    """Wait until the turn has stopped and the server synthesizes and queues nothing."""
    deadline = time.monotonic() + WAIT_S
    async with httpx.AsyncClient(base_url=tts.http_url, timeout=5) as client:
        while time.monotonic() < deadline:
            counts = (await client.get("/ping")).json()
            if turn.finished.is_set() and counts["in_flight"] == counts["queued"] == 0:
                return
            await asyncio.sleep(0.02)
    raise AssertionError(f"still busy {WAIT_S} s after the client left: {counts}")


@pytest.mark.parametrize("leg", ["sse", "ws"])
@pytest.mark.parametrize("stage", STAGES)
async def test_synthesis_stops_within_one_segment_of_a_disconnect(
    agent_server: ServerThread, tts: ServerThread, fake: FakeEngine, stage: str, leg: str
) -> None:
    key = f"gone-{stage}-{leg}"
    prepare(agent_server, key, stage)
    before = fake.calls
    hang_up = hang_up_over_sse if leg == "sse" else hang_up_over_ws
    seen = await hang_up(agent_server.http_url, key, stage)
    at_disconnect = fake.calls
    conversation = voice_agent(agent_server).conversations.get(key)
    assert conversation.current is not None
    await idle(tts, conversation.current)
    after_disconnect = fake.calls - at_disconnect
    assert after_disconnect <= 1, f"{after_disconnect} segments synthesized after {stage}"
    assert fake.calls - before < SENTENCES  # the rest of the reply was never spoken
    assert "turn.end" not in seen
    if stage != "mid_audio":
        assert "audio.delta" not in seen
    if stage == "before_first_token":
        assert fake.calls == before  # nothing was ever sent to speech
    # the LLM was stopped too: the history keeps the prompt and what was sent as audio, cut
    messages = conversation.agent.messages  # type: ignore[attr-defined]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    [reply] = messages[1]["content"]
    if stage == "before_first_token":
        assert reply["text"] == NOTHING_HEARD_NOTE
    else:
        assert reply["text"].endswith(INTERRUPTED_NOTE) or reply["text"] == NOTHING_HEARD_NOTE
