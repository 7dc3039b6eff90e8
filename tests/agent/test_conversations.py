"""Conversations against the real local TTS server: barge-in, LRU, busy, pre-connect."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from strands import Agent

from agent.conversations import Conversation, Conversations
from agent.events import AudioDelta
from agent.llm import DemoConfig, DemoModel
from agent.requests import TurnRequest
from agent.turn import Turn
from tts_client import TTSConnectionError, TTSSession, WebSocketTransport
from tts_client.testing.recording import RecordingTransport
from tts_server.testing.server_thread import ServerThread

Event = dict[str, Any]


def demo_agent() -> Agent:
    model = DemoModel(DemoConfig(sentences=4, tokens_per_second=60, first_token_delay_s=0.05))
    return Agent(model=model, callback_handler=None)


@pytest.fixture
async def transport(tts_server: ServerThread) -> RecordingTransport:
    return RecordingTransport(WebSocketTransport(tts_server.ws_url))


@pytest.fixture
async def conversations(transport: RecordingTransport) -> AsyncIterator[Conversations]:
    opened = Conversations(demo_agent, transport)
    yield opened
    await opened.aclose()


async def collect(turn: Turn) -> list[Event]:
    return [event.to_dict() async for event in turn.run()]


def error_codes(events: list[Event]) -> list[str]:
    return [e["code"] for e in events if e["type"] == "error"]


async def listen_until_audio(turn: Turn) -> tuple[asyncio.Task[list[Event]], list[Event]]:
    """Consume ``turn`` in a task; return once its first audio arrived."""
    seen: list[Event] = []
    heard = asyncio.Event()

    async def listen() -> list[Event]:
        async for event in turn.run():
            seen.append(event.to_dict())
            if isinstance(event, AudioDelta):
                heard.set()
        return seen

    task = asyncio.create_task(listen())
    await asyncio.wait_for(heard.wait(), 60)
    return task, seen


async def closed(session: TTSSession) -> bool:
    async with asyncio.timeout(10):
        while not session.closed:
            await asyncio.sleep(0.01)
    return True


async def test_a_new_prompt_supersedes_the_running_turn(conversations: Conversations) -> None:
    conversation = conversations.get("barge-in")
    first = await conversation.start_turn(TurnRequest("First question"))
    listening, _ = await listen_until_audio(first)
    session = await conversation.session()

    second = await conversation.start_turn(TurnRequest("Second question"))
    assert first.finished.is_set()  # the new turn started only once the old one let go
    first_events = await asyncio.wait_for(listening, 10)
    assert error_codes(first_events) == ["superseded"]
    assert first_events[-1]["type"] == "turn.end"
    assert conversation.current is second

    second_events = await collect(second)
    text = "".join(e["text"] for e in second_events if e["type"] == "text.delta")
    assert text.startswith("You said: Second question.")
    assert error_codes(second_events) == [] and "audio.delta" in [e["type"] for e in second_events]
    assert await conversation.session() is session  # one warm session across turns


async def test_conversations_have_their_own_agent_and_session(
    conversations: Conversations,
) -> None:
    one, other = conversations.get("one"), conversations.get("other")
    assert conversations.get("one") is one
    assert one.agent is not other.agent
    assert await one.session() is not await other.session()


async def test_the_least_recently_used_conversation_is_dropped_and_its_session_closed(
    transport: RecordingTransport,
) -> None:
    conversations = Conversations(demo_agent, transport, limit=2)
    try:
        a, b = conversations.get("a"), conversations.get("b")
        session_a, session_b = await a.session(), await b.session()
        assert conversations.get("a") is a  # now "b" is the least recently used
        c = conversations.get("c")
        assert await closed(session_b) and not session_a.closed
        assert conversations.get("a") is a and conversations.get("c") is c
        b_again = conversations.get("b")  # a new conversation: "a" is dropped in turn
        assert b_again is not b and b_again.agent is not b.agent
        new_session = await b_again.session()
        assert new_session is not session_b and not new_session.closed
        assert await closed(session_a)
    finally:
        await conversations.aclose()


async def test_a_dropped_conversation_stops_its_running_turn(transport: RecordingTransport) -> None:
    conversations = Conversations(demo_agent, transport, limit=1)
    try:
        dropped = conversations.get("dropped")
        turn = await dropped.start_turn(TurnRequest("Speak for a while"))
        listening, _ = await listen_until_audio(turn)
        session = await dropped.session()
        conversations.get("newcomer")
        events = await asyncio.wait_for(listening, 10)
        assert error_codes(events) == ["superseded"] and events[-1]["type"] == "turn.end"
        assert await closed(session)
    finally:
        await conversations.aclose()


async def test_busy_while_a_turn_runs(conversations: Conversations) -> None:
    assert not conversations.busy
    conversation: Conversation = conversations.get("busy")
    assert not conversation.busy
    turn = await conversation.start_turn(TurnRequest("Hi"))
    assert conversation.busy and conversations.busy  # from the start of the turn
    listening, _ = await listen_until_audio(turn)
    assert conversations.busy
    await asyncio.wait_for(listening, 60)
    assert not conversation.busy and not conversations.busy


async def test_preconnect_opens_the_session_the_first_turn_uses(
    conversations: Conversations, transport: RecordingTransport
) -> None:
    await conversations.preconnect("warm")
    assert transport.connects == 1
    conversation = conversations.get("warm")
    session = await conversation.session()
    assert session.ready.voices and not session.closed
    events = await collect(await conversation.start_turn(TurnRequest("Hello")))
    assert "audio.delta" in [e["type"] for e in events]
    assert transport.connects == 1 and await conversation.session() is session


async def test_preconnect_reports_a_tts_server_that_is_down() -> None:
    transport = WebSocketTransport("ws://127.0.0.1:9/invocations-bidirectional-stream")
    conversations = Conversations(demo_agent, transport)
    try:
        with pytest.raises(TTSConnectionError):
            await conversations.preconnect("down")
    finally:
        await conversations.aclose()


async def test_aclose_stops_running_turns_and_closes_sessions(
    transport: RecordingTransport,
) -> None:
    conversations = Conversations(demo_agent, transport)
    conversation = conversations.get("closing")
    turn = await conversation.start_turn(TurnRequest("Speak for a while"))
    listening, _ = await listen_until_audio(turn)
    session = await conversation.session()
    await conversations.aclose()
    events = await asyncio.wait_for(listening, 10)
    assert error_codes(events) == ["superseded"] and events[-1]["type"] == "turn.end"
    assert session.closed
