"""Tool calls through both front doors, over SSE and ``/ws``, on the real TTS server: the agent
is the one ``VOICE_AGENT_FACTORY`` names (``tests/agent/tool_model.py``: a scripted strands model
that emits real ``toolUse`` events, the example's tools, a failing and a slow tool)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from strands import Agent

from agent.core.memory import INTERRUPTED_NOTE
from agent.testing.tool_model import AFTER, BEFORE, FAILED, PLAIN, ToolScript, prompt
from tests.agent.leg.test_ws import (
    FRONT_DOORS,
    RECEIVE_S,
    Frame,
    kinds,
    open_socket,
    until,
    voice_agent,
)
from tts_server.testing.server_thread import ServerThread

FACTORY = "tests.agent.tool_model:create_agent"


@pytest.fixture(scope="module", params=sorted(FRONT_DOORS))
def tool_server(request: pytest.FixtureRequest, tts_server: ServerThread) -> Iterator[ServerThread]:
    """A front door whose settings, the agent factory included, come from the environment."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("VOICE_AGENT_FACTORY", FACTORY)
        env.setenv("TTS_URL", tts_server.ws_url)
        app = FRONT_DOORS[request.param]()  # no config: AgentConfig.from_env()
    server = ServerThread(app).start()
    yield server
    server.stop()


def at(frames: list[Frame], kind: str, **fields: object) -> int:
    """Where the first text frame of type ``kind`` with ``fields`` is."""
    for i, frame in enumerate(frames):
        matches = isinstance(frame, dict) and frame["type"] == kind
        if matches and all(frame.get(k) == v for k, v in fields.items()):  # type: ignore[union-attr]
            return i
    raise AssertionError(f"no {kind} {fields} in {kinds(frames)}")


def texts(frames: list[Frame]) -> list[str]:
    return [f["text"] for f in frames if isinstance(f, dict) and f["type"] == "segment"]


def model_of(server: ServerThread, conversation: str) -> ToolScript:
    agent = voice_agent(server).conversations.get(conversation).agent
    assert isinstance(agent, Agent) and isinstance(agent.model, ToolScript)
    return agent.model


async def test_the_factory_from_the_environment_builds_the_agent(
    tool_server: ServerThread,
) -> None:
    agent = voice_agent(tool_server).conversations.get("env").agent
    assert isinstance(agent, Agent)
    assert agent.tool_names == [
        "time_in",
        "calculate",
        "convert_units",
        "broken_lookup",
        "slow_lookup",
        "blocking_lookup",
    ]


async def test_over_sse_a_tool_call_is_told_and_spoken_around(tool_server: ServerThread) -> None:
    body = {"prompt": prompt("convert_units", value=5, from_unit="miles", to_unit="km")}
    events: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(base_url=tool_server.http_url, timeout=RECEIVE_S) as http,
        http.stream("POST", "/invocations", json=body) as sse,
    ):
        async for line in sse.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
        scraped = (await http.get("/metrics")).text
    frames: list[Frame] = list(events)
    start = at(frames, "tool.start", name="convert_units")
    end = at(frames, "tool.end", id=events[start]["id"], status="ok")
    assert at(frames, "segment", text=BEFORE) < start < end < at(frames, "segment", text=AFTER)
    assert texts(frames)[-1] == "5 miles is 8.047 km."
    audio = {e["seq"] for e in events if e["type"] == "audio.delta"}
    assert audio == {0, 1, 2}  # speech before and after the tool
    assert [e["type"] for e in events][-2:] == ["metrics", "turn.end"]
    assert 'agent_tool_seconds_count{status="ok",tool="convert_units"} 1.0' in scraped


async def test_over_ws_a_tool_call_is_told_between_the_audio(tool_server: ServerThread) -> None:
    async with await open_socket(tool_server, "ws-tool") as socket:
        await socket.send(json.dumps({"type": "prompt", "prompt": prompt("time_in", city="Tokyo")}))
        frames = await until(socket, "turn.end")
    start = at(frames, "tool.start", name="time_in")
    end = at(frames, "tool.end", id=frames[start]["id"], status="ok")  # type: ignore[index]
    assert at(frames, "segment", text=BEFORE) < start < end < at(frames, "segment", text=AFTER)
    assert texts(frames)[-1].endswith("in Tokyo.")
    audio = [f for f in frames if isinstance(f, bytes)]
    assert {int.from_bytes(f[:4], "big") for f in audio} == {0, 1, 2}
    assert any(isinstance(f, bytes) for f in frames[end:])  # speech after the tool


async def test_over_ws_a_failing_tool_is_told_and_the_reply_goes_on(
    tool_server: ServerThread,
) -> None:
    async with await open_socket(tool_server, "ws-broken") as socket:
        text = prompt("broken_lookup", query="flights")
        await socket.send(json.dumps({"type": "prompt", "prompt": text}))
        frames = await until(socket, "turn.end")
    end = at(frames, "tool.end", name="broken_lookup", status="error")
    assert end < at(frames, "segment", text=FAILED)
    assert "error" not in kinds(frames)  # the model's to handle, not the turn's
    [result] = [
        b["toolResult"] for b in model_of(tool_server, "ws-broken").calls[-1][-1]["content"]
    ]
    assert result["status"] == "error" and "the database is down" in json.dumps(result)


async def test_over_ws_a_cancel_during_a_slow_tool_keeps_only_what_was_heard(
    tool_server: ServerThread,
) -> None:
    asked = prompt("slow_lookup", query="weather")
    async with await open_socket(tool_server, "ws-slow") as socket:
        await socket.send(json.dumps({"type": "prompt", "prompt": asked}))
        frames = await until(socket, "tool.start")
        if "segment.end" not in kinds(frames):  # the text before the tool was all sent
            frames += await until(socket, "segment.end")
        await socket.send('{"type": "cancel"}')
        stopped = await until(socket, "cancelled")
        assert "tool.end" not in kinds(stopped)  # nothing of the turn follows the cancel
        await socket.send(json.dumps({"type": "prompt", "prompt": "Never mind"}))
        after = await until(socket, "turn.end")
    assert texts(after) == [PLAIN]
    user, heard, _ = model_of(tool_server, "ws-slow").calls[-1]
    assert user["content"] == [{"text": asked}]
    assert heard["content"] == [{"text": f"{BEFORE} {INTERRUPTED_NOTE}"}]  # no half tool call
