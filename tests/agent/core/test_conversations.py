"""Conversations against local TTS servers: barge-in, LRU, borrowed sessions, capacity."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from strands import Agent

from agent.core import conversations as conversations_module
from agent.core.conversations import Conversation, Conversations
from agent.core.factory import VoiceFactory
from agent.core.llm import DemoConfig, DemoModel
from agent.core.turn import Turn
from agent.events import AudioDelta
from agent.requests import PlaybackReport, TurnRequest
from agent.testing.tool_model import prompt
from tests.agent.tool_model import create_agent
from tests.conftest import start_server
from tts_client import SessionConfig, SessionPool, TTSConnectionError, WebSocketTransport
from tts_client.testing.recording import RecordingTransport
from tts_client.transports.base import Connection
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

Event = dict[str, Any]


def demo_agent() -> Agent:
    model = DemoModel(DemoConfig(sentences=4, tokens_per_second=60, first_token_delay_s=0.05))
    return Agent(model=model, callback_handler=None)


@pytest.fixture(scope="module")
def fake_server() -> Iterator[ServerThread]:
    """A TTS server on the fast fake engine: what is tested here is who holds which session."""
    server = start_server(FakeEngine())
    yield server
    server.stop()


@pytest.fixture
async def transport(fake_server: ServerThread) -> RecordingTransport:
    return RecordingTransport(WebSocketTransport(fake_server.ws_url))


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


def spoken(events: list[Event]) -> bool:
    """The turn ended cleanly with audio for every segment."""
    kinds = [e["type"] for e in events]
    audio = {e["seq"] for e in events if e["type"] == "audio.delta"}
    segments = {e["seq"] for e in events if e["type"] == "segment"}
    return kinds[-1] == "turn.end" and not error_codes(events) and audio == segments != set()


async def test_a_new_prompt_supersedes_the_running_turn_and_takes_its_warm_session(
    conversations: Conversations, transport: RecordingTransport
) -> None:
    conversation = conversations.get("barge-in")
    first = await conversation.start_turn(TurnRequest("First question"))
    listening, _ = await listen_until_audio(first)
    [session] = conversations.pool.lent

    second = await conversation.start_turn(TurnRequest("Second question"))
    assert first.finished.is_set()  # the new turn started only once the old one let go
    first_events = await asyncio.wait_for(listening, 10)
    assert error_codes(first_events) == ["superseded"]
    assert first_events[-1]["type"] == "turn.end"
    assert conversation.current is second

    second_events = await collect(second)
    text = "".join(e["text"] for e in second_events if e["type"] == "text.delta")
    assert text.startswith("You said: Second question.")
    assert spoken(second_events)
    assert transport.connects == 1 and conversations.pool.lent == set()  # one warm session
    assert await conversations.pool.borrow() is session


async def test_idle_conversations_hold_no_session_one_after_another_each_is_spoken(
    conversations: Conversations, transport: RecordingTransport
) -> None:
    for n in range(6):  # as six tabs, each asked once and then left open
        events = await collect(await conversations.get(f"tab-{n}").start_turn(TurnRequest("Hi")))
        assert spoken(events), n
        assert conversations.pool.lent == set()  # the idle conversation gave its session back
    assert transport.connects == 1 and conversations.pool.idle == 1


async def test_turns_at_once_in_two_conversations_have_sessions_of_their_own(
    conversations: Conversations,
) -> None:
    one, other = conversations.get("one"), conversations.get("other")
    assert conversations.get("one") is one and one.agent is not other.agent
    turns = [await c.start_turn(TurnRequest("Speak for a while")) for c in (one, other)]
    listening = [(await listen_until_audio(turn))[0] for turn in turns]
    assert len(conversations.pool.lent) == 2
    for events in await asyncio.wait_for(asyncio.gather(*listening), 60):
        assert spoken(events)
    assert conversations.pool.lent == set() and conversations.pool.idle == 2


async def test_the_least_recently_used_conversation_is_dropped(
    transport: RecordingTransport,
) -> None:
    conversations = Conversations(demo_agent, transport, limit=2)
    try:
        a, b = conversations.get("a"), conversations.get("b")
        assert conversations.get("a") is a  # now "b" is the least recently used
        c = conversations.get("c")
        assert conversations.get("a") is a and conversations.get("c") is c
        b_again = conversations.get("b")  # a new conversation: "a" is dropped in turn
        assert b_again is not b and b_again.agent is not b.agent
        assert conversations.get("c") is c and conversations.get("a") is not a
    finally:
        await conversations.aclose()


async def test_a_dropped_conversation_stops_its_running_turn(transport: RecordingTransport) -> None:
    conversations = Conversations(demo_agent, transport, limit=1)
    try:
        dropped = conversations.get("dropped")
        turn = await dropped.start_turn(TurnRequest("Speak for a while"))
        listening, _ = await listen_until_audio(turn)
        conversations.get("newcomer")
        events = await asyncio.wait_for(listening, 10)
        assert error_codes(events) == ["superseded"] and events[-1]["type"] == "turn.end"
        assert conversations.pool.lent == set() and conversations.pool.idle == 1
    finally:
        await conversations.aclose()


class SlowFirstConnect(RecordingTransport):
    """Its first connection is held until ``go``: a borrow caught connecting."""

    def __init__(self, url: str) -> None:
        super().__init__(WebSocketTransport(url))
        self.connecting = asyncio.Event()
        self.go = asyncio.Event()

    async def connect(self) -> Connection:
        if not self.connecting.is_set():
            self.connecting.set()
            await self.go.wait()
        return await super().connect()


async def test_a_turn_superseded_while_it_borrows_gives_the_session_back(
    fake_server: ServerThread,
) -> None:
    transport = SlowFirstConnect(fake_server.ws_url)
    conversations = Conversations(demo_agent, transport)
    try:
        conversation = conversations.get("hasty")
        first = await conversation.start_turn(TurnRequest("Never mind"))
        events = asyncio.create_task(collect(first))
        await transport.connecting.wait()  # its borrow is connecting
        second = await conversation.start_turn(TurnRequest("Hello"))
        assert error_codes(await asyncio.wait_for(events, 10)) == ["superseded"]
        assert spoken(await collect(second))
        assert transport.connects == 1  # the second turn's: the first's borrow was stopped
        assert conversations.pool.lent == set()
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
    await conversations.preconnect()
    assert transport.connects == 1 and conversations.pool.idle == 1
    events = await collect(await conversations.get("warm").start_turn(TurnRequest("Hello")))
    assert spoken(events) and transport.connects == 1


async def test_preconnect_reports_a_tts_server_that_is_down() -> None:
    transport = WebSocketTransport("ws://127.0.0.1:9/invocations-bidirectional-stream")
    conversations = Conversations(demo_agent, transport)
    try:
        with pytest.raises(TTSConnectionError):
            await conversations.preconnect()
    finally:
        await conversations.aclose()


async def test_aclose_stops_running_turns_and_closes_sessions(
    transport: RecordingTransport,
) -> None:
    conversations = Conversations(demo_agent, transport)
    conversation = conversations.get("closing")
    turn = await conversation.start_turn(TurnRequest("Speak for a while"))
    listening, _ = await listen_until_audio(turn)
    [session] = conversations.pool.lent
    await conversations.aclose()
    events = await asyncio.wait_for(listening, 10)
    assert error_codes(events) == ["superseded"] and events[-1]["type"] == "turn.end"
    assert session.closed


# --- a server at capacity ------------------------------------------------------------------


@pytest.fixture(scope="module")
def gate() -> Iterator[threading.Event]:
    """Cleared by a test: the small server's engine thread is held busy."""
    event = threading.Event()
    event.set()
    yield event
    event.set()


