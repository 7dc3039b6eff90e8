"""AG-UI through both front doors (``protocol="agui"``), on the real TTS server (the embedded
Kokoro ONNX engine, ``tts_server``): every event the server sends is parsed by ag-ui-protocol's
own models and checked for the protocol's order (``tests/agent/agui_client.py``). First,
``agui_invocation`` itself on a scripted door: what it hands the door and how it streams."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ag_ui.core import (
    BaseEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from sse_starlette import EventSourceResponse
from websockets.asyncio.client import ClientConnection, connect

from agent.config import AgentConfig
from agent.core.llm import DemoModel, demo_reply
from agent.core.memory import INTERRUPTED_NOTE
from agent.doors import agentcore, devserver
from agent.doors.agui import agui_invocation
from agent.doors.wiring import Relay, in_place
from agent.events import TextDelta, TurnEnd, TurnStart
from agent.leg.hooks import TurnEvents
from agent.requests import TurnRequest
from agent.testing.tool_model import AFTER, BEFORE
from agent.testing.tool_model import prompt as tool_prompt
from tests.agent.agui_client import (
    RECEIVE_S,
    TERMINAL,
    check_run,
    customs,
    ended,
    index,
    kinds,
    parse,
    pcm_by_segment,
    run_input,
    run_sse,
    sse_events,
    text_of,
)
from tests.agent.leg.test_ws import voice_agent
from tests.agent.tool_model import RELEASE, create_agent
from tts_protocol import SAMPLE_RATE
from tts_server.testing.server_thread import ServerThread

FRONT_DOORS = {"agentcore": agentcore.create_app, "devserver": devserver.create_app}
QUICK = {"sentences": 1, "tokens_per_second": 1000.0, "first_token_delay_s": 0.0}


def demo_model(server: ServerThread, thread: str, **config: float) -> DemoModel:
    """The thread's demo model, its reply set by ``config`` (``QUICK``: one sentence at once,
    for a run whose length nothing checks)."""
    model = voice_agent(server).conversations.get(thread).agent.model  # type: ignore[attr-defined]
    assert isinstance(model, DemoModel)
    model.update_config(**config)
    return model


class Door:
    """A front door's ``stream_turn``, scripted: each turn says "Hello." and ends."""

    def __init__(self) -> None:
        self.asked: list[tuple[TurnRequest, str, Relay]] = []

    async def stream_turn(
        self, request: TurnRequest, conversation: str, relay: Relay
    ) -> TurnEvents:
        self.asked.append((request, conversation, relay))
        return self._events()

    async def _events(self) -> TurnEvents:
        for event in (TurnStart("t1", "stream"), TextDelta("Hello."), TurnEnd()):
            yield event


def _relay(events: TurnEvents) -> TurnEvents:
    return events


async def test_a_run_is_the_doors_turn_on_the_doors_relay_with_no_keepalive_unless_asked() -> None:
    door = Door()
    response = await agui_invocation(door, run_input("Hi", "t-door"), _relay)  # type: ignore[arg-type]
    assert isinstance(response, EventSourceResponse)
    assert response.ping_interval == 0  # AgentCore's: no comments between its events
    [(request, conversation, relay)] = door.asked
    assert (request.prompt, conversation, relay) == ("Hi", "t-door", _relay)
    kept = await agui_invocation(door, run_input("Hi", "t-door"), keepalive_s=15)  # type: ignore[arg-type]
    assert isinstance(kept, EventSourceResponse) and kept.ping_interval == 15
    assert door.asked[1][2] is in_place


