"""The WebSocket leg (``/ws``) over real sockets, through both front doors, on the real TTS server.

Asserts what the code controls: the order of frames, their contents, and that nothing of a
cancelled turn arrives after its ``cancelled`` confirmation.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedOK

from agent.browser_leg import (
    AUDIO_HEADER,
    IDLE_CLOSE,
    SESSION_HEADER,
    audio_frame,
    split_audio_frame,
)
from agent.config import AgentConfig
from agent.core.llm import demo_reply
from agent.core.service import VoiceAgent
from agent.doors import agentcore as agentcore_app
from agent.doors import devserver
from tts_protocol import SAMPLE_RATE
from tts_server.testing.server_thread import ServerThread

Frame = dict[str, Any] | bytes  # a JSON text frame, or a binary audio frame
FRONT_DOORS = {"agentcore": agentcore_app.create_app, "devserver": devserver.create_app}
RECEIVE_S = 60


def test_an_audio_frame_is_the_seq_header_then_the_pcm() -> None:
    frame = audio_frame(258, b"\x01\x02\x03\x04")
    assert AUDIO_HEADER.size == 4 and frame == b"\x00\x00\x01\x02\x01\x02\x03\x04"
    assert split_audio_frame(frame) == (258, b"\x01\x02\x03\x04")


# --- over real sockets, both front doors ----------------------------------------------------


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


def ws_url(server: ServerThread) -> str:
    return f"ws://127.0.0.1:{server.port}/ws"


async def receive(socket: ClientConnection) -> Frame:
    data = await asyncio.wait_for(socket.recv(), RECEIVE_S)
    return data if isinstance(data, bytes) else json.loads(data)


async def until(socket: ClientConnection, kind: str, limit_s: float = RECEIVE_S) -> list[Frame]:
    """Frames up to and including the first text frame of type ``kind``, within ``limit_s``."""
    frames: list[Frame] = []
    try:
        async with asyncio.timeout(limit_s):
            while not frames or not isinstance(last := frames[-1], dict) or last["type"] != kind:
                frames.append(await receive(socket))
    except TimeoutError:
        pytest.fail(f"no {kind!r} within {limit_s} s; got {kinds(frames)[-20:]}")
    return frames


def kinds(frames: list[Frame]) -> list[str]:
    return ["<audio>" if isinstance(f, bytes) else f["type"] for f in frames]


async def open_socket(server: ServerThread, conversation: str) -> ClientConnection:
    # An unbounded queue: a test that stops reading mid-turn still takes the server's close
    # frame at once (a full queue stops the reads, and close() waits out its 10 s timeout).
    socket = await connect(
        ws_url(server), additional_headers={SESSION_HEADER: conversation}, max_queue=None
    )
    hello = await receive(socket)
    assert hello == {
        "type": "ready",
        "conversation": conversation,
        "sample_rate": SAMPLE_RATE,
        "audio_header_bytes": AUDIO_HEADER.size,
        "max_message_bytes": 32 * 1024,  # AgentCore's frame limit
    }
    return socket


async def test_a_turn_sends_events_as_text_and_audio_as_binary_frames(
    agent_server: ServerThread,
) -> None:
    prompt = "Tell me about sockets"
    async with await open_socket(agent_server, "ws-turn") as socket:
        # JSON in a binary frame is read as in a text frame (the field report's lesson).
        await socket.send(json.dumps({"type": "prompt", "prompt": prompt}).encode())
        frames = await until(socket, "turn.end")
    order = kinds(frames)
    assert order[0] == "turn.start" and order[-2:] == ["metrics", "turn.end"]
    text = "".join(f["text"] for f in frames if isinstance(f, dict) and f["type"] == "text.delta")
    assert text == demo_reply(prompt, 4)
    assert "audio.delta" not in order  # audio only as binary frames

    # Each binary frame names its segment; a segment's frames lie between its `segment`
    # and its `segment.end`, in seq order, and add up to the audio_ms it reports.
    open_segments: set[int] = set()
    pcm: dict[int, bytes] = {}
    for frame in frames:
        if isinstance(frame, bytes):
            (seq,) = AUDIO_HEADER.unpack_from(frame)
            assert seq in open_segments and seq == min(open_segments)
            assert len(frame) - AUDIO_HEADER.size <= SAMPLE_RATE // 10 * 2  # at most 100 ms
            pcm[seq] = pcm.get(seq, b"") + frame[AUDIO_HEADER.size :]
        elif frame["type"] == "segment":
            open_segments.add(frame["seq"])
        elif frame["type"] == "segment.end":
            open_segments.remove(frame["seq"])
            samples = len(pcm.get(frame["seq"], b"")) // 2
            assert frame["audio_ms"] == pytest.approx(samples * 1000 / SAMPLE_RATE, abs=0.1)
    assert not open_segments and sorted(pcm) == [0, 1, 2, 3]
    assert all(len(chunk) > SAMPLE_RATE for chunk in pcm.values())  # over 0.5 s each


async def test_bad_messages_get_typed_errors_and_the_socket_keeps_serving(
    agent_server: ServerThread,
) -> None:
    voice_agent(agent_server).conversations.get("ws-bad").agent.model.update_config(sentences=1)
    bad: list[tuple[str | bytes, str, str | None]] = [
        ("{oops", "invalid_json", None),
        (b"\x00\xff", "invalid_utf8", None),
        ('{"type": "dance"}', "unknown_type", None),
        (json.dumps({"type": "prompt", "prompt": "x" * 40_000}), "message_too_large", None),
        ('{"type": "prompt", "prompt": ""}', "invalid_prompt", "prompt"),
        (json.dumps({"type": "prompt", "prompt": "x" * 4001}), "prompt_too_long", "prompt"),
        ('{"type": "prompt", "prompt": "hi", "voice": "nobody"}', "unknown_voice", "prompt"),
        ('{"type": "prompt", "prompt": "hi", "sped": 1.5}', "unknown_field", "prompt"),
        ('{"type": "config", "speed": 7}', "invalid_config", "config"),
        ('{"type": "config", "volume": 3}', "unknown_field", "config"),
        ('{"type": "config", "voice": "nobody"}', "unknown_voice", "config"),  # not echoed
        ('{"type": "cancel", "now": true}', "unknown_field", "cancel"),
    ]
    async with await open_socket(agent_server, "ws-bad") as socket:
        for data, code, in_reply_to in bad:
            await socket.send(data)
            error = await receive(socket)
            assert isinstance(error, dict)
            assert (error["type"], error["code"], error["in_reply_to"]) == (
                "error",
                code,
                in_reply_to,
            )
        # Still serving: a config applies to the next prompt, which runs to the end.
        await socket.send('{"type": "config", "voice": "jm_kumo", "speed": 1.2}')
        assert await receive(socket) == {"type": "config", "voice": "jm_kumo", "speed": 1.2}
        await socket.send('{"type": "prompt", "prompt": "Still there?"}')
        frames = await until(socket, "turn.end")
        # The turn has ended: a cancel now stops nothing and names no turn (docs/events.md).
        await socket.send('{"type": "cancel"}')
        assert await receive(socket) == {"type": "cancelled", "turn_id": None}
    assert kinds(frames)[0] == "turn.start" and "<audio>" in kinds(frames)
    assert not [f for f in frames if isinstance(f, dict) and f["type"] == "error"]


async def test_cancel_stops_the_turn_and_nothing_of_it_follows_the_confirmation(
    agent_server: ServerThread,
) -> None:
    async with await open_socket(agent_server, "ws-cancel") as socket:
        await socket.send('{"type": "prompt", "prompt": "Talk for a long while"}')
        before = await until(socket, "segment")
        turn_id = before[0]["turn_id"]  # type: ignore[index]
        async with asyncio.timeout(RECEIVE_S):  # up to the first audio frame: synthesis is on
            while not isinstance(await receive(socket), bytes):
                pass
        await socket.send('{"type": "cancel"}')
        stopping = await until(socket, "cancelled")
        assert stopping[-1] == {"type": "cancelled", "turn_id": turn_id}
        assert "turn.end" not in kinds(stopping)  # `cancelled` is the turn's one terminal event

        # The server stopped the turn: no longer busy, and the socket is quiet until asked.
        async with httpx.AsyncClient(base_url=agent_server.http_url) as http:
            for _ in range(100):
                if (await http.get("/ping")).json()["status"] == "Healthy":
                    break
                await asyncio.sleep(0.05)
            else:
                pytest.fail("the server is still busy with the cancelled turn")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(socket.recv(), 0.5)

        # A cancel with nothing running is confirmed too; the next turn starts clean.
        await socket.send('{"type": "cancel"}')
        assert await receive(socket) == {"type": "cancelled", "turn_id": None}
        voice_agent(agent_server).conversations.get("ws-cancel").agent.model.update_config(
            sentences=1
        )
        await socket.send('{"type": "prompt", "prompt": "Short, please"}')
        after = await until(socket, "turn.end")
    assert kinds(after)[0] == "turn.start" and after[0]["turn_id"] != turn_id  # type: ignore[index]


async def test_a_new_prompt_supersedes_the_running_turn_without_interleaving(
    agent_server: ServerThread,
) -> None:
    async with await open_socket(agent_server, "ws-supersede") as socket:
        await socket.send('{"type": "prompt", "prompt": "First question"}')
        await until(socket, "segment")
        await socket.send('{"type": "prompt", "prompt": "Second question"}')
        first = await until(socket, "turn.end")
        second = await until(socket, "turn.end")
    errors = [f["code"] for f in first if isinstance(f, dict) and f["type"] == "error"]
    assert errors == ["superseded"]
    assert kinds(first)[-2:] == ["metrics", "turn.end"]
    assert kinds(second)[0] == "turn.start" and kinds(second).count("turn.start") == 1
    assert "error" not in kinds(second) and "<audio>" in kinds(second)


async def test_the_session_query_parameter_names_the_conversation(
    agent_server: ServerThread,
) -> None:
    url = f"{ws_url(agent_server)}?{SESSION_HEADER}=from-the-query"
    async with connect(url) as socket:
        assert (await receive(socket))["conversation"] == "from-the-query"  # type: ignore[index]


# --- a client that goes away is no news in the logs ------------------------------------------


class Warnings(logging.Handler):
    """Every record at WARNING or above: the root's, and uvicorn's (which does not propagate)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def lines(self) -> list[str]:
        return [f"{r.name}: {r.getMessage()}" for r in self.records]