@pytest.fixture(scope="module")
def small_engine(gate: threading.Event) -> FakeEngine:
    return FakeEngine(gate)


@pytest.fixture(scope="module")
def small_server(small_engine: FakeEngine, gate: threading.Event) -> Iterator[ServerThread]:
    """A TTS server that admits one session with work (``--max-sessions 1``)."""
    server = start_server(small_engine, max_sessions=1)
    yield server
    gate.set()
    server.stop()


async def test_a_server_at_capacity_is_reported_at_once_and_the_text_goes_on(
    small_server: ServerThread, small_engine: FakeEngine, gate: threading.Event
) -> None:
    config = SessionConfig(
        busy_window=1.0, retry_notice_s=0.3, backoff_initial=0.05, backoff_max=0.2
    )
    pool = SessionPool(WebSocketTransport(small_server.ws_url), config)
    conversations = Conversations(demo_agent, pool.transport, pool=pool)
    try:
        gate.clear()  # the first conversation's segment holds the server's only session
        holder = await conversations.get("holder").start_turn(TurnRequest("Hold on"))
        holding = asyncio.create_task(collect(holder))
        calls = small_engine.calls
        async with asyncio.timeout(10):  # until its segment holds the engine, not merely a session
            while small_engine.calls == calls:
                await asyncio.sleep(0.01)
        started = time.monotonic()
        refused: list[tuple[float, Event]] = []
        async for event in (await conversations.get("other").start_turn(TurnRequest("Hi"))).run():
            refused.append((time.monotonic() - started, event.to_dict()))
        codes = [(at, e["code"]) for at, e in refused if e["type"] == "error"]
        sent = next(at for at, e in refused if e["type"] == "segment")  # its first speak
        assert codes[0][1] == "tts_busy", refused
        assert codes[0][0] - sent < 2.0, refused  # told at once (0.3 s notice), not after 30 s
        assert "1 sessions are synthesizing" in next(
            e["message"] for _, e in refused if e["type"] == "error"
        )
        texts = [at for at, e in refused if e["type"] == "text.delta"]
        assert texts and texts[-1] > codes[0][0]  # the text went on after the refusal
        assert refused[-1][1]["type"] == "turn.end" and refused[-1][0] < 20.0
        gate.set()
        assert spoken(await asyncio.wait_for(holding, 30))
        again = await collect(await conversations.get("other").start_turn(TurnRequest("Hi")))
        assert spoken(again)  # capacity came back: the next turn speaks
    finally:
        gate.set()
        await conversations.aclose()


