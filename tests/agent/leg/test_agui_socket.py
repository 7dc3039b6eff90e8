"""AG-UI over ``/ws`` (``agent/leg/agui_socket.py``) on the dev server, a real uvicorn on
loopback and a real WebSocket client, every frame parsed by ag-ui-protocol's models: what the
doors' tests (tests/agent/doors/test_agui.py, test_protocols.py) leave to it. A run sent as a
binary frame (SageMaker and AgentCore may deliver JSON so), frames that are not runs, a run that
cannot start, a new message while a run streams (the run ends ``cancelled`` first, even when
the message is refused), a client gone mid-run, and the idle close, counted from a run's end.

Speech is down here (the TTS URL is a closed port): a run streams its text with a
``voice.error``; the socket's rules are the same with audio (the doors' tests run those).
Last, ``AguiSocket`` in process (ASGI messages in and out, scripted turns): what the server's
own limit keeps a real client from sending (a message over 1 MiB), the refusals' words, and how
``serve`` ends when the client goes or its connection breaks."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ag_ui.core import BaseEvent, RunErrorEvent, RunFinishedEvent
from starlette.websockets import WebSocket
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from agent.browser_leg import IDLE_CLOSE, MAX_FRAME_BYTES
from agent.config import AgentConfig
from agent.core.llm import DemoModel, demo_reply
from agent.doors import devserver
from agent.events import TextDelta, TurnEnd, TurnStart
from agent.leg.agui_input import MAX_RUN_INPUT_BYTES
from agent.leg.agui_socket import AguiSocket
from agent.leg.hooks import TurnEvents
from agent.requests import TurnRequest
from tests.agent.agui_client import (
    RECEIVE_S,
    TERMINAL,
    check_run,
    customs,
    ended,
    kinds,
    parse,
    run_input,
    text_of,
)
from tests.agent.leg.test_voice_socket import WAIT_S, Client
from tests.agent.leg.test_ws import voice_agent
from tts_server.testing.server_thread import ServerThread

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port: no speech
IDLE_S = 1.0


def agui_server(**settings: Any) -> ServerThread:
    config = AgentConfig(model="demo", tts_url=NOWHERE, **settings)
    return ServerThread(devserver.create_app(config, protocol="agui")).start()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    started = agui_server()
    yield started
    started.stop()


@pytest.fixture(scope="module")
def idle_server() -> Iterator[ServerThread]:
    """One whose sockets close after ``IDLE_S`` without a message or a run."""
    started = agui_server(ws_idle_s=IDLE_S)
    yield started
    started.stop()


def url(server: ServerThread) -> str:
    return f"ws://127.0.0.1:{server.port}/ws"


def demo_model(server: ServerThread, thread: str) -> DemoModel:
    model = voice_agent(server).conversations.get(thread).agent.model  # type: ignore[attr-defined]
    assert isinstance(model, DemoModel)
    return model


def slow(server: ServerThread, thread: str, tokens_per_second: float = 40) -> None:
    """The thread's demo model writes a long reply slowly: its run streams for seconds."""
    demo_model(server, thread).update_config(
        sentences=8, tokens_per_second=tokens_per_second, first_token_delay_s=0
    )


def quick(server: ServerThread, thread: str) -> None:
    """The thread's demo model says one sentence at once: a run whose length nothing checks."""
    demo_model(server, thread).update_config(
        sentences=1, tokens_per_second=1000, first_token_delay_s=0
    )


async def receive(socket: ClientConnection) -> BaseEvent:
    """The next frame: a text frame within AgentCore's bound, one AG-UI event."""
    frame = await asyncio.wait_for(socket.recv(), RECEIVE_S)
    assert isinstance(frame, str) and len(frame.encode()) <= MAX_FRAME_BYTES
    return parse(frame)


async def until_end(socket: ClientConnection) -> list[BaseEvent]:
    events = [await receive(socket)]
    while events[-1].type not in TERMINAL:
        events.append(await receive(socket))
    return events