@pytest.fixture(scope="module", params=sorted(FRONT_DOORS))
def agui_server(request: pytest.FixtureRequest, tts_server: ServerThread) -> Iterator[ServerThread]:
    """A front door speaking AG-UI, on the demo model."""
    config = AgentConfig(model="demo", tts_url=tts_server.ws_url)
    server = ServerThread(FRONT_DOORS[request.param](config, protocol="agui")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tool_server(tts_server: ServerThread) -> Iterator[ServerThread]:
    """The AgentCore door speaking AG-UI, on the tests' tool agent (a scripted strands model
    that makes real ``toolUse`` calls, ``tests/agent/tool_model.py``)."""
    config = AgentConfig(agent_factory=create_agent, tts_url=tts_server.ws_url)
    server = ServerThread(agentcore.create_app(config, protocol="agui")).start()
    yield server
    server.stop()


async def test_a_run_speaks_each_sentence_as_custom_events_between_its_text(
    agui_server: ServerThread,
) -> None:
    prompt = "Tell me about AG-UI"
    # The text written over 4 s (77 tokens), so that sentence one's audio comes before its end
    # on a loaded box too; the synthesis of the four sentences takes longer anyway.
    demo_model(agui_server, "t-speak", sentences=4, tokens_per_second=20, first_token_delay_s=0)
    body = run_input(prompt, "t-speak", marks=True)
    events = check_run(await run_sse(agui_server.http_url, body))
    started = events[0]
    assert isinstance(started, RunStartedEvent)
    assert (started.thread_id, started.run_id) == ("t-speak", body["runId"])
    finished = ended(events)
    assert isinstance(finished, RunFinishedEvent) and finished.outcome is None
    [voice] = customs(events, "voice.start")
    assert voice["format"] == "pcm_s16le" and voice["sampleRate"] == SAMPLE_RATE
    assert text_of(events) == demo_reply(prompt, 4)
    assert kinds(events).count("TEXT_MESSAGE_START") == 1
    # sentence one is heard while the LLM still writes: its audio before the last text
    assert index(events, "voice.audio") < index(events, "TEXT_MESSAGE_CONTENT", last=True)
    sentences = customs(events, "voice.sentence")
    assert [s["segmentId"] for s in sentences] == [0, 1, 2, 3]
    pcm = pcm_by_segment(events)
    for end in customs(events, "voice.sentence.end"):
        samples = len(pcm[end["segmentId"]]) // 2
        assert end["audioMs"] == pytest.approx(samples * 1000 / SAMPLE_RATE, abs=0.1)
        assert samples > SAMPLE_RATE // 2  # over half a second of speech each
    audio = customs(events, "voice.audio")
    assert all(len(base64.b64decode(a["audio"])) <= SAMPLE_RATE // 10 * 2 for a in audio)
    words: dict[int, list[dict[str, Any]]] = {}  # each window's timings ride on its audio
    for chunk in audio:
        words.setdefault(chunk["segmentId"], []).extend(chunk.get("words", []))
    written = [word.strip(".,:;!?") for word in sentences[0]["text"].split()]
    assert [w["text"] for w in words[0]] == written  # the written words, without punctuation
    starts = [w["startMs"] for w in words[0]]
    assert starts == sorted(starts) and starts[0] >= 0 and set(words) == {0, 1, 2, 3}
    [metrics] = customs(events, "voice.metrics")
    assert metrics["ttfaMs"] > 0 and metrics["segments"] == 4


async def test_the_thread_is_the_conversation(agui_server: ServerThread) -> None:
    demo_model(agui_server, "t-thread", **QUICK)
    for prompt in ("First question", "Second question"):
        check_run(await run_sse(agui_server.http_url, run_input(prompt, "t-thread")))
    messages = voice_agent(agui_server).conversations.get("t-thread").agent.messages  # type: ignore[attr-defined]
    assert [m["role"] for m in messages] == ["user", "assistant"] * 2
    assert messages[2]["content"] == [{"text": "Second question"}]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{oops", "invalid_json"),
        (b"[]", "invalid_run_input"),
        (json.dumps({"threadId": "t"}).encode(), "invalid_run_input"),
        (json.dumps({**run_input("hi", "t"), "messages": [{"role": "user"}]}).encode(), None),
        (json.dumps(run_input("x" * 1024 * 1024, "t")).encode(), "body_too_large"),
    ],
    ids=["not-json", "not-an-object", "no-run-id", "bad-message", "too-large"],
)
async def test_a_body_that_is_not_a_run_is_a_typed_4xx(
    agui_server: ServerThread, body: bytes, code: str | None
) -> None:
    async with httpx.AsyncClient(base_url=agui_server.http_url, timeout=RECEIVE_S) as http:
        response = await http.post("/invocations", content=body)
        error = response.json()["error"]
        assert response.status_code in (400, 413)
        assert error["code"] == (code or "invalid_run_input") and error["message"]
        assert (await http.get("/ping")).json()["status"] == "Healthy"  # still serving


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"messages": []}, "no_user_message"),
        (
            {"messages": [{"id": "a", "role": "assistant", "content": "Hello"}]},
            "no_user_message",
        ),
        ({"forwardedProps": {"speech": {"voice": "zz_nobody"}}}, "unknown_voice"),
        ({"forwardedProps": {"speech": {"sped": 1.2}}}, "invalid_speech"),
        ({"forwardedProps": {"speech": {"speed": -1}}}, "invalid_speed"),
        ({"forwardedProps": {"speech": {"format": "mp3"}}}, "unsupported_audio_format"),
        ({"forwardedProps": {"speech": "loud"}}, "invalid_speech"),
    ],
)
async def test_a_run_that_cannot_start_ends_in_a_typed_run_error(
    agui_server: ServerThread, change: dict[str, Any], code: str
) -> None:
    body = run_input("Hello", "t-refused") | change
    events = check_run(await run_sse(agui_server.http_url, body))
    assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
    error = ended(events)
    assert isinstance(error, RunErrorEvent) and error.code == code and error.message
    demo_model(agui_server, "t-refused", **QUICK)
    again = check_run(await run_sse(agui_server.http_url, run_input("Hello", "t-refused")))
    assert isinstance(ended(again), RunFinishedEvent)  # the next run is served