# --- a speculative turn the user spoke over: withdrawn (the eager start, docs/listening.md) ---


async def test_a_withdrawn_turn_leaves_no_trace_and_the_one_before_is_the_latest_again(
    conversations: Conversations,
) -> None:
    conversation = conversations.get("withdraw")
    first = await conversation.start_turn(TurnRequest("First question"))
    assert spoken(await collect(first))
    history = list(conversation.agent.messages)

    guess = await conversation.start_turn(TurnRequest("Could you book a table for"))
    listening, _ = await listen_until_audio(guess)  # its LLM ran and its audio came
    await conversation.withdraw("not-the-latest")  # only the latest can go: nothing changes
    assert conversation.current is guess and not guess.finished.is_set()
    await conversation.withdraw(guess.id)
    assert guess.finished.is_set()
    assert error_codes(await asyncio.wait_for(listening, 10)) == ["superseded"]
    assert conversation.agent.messages == history  # no prompt, no reply, no "interrupted" note
    assert conversation.current is first and not conversation.busy
    assert conversations.pool.lent == set()

    whole = await conversation.start_turn(TurnRequest("Could you book a table for four?"))
    events = await collect(whole)
    assert spoken(events)
    prompts = [m["content"][0]["text"] for m in conversation.agent.messages if m["role"] == "user"]
    assert prompts == ["First question", "Could you book a table for four?"]


async def test_a_turn_withdrawn_before_it_ran_is_forgotten_without_waiting_for_it(
    conversations: Conversations, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conversations_module, "SUPERSEDE_WAIT_S", 600.0)
    conversation = conversations.get("withdraw-unrun")
    guess = await conversation.start_turn(TurnRequest("Could you"))
    async with asyncio.timeout(30):  # its events were never read: it will never finish
        await conversation.withdraw(guess.id)
    assert conversation.current is None and conversation.agent.messages == []


# --- a reply the user spoke over before hearing any of it (turn continuation, issue 49) -------


async def test_a_reply_cut_before_a_word_was_heard_is_withdrawn_and_gives_its_prompt_back(
    conversations: Conversations,
) -> None:
    conversation = conversations.get("unheard")
    first = await conversation.start_turn(TurnRequest("First question"))
    assert spoken(await collect(first))
    history = list(conversation.agent.messages)
    cut = await conversation.start_turn(TurnRequest("Stop."))
    listening, _ = await listen_until_audio(cut)  # its audio went out, and none of it played
    report = PlaybackReport(cut.id, 0, 0.0)
    assert await conversation.withdraw_unheard("not-the-latest", report) is None
    assert await conversation.withdraw_unheard(cut.id, report) == "Stop."
    await asyncio.wait_for(listening, 10)
    assert conversation.agent.messages == history and conversation.current is first


async def test_a_reply_heard_in_part_or_sent_without_a_report_is_kept(
    conversations: Conversations,
) -> None:
    conversation = conversations.get("heard")
    cut = await conversation.start_turn(TurnRequest("Tell me a story"))
    listening, _ = await listen_until_audio(cut)
    cut.supersede()
    await asyncio.wait_for(listening, 10)
    history = list(conversation.agent.messages)
    # 800 ms into its first sentence: heard; no report: what was sent counts as heard.
    assert await conversation.withdraw_unheard(cut.id, PlaybackReport(cut.id, 0, 800.0)) is None
    assert await conversation.withdraw_unheard(cut.id, None) is None
    assert conversation.agent.messages == history and conversation.current is cut


async def test_a_reply_that_called_a_tool_is_never_withdrawn(fake_server: ServerThread) -> None:
    opened = Conversations(VoiceFactory.check(create_agent), WebSocketTransport(fake_server.ws_url))
    try:
        conversation = opened.get("tool")
        turn = await conversation.start_turn(TurnRequest(prompt("calculate", expression="2+2")))
        await collect(turn)
        history = list(conversation.agent.messages)
        nothing = PlaybackReport(turn.id, 0, 0.0)
        assert await conversation.withdraw_unheard(turn.id, nothing) is None  # the tool acted
        assert conversation.agent.messages == history
    finally:
        await opened.aclose()