async def until(socket: ClientConnection, kind: str) -> list[BaseEvent]:
    """Events up to the first of ``kind`` (a type or a custom event's name)."""
    events = [await receive(socket)]
    while kinds(events)[-1] != kind:
        assert events[-1].type not in TERMINAL, kinds(events)
        events.append(await receive(socket))
    return events


async def busy(server: ServerThread) -> bool:
    """A turn runs (``/ping``'s ``HealthyBusy``)."""
    async with httpx.AsyncClient(base_url=server.http_url, timeout=5) as http:
        status: str = (await http.get("/ping")).json()["status"]
    return status == "HealthyBusy"


async def turns_end_within(server: ServerThread, limit_s: float) -> None:
    since = time.monotonic()
    while await busy(server):
        assert time.monotonic() - since < limit_s, "a turn went on"
        await asyncio.sleep(0.05)


async def test_a_run_sent_as_a_binary_frame_is_a_run(server: ServerThread) -> None:
    quick(server, "t-binary")
    async with connect(url(server), max_queue=None) as socket:
        await socket.send(json.dumps(run_input("Sent as bytes", "t-binary")).encode())
        events = check_run(await until_end(socket))
        assert isinstance(ended(events), RunFinishedEvent)
        assert text_of(events) == demo_reply("Sent as bytes", 1)
        assert customs(events, "voice.error")[0]["code"] == "tts_unavailable"
        await socket.send(json.dumps(run_input("Then as text", "t-binary")))  # both, in turn
        assert text_of(check_run(await until_end(socket))) == demo_reply("Then as text", 1)


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"{oops", "invalid_json"),
        ("{oops", "invalid_json"),
        (b"\xff\xfe", "invalid_utf8"),
        (b'"a run"', "invalid_run_input"),
        ("null", "invalid_run_input"),
        (json.dumps({"threadId": "t", "runId": "r"}), "invalid_run_input"),
    ],
    ids=["binary-not-json", "text-not-json", "not-utf8", "a-string", "null", "no-messages"],
)
async def test_a_frame_that_is_not_a_run_gets_a_lone_run_error_and_the_socket_goes_on(
    server: ServerThread, frame: str | bytes, code: str
) -> None:
    quick(server, "t-bad-frame")
    async with connect(url(server), max_queue=None) as socket:
        await socket.send(frame)
        refusal = await receive(socket)  # no ids to start a run with: a lone RUN_ERROR
        assert isinstance(refusal, RunErrorEvent) and refusal.code == code and refusal.message
        await socket.send(json.dumps(run_input("Still here", "t-bad-frame")))
        assert isinstance(ended(check_run(await until_end(socket))), RunFinishedEvent)


async def test_a_run_that_cannot_start_is_started_and_failed_with_its_ids(
    server: ServerThread,
) -> None:
    body = run_input("Hello", "t-refused", speed=-1)
    async with connect(url(server), max_queue=None) as socket:
        await socket.send(json.dumps(body))
        events = check_run(await until_end(socket))
        assert kinds(events) == ["RUN_STARTED", "RUN_ERROR"]
        assert events[0].model_dump()["run_id"] == body["runId"]
        assert ended(events).model_dump()["code"] == "invalid_speed"


async def test_a_new_run_cancels_the_streaming_one_whose_end_comes_first(
    server: ServerThread,
) -> None:
    slow(server, "t-cancel")
    async with connect(url(server), max_queue=None) as socket:
        await socket.send(json.dumps(run_input("The first run", "t-cancel")))
        first = await until(socket, "TEXT_MESSAGE_CONTENT")
        quick(server, "t-cancel")  # the second run's; the first's reply was set at its start
        await socket.send(json.dumps(run_input("The second run", "t-cancel")).encode())
        first += await until_end(socket)
        cancelled = ended(check_run(first))
        assert isinstance(cancelled, RunFinishedEvent) and cancelled.outcome is not None
        assert cancelled.outcome.type == "cancelled"
        assert len(text_of(first)) < len(demo_reply("The first run", 8))  # cut short
        second = check_run(await until_end(socket))  # its own run, after the first's end
        assert second[0].model_dump()["run_id"] != first[0].model_dump()["run_id"]
        assert isinstance(ended(second), RunFinishedEvent) and ended(second).outcome is None


