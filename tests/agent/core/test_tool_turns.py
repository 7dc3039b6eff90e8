"""Turns whose reply calls a tool (``agent/core/tool_calls.py``, ``agent/core/turn.py``): a
scripted strands model that emits real ``toolUse`` events (``agent/testing/tool_model.py``) with
the example's tools and the tests' own (``tests/agent/tool_model.py``), a voiced agent, speech
from a real TTS server on the fast fake engine.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent.core.conversations import Conversations
from agent.core.factory import VoiceFactory
from agent.core.memory import INTERRUPTED_NOTE
from agent.core.tool_calls import Filler
from agent.events import Event, SegmentEnd, ToolStart
from agent.requests import TurnRequest
from agent.testing.tool_model import AFTER, BEFORE, FAILED, PLAIN, ToolScript, prompt
from tests.agent.tool_model import BLOCKING_DONE, RELEASE, SLOW_CANCELLED, create_agent
from tts_client import WebSocketTransport
from tts_server.testing.server_thread import ServerThread

FACTORY = VoiceFactory.check(create_agent)


@pytest.fixture
async def conversations(fake_tts: ServerThread) -> AsyncIterator[Conversations]:
    opened = Conversations(FACTORY, WebSocketTransport(fake_tts.ws_url))
    yield opened
    await opened.aclose()


async def run_turn(conversations: Conversations, text: str, key: str) -> list[dict[str, Any]]:
    turn = await conversations.get(key).start_turn(TurnRequest(prompt=text))
    return [event.to_dict() async for event in turn.run()]


def index(events: list[dict[str, Any]], kind: str, **fields: object) -> int:
    """Where the first event of type ``kind`` with ``fields`` is."""
    for i, event in enumerate(events):
        if event["type"] == kind and all(event.get(k) == v for k, v in fields.items()):
            return i
    raise AssertionError(f"no {kind} {fields} in {[e['type'] for e in events]}")


def segments(events: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in events if e["type"] == "segment"]


async def test_a_tool_call_is_spoken_around_and_told_in_order(
    conversations: Conversations, spans: InMemorySpanExporter
) -> None:
    events = await run_turn(conversations, prompt("calculate", expression="12.5 * (3 + 4)"), "c1")
    start = index(events, "tool.start", name="calculate")
    call_id = events[start]["id"]
    end = index(events, "tool.end", id=call_id)
    # the text before the call (no sentence end) is spoken at once, not after the tool
    assert index(events, "segment", text=BEFORE) < start < end
    assert events[end] | {"duration_ms": 0} == {
        "type": "tool.end",
        "id": call_id,
        "name": "calculate",
        "status": "ok",
        "duration_ms": 0,
    }
    assert events[end]["duration_ms"] >= 0
    assert segments(events) == [BEFORE, AFTER, "12.5 * (3 + 4) = 87.5."]
    text = "".join(e["text"] for e in events if e["type"] == "text.delta")
    assert text.startswith(f"{BEFORE} {AFTER}")  # the reply after the tool is not glued on
    after = index(events, "segment", text=AFTER)
    assert end < after
    audio = [e["audio_ms"] for e in events if e["type"] == "segment.end"]
    assert len(audio) == 3 and all(ms > 0 for ms in audio)  # spoken before and after
    assert [e["type"] for e in events][-2:] == ["metrics", "turn.end"]
    metrics = events[-2]
    assert (metrics["tool_calls"], metrics["tool_ms"]) == (1, events[end]["duration_ms"])
    assert not [e for e in events if e["type"] == "error"]
    [span] = [s for s in spans.get_finished_spans() if s.name == "tool.call"]
    [turn_span] = [s for s in spans.get_finished_spans() if s.name == "voice_agent.turn"]
    assert span.parent is not None and span.parent.span_id == turn_span.context.span_id
    assert span.attributes is not None
    assert (span.attributes["tool.name"], span.attributes["tool.status"]) == ("calculate", "ok")
    assert span.attributes["tool.duration_ms"] == events[end]["duration_ms"]


async def test_a_failing_tool_is_told_to_the_model_and_the_turn_goes_on_speaking(
    conversations: Conversations,
) -> None:
    events = await run_turn(conversations, prompt("broken_lookup", query="flights"), "c2")
    end = index(events, "tool.end", name="broken_lookup")
    assert events[end]["status"] == "error"
    spoken = segments(events)
    assert spoken[:2] == [BEFORE, FAILED]
    assert "the database is down" in spoken[2]  # strands' error result, read by the model
    assert index(events, "segment", text=FAILED) > end
    assert not [e for e in events if e["type"] == "error"]  # the model's to handle
    model = conversations.get("c2").agent.model
    assert isinstance(model, ToolScript)
    [result] = [b["toolResult"] for b in model.calls[-1][-1]["content"] if "toolResult" in b]
    assert result["status"] == "error"


async def test_barge_in_during_a_slow_tool_cancels_it_and_memory_keeps_what_was_heard(
    conversations: Conversations,
) -> None:
    conversation = conversations.get("c3")
    asked = prompt("slow_lookup", query="weather")
    turn = await conversation.start_turn(TurnRequest(prompt=asked))
    events: list[Event] = []
    running = asyncio.Event()

    async def listen() -> None:
        async for event in turn.run():
            events.append(event)
            started = any(isinstance(e, ToolStart) for e in events)
            if started and any(isinstance(e, SegmentEnd) for e in events):
                running.set()  # the tool runs, and the text before it was all sent as audio

    listening = asyncio.create_task(listen())
    await asyncio.wait_for(running.wait(), 30)
    SLOW_CANCELLED.clear()
    after = await run_turn(conversations, "Never mind", "c3")  # supersedes the running turn
    await listening
    told = [e.to_dict() for e in events]
    end = index(told, "tool.end", name="slow_lookup")
    assert told[end]["status"] == "cancelled"
    assert index(told, "error", code="superseded") < end < index(told, "turn.end")
    assert SLOW_CANCELLED == ["weather"]  # strands cancelled the async tool's task
    assert segments(after) == [PLAIN]
    model = conversation.agent.model
    assert isinstance(model, ToolScript)
    assert [m["role"] for m in model.calls[-1]] == ["user", "assistant", "user"]
    user, heard, _ = model.calls[-1]
    assert user["content"] == [{"text": asked}]
    assert heard["content"] == [{"text": f"{BEFORE} {INTERRUPTED_NOTE}"}]  # no half tool call


async def test_a_cut_turn_leaves_a_plain_function_tool_to_finish_in_its_thread(
    conversations: Conversations,
) -> None:
    RELEASE.clear()
    BLOCKING_DONE.clear()
    turn = await conversations.get("c6").start_turn(
        TurnRequest(prompt=prompt("blocking_lookup", query="rain"))
    )
    events: list[dict[str, Any]] = []
    async for event in turn.run():  # closing the events at tool.start cancels the turn
        events.append(event.to_dict())
        if event.type == "tool.start":
            break
    await turn.finished.wait()  # the turn has stopped, its tool has not
    assert not BLOCKING_DONE.is_set()
    RELEASE.set()
    assert await asyncio.to_thread(BLOCKING_DONE.wait, 30)  # it ran on to its end
    messages = conversations.get("c6").agent.messages
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert all("text" in block for m in messages for block in m["content"])  # no tool use
    assert "late news" not in str(messages)  # its result is nowhere


async def test_a_filler_is_said_when_a_tool_runs_long_and_is_never_remembered(
    fake_tts: ServerThread,
) -> None:
    filler = Filler("One moment.", after_s=0.01)
    conversations = Conversations(FACTORY, WebSocketTransport(fake_tts.ws_url), filler=filler)
    conversation = conversations.get("c4")
    turn = await conversation.start_turn(TurnRequest(prompt=prompt("slow_lookup", query="news")))
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(30):
        async for event in turn.run():
            events.append(event.to_dict())
            if events[-1]["type"] == "segment.end" and events[-1]["seq"] == 1:
                break  # the filler was all sent as audio; closing the events cancels the turn
    assert index(events, "tool.start") < index(events, "segment", seq=1)
    assert segments(events) == [BEFORE, "One moment."]
    await turn.finished.wait()
    # the user heard the filler, but the model never said it: memory keeps the model's words
    heard = conversation.agent.messages[-1]
    assert heard == {"role": "assistant", "content": [{"text": f"{BEFORE} {INTERRUPTED_NOTE}"}]}
    await conversations.aclose()


async def test_a_turn_without_a_tool_call_has_no_tool_events(
    conversations: Conversations,
) -> None:
    events = await run_turn(conversations, "Hello there", "c5")
    assert segments(events) == [PLAIN]
    assert not [e for e in events if e["type"].startswith("tool.")]
    assert (events[-2]["tool_calls"], events[-2]["tool_ms"]) == (0, 0.0)