async def test_a_client_that_goes_away_stops_the_run_and_its_synthesis(
    agui_server: ServerThread, tts_server: ServerThread
) -> None:
    demo_model(agui_server, "t-gone", sentences=8, tokens_per_second=400, first_token_delay_s=0)
    conversation = voice_agent(agui_server).conversations.get("t-gone")
    seen: list[BaseEvent] = []
    async for event in sse_events(agui_server.http_url, run_input("Go on", "t-gone")):
        seen.append(event)
        if customs(seen, "voice.audio"):
            break  # hang up at the first audio, with seven sentences to go
    gone = time.monotonic()
    # Polled: the turn runs on the server's loop, whose Event.set does not wake this one (an
    # awaited Event returned at its timeout). The whole reply is about 20 s of synthesis here.
    while conversation.busy:
        assert time.monotonic() - gone < 3, "the turn went on"
        await asyncio.sleep(0.02)
    async with httpx.AsyncClient(base_url=tts_server.http_url, timeout=5) as http:
        while (ping := (await http.get("/ping")).json())["in_flight"] or ping["queued"]:
            assert time.monotonic() - gone < 3, f"still synthesizing: {ping}"
            await asyncio.sleep(0.02)
    assert not [e for e in seen if e.type in TERMINAL]
    [_, reply] = conversation.agent.messages  # type: ignore[attr-defined]
    assert reply["content"][0]["text"].endswith(INTERRUPTED_NOTE)  # cut, as on our routes