async def test_a_bad_frame_while_a_run_streams_cancels_it_then_is_refused(
    server: ServerThread,
) -> None:
    slow(server, "t-cancel-bad")
    async with connect(url(server), max_queue=None) as socket:
        await socket.send(json.dumps(run_input("A long run", "t-cancel-bad")))
        first = await until(socket, "TEXT_MESSAGE_CONTENT")
        await socket.send("{oops")
        first += await until_end(socket)
        cancelled = ended(check_run(first))
        assert isinstance(cancelled, RunFinishedEvent) and cancelled.outcome is not None
        refusal = await receive(socket)
        assert isinstance(refusal, RunErrorEvent) and refusal.code == "invalid_json"
        await turns_end_within(server, 3)  # the cancelled run's turn ended


async def test_a_client_gone_mid_run_stops_its_turn(server: ServerThread) -> None:
    slow(server, "t-gone", tokens_per_second=20)
    async with connect(url(server), max_queue=None) as socket:
        await socket.send(json.dumps(run_input("Go on and on", "t-gone")))
        await until(socket, "TEXT_MESSAGE_CONTENT")
        assert await busy(server)
    await turns_end_within(server, 3)  # the reply alone takes over 10 s


async def test_an_unused_socket_is_closed_after_its_idle_time(idle_server: ServerThread) -> None:
    opened = time.monotonic()  # before the server's accept, which starts the idle time
    async with connect(url(idle_server), max_queue=None) as socket:
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(socket.recv(), RECEIVE_S)
        assert time.monotonic() - opened >= IDLE_S * 0.9
        assert (socket.close_code, socket.close_reason) == (IDLE_CLOSE, "idle_timeout")


async def test_a_run_longer_than_the_idle_time_is_not_cut_and_idle_counts_from_its_end(
    idle_server: ServerThread,
) -> None:
    slow(idle_server, "t-idle", tokens_per_second=60)  # about 3 s of text: longer than IDLE_S
    async with connect(url(idle_server), max_queue=None) as socket:
        started = time.monotonic()
        await socket.send(json.dumps(run_input("Keep talking", "t-idle")))
        events = check_run(await until_end(socket))
        finished = time.monotonic()
        assert finished - started > IDLE_S * 1.5
        assert text_of(events) == demo_reply("Keep talking", 8)  # whole: the run was not cut
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(socket.recv(), RECEIVE_S)
        assert time.monotonic() - finished >= IDLE_S * 0.9
        assert (socket.close_code, socket.close_reason) == (IDLE_CLOSE, "idle_timeout")


# --- in process ---------------------------------------------------------------------------


class Turns:
    """Scripted turns: each says "Hello." and ends once ``go`` is set."""

    def __init__(self) -> None:
        self.started: list[tuple[str, str]] = []  # (prompt, conversation)
        self.closed: list[str] = []  # turns whose events were closed before their end
        self.go = asyncio.Event()

    async def start(self, request: TurnRequest, conversation: str) -> TurnEvents:
        self.started.append((request.prompt, conversation))
        return self._events(f"t{len(self.started)}")

    async def _events(self, turn_id: str) -> TurnEvents:
        ended = False
        try:
            yield TurnStart(turn_id, "stream")
            yield TextDelta("Hello.")
            await self.go.wait()
            ended = True
            yield TurnEnd()
        finally:
            if not ended:
                self.closed.append(turn_id)