@pytest.fixture
def warnings() -> Iterator[Warnings]:
    handler = Warnings()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


async def settled(server: ServerThread) -> None:
    """Wait until no turn runs on ``server`` any more (bounded)."""
    async with httpx.AsyncClient(base_url=server.http_url) as http:
        for _ in range(200):
            if (await http.get("/ping")).json()["status"] == "Healthy":
                await asyncio.sleep(0.2)  # what the server logs once the turn is gone
                return
            await asyncio.sleep(0.05)
    pytest.fail("a turn of a client that went away is still running")


async def test_a_client_that_cancels_and_hangs_up_leaves_no_traceback(
    agent_server: ServerThread, warnings: Warnings
) -> None:
    """The ``cancelled`` answer meets a closed socket: the socket ends, nobody logs it."""
    for _ in range(3):
        socket = await open_socket(agent_server, "ws-hang-up")
        await socket.send('{"type": "prompt", "prompt": "Talk for a long while"}')
        while not isinstance(await receive(socket), bytes):
            pass  # up to the first audio frame: synthesis is under way
        await socket.send('{"type": "cancel"}')
        await socket.close()
        await settled(agent_server)
    assert warnings.lines() == []


async def test_a_client_that_hangs_up_mid_turn_leaves_no_traceback(
    agent_server: ServerThread, warnings: Warnings
) -> None:
    socket = await open_socket(agent_server, "ws-gone")
    await socket.send('{"type": "prompt", "prompt": "Talk for a long while"}')
    while not isinstance(await receive(socket), bytes):
        pass
    await socket.close()
    async with (
        httpx.AsyncClient(base_url=agent_server.http_url, timeout=RECEIVE_S) as http,
        http.stream("POST", "/invocations", json={"prompt": "Talk for a long while"}) as sse,
    ):
        async for line in sse.aiter_lines():
            if '"audio.delta"' in line:
                break  # and hang up the SSE stream mid-turn too
    await settled(agent_server)
    assert warnings.lines() == []