async def test_a_tool_call_is_told_with_its_args_and_result_and_its_preamble_plays_meanwhile(
    tool_server: ServerThread,
) -> None:
    RELEASE.clear()  # blocking_lookup waits for it
    body = run_input(tool_prompt("blocking_lookup", query="rain"), "t-tool")
    events: list[BaseEvent] = []
    async for event in sse_events(tool_server.http_url, body):
        events.append(event)
        said = [e["segmentId"] for e in customs(events, "voice.sentence.end")]
        if said == [0] and "TOOL_CALL_END" in kinds(events) and not RELEASE.is_set():
            RELEASE.set()  # the words before the tool were all heard while it ran
    check_run(events)
    start = events[index(events, "TOOL_CALL_START")]
    assert isinstance(start, ToolCallStartEvent) and start.tool_call_name == "blocking_lookup"
    args = events[index(events, "TOOL_CALL_ARGS")]
    assert isinstance(args, ToolCallArgsEvent) and json.loads(args.delta) == {"query": "rain"}
    result = events[index(events, "TOOL_CALL_RESULT")]
    assert isinstance(result, ToolCallResultEvent) and result.content == "late news about rain"
    assert result.tool_call_id == start.tool_call_id and result.role == "tool"
    assert (
        start.parent_message_id
        == events[index(events, "TEXT_MESSAGE_START")].model_dump()["message_id"]
    )
    preamble = [i for i, e in enumerate(events) if _audio_of(e, 0)]
    assert index(events, "TOOL_CALL_END") < preamble[-1] < index(events, "TOOL_CALL_RESULT")
    sentences = [s["text"] for s in customs(events, "voice.sentence")]
    assert sentences == [BEFORE, f"{AFTER} late news about rain."]
    assert kinds(events).count("TEXT_MESSAGE_START") == 2  # before the tool, and after it
    assert set(pcm_by_segment(events)) == {0, 1}


def _audio_of(event: BaseEvent, segment: int) -> bool:
    value = getattr(event, "value", None)
    return getattr(event, "name", "") == "voice.audio" and value["segmentId"] == segment  # type: ignore[index]


# --- over /ws -----------------------------------------------------------------------------


async def _until_end(socket: ClientConnection) -> list[BaseEvent]:
    """Frames up to the run's end, each one event, parsed."""
    events: list[BaseEvent] = []
    async with asyncio.timeout(RECEIVE_S):
        while not events or events[-1].type not in TERMINAL:
            frame = await socket.recv()
            assert isinstance(frame, str)
            events.append(parse(frame))
    return events


async def test_over_ws_each_message_is_a_run_and_the_socket_goes_on(
    agui_server: ServerThread,
) -> None:
    url = f"ws://127.0.0.1:{agui_server.port}/ws"
    # Two sentences, the second (25 tokens) written over 2.5 s, while the first is spoken.
    demo_model(agui_server, "t-ws", sentences=2, tokens_per_second=10, first_token_delay_s=0)
    async with connect(url, max_queue=None) as socket:
        await socket.send(b"{oops")
        [refusal] = await _until_end(socket)  # a lone RUN_ERROR: no ids to start a run with
        assert isinstance(refusal, RunErrorEvent) and refusal.code == "invalid_json"
        await socket.send(json.dumps(run_input("Over the socket", "t-ws", marks=True)))
        events = check_run(await _until_end(socket))
        assert isinstance(ended(events), RunFinishedEvent)
        assert text_of(events) == demo_reply("Over the socket", 2)
        assert index(events, "voice.audio") < index(events, "TEXT_MESSAGE_CONTENT", last=True)
        assert set(pcm_by_segment(events)) == {0, 1}


async def test_over_ws_a_new_run_cancels_the_one_streaming(agui_server: ServerThread) -> None:
    url = f"ws://127.0.0.1:{agui_server.port}/ws"
    model = demo_model(agui_server, "t-ws-cancel", sentences=8)
    async with connect(url, max_queue=None) as socket:
        await socket.send(json.dumps(run_input("The first run", "t-ws-cancel")))
        first: list[BaseEvent] = []
        while not customs(first, "voice.audio"):
            first.append(parse(await asyncio.wait_for(socket.recv(), RECEIVE_S)))
        model.update_config(**QUICK)  # the next run's; the first's reply was set at its start
        await socket.send(json.dumps(run_input("The second run", "t-ws-cancel")))
        first += await _until_end(socket)
        check_run(first)
        cancelled = ended(first)
        assert isinstance(cancelled, RunFinishedEvent) and cancelled.outcome is not None
        assert cancelled.outcome.type == "cancelled"
        second = check_run(await _until_end(socket))
        assert text_of(second) == demo_reply("The second run", 1)