class InProcess:
    """An ``AguiSocket`` served in process, its client and its turns."""

    def __init__(self) -> None:
        self.client, self.turns = Client(), Turns()
        scope = {"type": "websocket", "path": "/ws", "headers": [], "query_string": b""}
        websocket = WebSocket(scope, self.client.receive, self.client.send)
        self.socket = AguiSocket(websocket, self.turns.start, 30.0)
        self.task: asyncio.Task[None] | None = None

    def send(self, message: str | bytes) -> None:
        kind = "text" if isinstance(message, str) else "bytes"
        self.client.inbox.put_nowait({"type": "websocket.receive", kind: message})

    async def served(self) -> None:
        """``serve``'s end, once the client is gone: it returns, raising nothing."""
        assert self.task is not None
        async with asyncio.timeout(WAIT_S):
            await self.task

    async def __aenter__(self) -> InProcess:
        self.task = asyncio.create_task(self.socket.serve())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.task is not None
        if not self.task.done():
            self.client.hang_up()
        await self.served()


async def test_in_process_a_message_over_1_mib_is_refused_and_one_of_1_mib_is_a_run() -> None:
    body = json.dumps(run_input("Hi", "t-size"))
    whole = body + " " * (MAX_RUN_INPUT_BYTES - len(body.encode()))  # 1 MiB exactly
    async with InProcess() as served:
        served.turns.go.set()
        served.send(whole + " ")
        served.send(whole.encode() + b" ")
        served.send(whole)
        await served.client.wait_for("RUN_FINISHED")
    refusals = served.client.of_type("RUN_ERROR")
    assert [(r["code"], r["message"]) for r in refusals] == [
        ("message_too_large", "a run over 1 MiB")
    ] * 2
    assert served.client.kinds()[2] == "RUN_STARTED" and served.turns.started == [("Hi", "t-size")]


@pytest.mark.parametrize(
    ("frame", "code", "words"),
    [
        ("{oops", "invalid_json", "the message is not JSON: "),
        (b"\xff", "invalid_utf8", "the message is not UTF-8: "),
    ],
)
async def test_in_process_a_message_that_is_not_json_is_refused_in_its_own_words(
    frame: str | bytes, code: str, words: str
) -> None:
    async with InProcess() as served:
        served.send(frame)
        await served.client.wait_for("RUN_ERROR")
    [refusal] = served.client.frames
    assert refusal["code"] == code and refusal["message"].startswith(words)  # type: ignore[index]


async def test_in_process_a_client_gone_mid_run_ends_serve_and_the_run_at_once() -> None:
    async with InProcess() as served:
        served.send(json.dumps(run_input("Go on", "t-gone")))
        await served.client.wait_for("TEXT_MESSAGE_CONTENT")
        served.client.hang_up()  # the turn waits: only serve's end can stop it
        await served.served()
        assert served.turns.closed == ["t1"]
    assert "RUN_FINISHED" not in served.client.kinds()  # nobody was there to tell


async def test_in_process_a_run_whose_events_cannot_be_sent_stops_its_turn_at_once() -> None:
    async with InProcess() as served:
        served.send("{oops")
        await served.client.wait_for("RUN_ERROR")
        served.client.broken = True  # the connection drops, unnoticed until a send
        served.send(json.dumps(run_input("Go on", "t-dropped")))
        async with asyncio.timeout(WAIT_S):  # closed by the run's own end, not the socket's
            while served.turns.closed != ["t1"]:
                await asyncio.sleep(0.01)
        assert not served.task.done()  # type: ignore[union-attr]  # serve still waits


async def test_in_process_a_connection_that_breaks_ends_serve_quietly() -> None:
    async with InProcess() as served:
        served.send("{oops")
        await served.client.wait_for("RUN_ERROR")
        served.client.broken = True  # sends fail, as on a dropped connection
        served.send("{oops")  # its refusal cannot be sent
        await served.served()
    assert served.client.kinds() == ["RUN_ERROR"] and served.client.closed is None