# --- idle sockets are closed ----------------------------------------------------------------

IDLE_S = 0.5
NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port: speech down


@pytest.fixture(scope="module", params=sorted(FRONT_DOORS))
def idle_server(request: pytest.FixtureRequest) -> Iterator[ServerThread]:
    config = AgentConfig(model="demo", tts_url=NOWHERE, ws_idle_s=IDLE_S)
    server = ServerThread(FRONT_DOORS[request.param](config)).start()
    yield server
    server.stop()


async def closed_idle(socket: ClientConnection) -> float:
    """Wait for the idle close; return when it came (the loop's clock)."""
    error = await receive(socket)
    assert isinstance(error, dict) and (error["type"], error["code"]) == ("error", "idle_timeout")
    with pytest.raises(ConnectionClosedOK):
        await asyncio.wait_for(socket.recv(), RECEIVE_S)
    assert socket.close_code == IDLE_CLOSE and socket.close_reason == "idle_timeout"
    return asyncio.get_running_loop().time()


async def test_an_idle_socket_is_closed_with_a_reason(idle_server: ServerThread) -> None:
    async with await open_socket(idle_server, "idle") as socket:
        opened = asyncio.get_running_loop().time()
        await asyncio.sleep(IDLE_S * 0.6)
        await socket.send('{"type": "cancel"}')  # a message: idle from here on
        assert await receive(socket) == {"type": "cancelled", "turn_id": None}
        answered = asyncio.get_running_loop().time()
        closed = await closed_idle(socket)
    assert closed - answered >= IDLE_S * 0.9 and closed - opened >= IDLE_S * 1.4


async def test_a_turn_longer_than_the_idle_time_keeps_its_socket(idle_server: ServerThread) -> None:
    """Streaming is use: the socket stays open through the turn and is idle from its end."""
    model = voice_agent(idle_server).conversations.get("idle-turn").agent.model
    model.update_config(sentences=1, tokens_per_second=8.0)  # over a second of text
    async with await open_socket(idle_server, "idle-turn") as socket:
        started = asyncio.get_running_loop().time()
        await socket.send('{"type": "prompt", "prompt": "Take your time"}')
        frames = await until(socket, "turn.end")
        ended = asyncio.get_running_loop().time()
        closed = await closed_idle(socket)
    assert ended - started > 1.5 * IDLE_S  # the turn outlived the idle time, and was not cut
    assert "text.delta" in kinds(frames)
    assert closed - ended >= IDLE_S * 0.9
