"""Network faults between the TTS client and a real TTS server, injected mid-audio by a proxy.

Each fault ends with its documented outcome (docs/tts_client.md, "Reconnect rules"): reconnect
and resume byte-exactly, a typed timeout, or a typed error; nothing is spoken twice or out of
order. The server runs the deterministic fake engine, so a clean run's PCM is the reference.
The proxy holds a connection after its first audio frame, so every fault lands mid-segment.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import math
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from strands import Agent

from agent.core.llm import DemoConfig, DemoModel
from agent.core.turn import Turn
from agent.events import AudioDelta
from agent.requests import TurnRequest
from tests.conftest import start_server
from tests.tts_client.conftest import reference_pcm
from tts_client import (
    SessionConfig,
    SessionPool,
    TTSConnectionError,
    TTSSession,
    TTSTimeout,
    WebSocketTransport,
)
from tts_client.segment import SegmentStatus, SegmentStream
from tts_client.testing.faultproxy import FaultProxy
from tts_client.testing.recording import RecordingTransport
from tts_protocol import MAX_AUDIO_FRAME_BYTES, STREAM_PATH, End, decode_server
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

CONFIG = SessionConfig(
    connect_timeout=2.0,
    reply_timeout=1.0,
    reconnect_window=1.0,
    backoff_initial=0.05,
    backoff_max=0.2,
    close_timeout=0.5,
)
TEXTS = (
    "The first sentence is long enough for several audio frames to cross the link.",
    "Then a second one.",
    "And a third.",
)
HOLD = MAX_AUDIO_FRAME_BYTES + 1024  # `start` and one whole audio frame reach the client
SLACK_S = 2.0  # a loaded 2-core box
SYNTHESIS_S = 0.25  # each sentence on the server
FAILED_WITHIN = CONFIG.reply_timeout + CONFIG.reconnect_window + CONFIG.connect_timeout + SLACK_S
RESUMED = ("drop", "reset", "half_close_client", "half_close_server", "stall_past_timeout")


@pytest.fixture(scope="module")
def fake() -> FakeEngine:
    return FakeEngine()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    # Each sentence takes a while on the server, so a fault after the first audio frame always
    # finds audio still owed; ``fake`` (the same tones, at once) gives the reference PCM.
    server = start_server(FakeEngine(delay_s=SYNTHESIS_S))
    yield server
    server.stop()


@pytest_asyncio.fixture(loop_scope="function")
async def proxy(server: ServerThread) -> AsyncIterator[FaultProxy]:
    async with FaultProxy("127.0.0.1", server.port) as proxy:
        yield proxy


def inject(proxy: FaultProxy, fault: str) -> None:
    """Break the link the way ``fault`` says; the hold ends with it."""
    proxy.release()
    if fault == "drop":
        proxy.drop()
    elif fault == "reset":
        proxy.reset()
    elif fault.startswith("half_close_"):
        proxy.half_close("client" if fault == "half_close_client" else "server")
    elif fault == "stall_past_timeout":
        proxy.stall(CONFIG.reply_timeout + 0.3)  # new connections stall too, until it ends
    elif fault == "stall_short":
        proxy.stall(CONFIG.reply_timeout / 3)
    elif fault == "blackhole":
        proxy.stall(math.inf)
    elif fault == "refuse":
        proxy.refuse()
        proxy.drop()
    elif fault == "throttle":
        proxy.throttle(10_000)
    else:
        raise ValueError(fault)


async def speak_with_fault(
    proxy: FaultProxy, fault: str, config: SessionConfig = CONFIG, texts: tuple[str, ...] = TEXTS
) -> tuple[TTSSession, RecordingTransport, list[SegmentStream], list[bytes], float]:
    """Speak ``texts``; inject ``fault`` after the first audio frame; read everything."""
    recorder = RecordingTransport(WebSocketTransport(proxy.url("ws", STREAM_PATH)))
    loop = asyncio.get_running_loop()
    async with TTSSession(recorder, config) as session:
        proxy.hold(after_bytes=HOLD)
        segments = [await session.speak(text) for text in texts]
        chunks = aiter(segments[0])
        first = await anext(chunks)
        assert len(first) == MAX_AUDIO_FRAME_BYTES  # mid-segment: more audio is on its way
        started = loop.time()
        inject(proxy, fault)
        audio = []
        try:
            audio.append(first + b"".join([chunk async for chunk in chunks]))
            audio += [await segment.read() for segment in segments[1:]]
        finally:
            elapsed = loop.time() - started
            proxy.stall(0)
            proxy.refuse(False)
            proxy.throttle(None)
    return session, recorder, segments, audio, elapsed


def ended_in_order(recorder: RecordingTransport) -> list[str]:
    """The ids of the segments the server ended, in the order the client received the ends."""
    messages = map(decode_server, recorder.control)
    return [m.id for m in messages if isinstance(m, End)]


@pytest.mark.parametrize("fault", RESUMED)
async def test_a_fault_mid_audio_reconnects_and_resumes_byte_exactly(
    proxy: FaultProxy, fake: FakeEngine, fault: str
) -> None:
    session, recorder, segments, audio, elapsed = await speak_with_fault(proxy, fault)
    assert session.connections == 2 and proxy.connections >= 2
    assert [s.status for s in segments] == [SegmentStatus.DONE] * len(TEXTS)
    for pcm, text in zip(audio, TEXTS, strict=True):
        assert pcm == await reference_pcm(fake, text)  # no gap, no repeat
    assert recorder.terminals() == {s.id: 1 for s in segments}  # each segment ended once
    assert ended_in_order(recorder) == [s.id for s in segments]
    assert elapsed < (CONFIG.reply_timeout + 0.3 if fault.startswith("stall") else 0) + SLACK_S


async def test_a_short_stall_only_delays_the_audio(proxy: FaultProxy, fake: FakeEngine) -> None:
    session, recorder, segments, audio, elapsed = await speak_with_fault(proxy, "stall_short")
    assert session.connections == 1  # no reconnect: the stall was under reply_timeout
    assert elapsed >= CONFIG.reply_timeout / 3
    for pcm, text in zip(audio, TEXTS, strict=True):
        assert pcm == await reference_pcm(fake, text)
    assert ended_in_order(recorder) == [s.id for s in segments]


async def test_a_link_throttled_to_10_kb_per_s_is_slow_but_exact(
    proxy: FaultProxy, fake: FakeEngine
) -> None:
    text = "A slow link.."  # 37 KB of audio: one frame, then the rest at 10 KB/s
    config = SessionConfig(reply_timeout=5.0)  # over one 32 KB frame's 3.3 s at 10 KB/s
    session, _, _, audio, elapsed = await speak_with_fault(proxy, "throttle", config, (text,))
    assert session.connections == 1
    assert audio == [await reference_pcm(fake, text)]
    assert elapsed >= (len(audio[0]) - HOLD) / 10_000 * 0.8  # what was held came at 10 KB/s


async def test_a_link_slower_than_one_frame_per_reply_timeout_fails_with_a_typed_timeout(
    proxy: FaultProxy,
) -> None:
    """A WebSocket frame arrives whole: 32 KB at 10 KB/s is 3.3 s of silence, over 1 s."""
    with pytest.raises(TTSTimeout):
        await speak_with_fault(proxy, "throttle")


async def test_a_link_that_goes_silent_fails_every_segment_with_a_typed_timeout(
    proxy: FaultProxy,
) -> None:
    started = asyncio.get_running_loop().time()
    with pytest.raises(TTSTimeout):
        await speak_with_fault(proxy, "blackhole")
    elapsed = asyncio.get_running_loop().time() - started
    # reply_timeout, then reconnect attempts (each up to connect_timeout) for reconnect_window
    assert CONFIG.reply_timeout + CONFIG.reconnect_window <= elapsed < FAILED_WITHIN


async def test_a_server_gone_for_good_fails_with_a_typed_connection_error(
    proxy: FaultProxy,
) -> None:
    # Refused attempts end at once; a long connect_timeout keeps a stalled, loaded box (one CI
    # run took over 2 s for one attempt) from turning a refusal into a timeout.
    config = dataclasses.replace(CONFIG, connect_timeout=30.0)
    started = asyncio.get_running_loop().time()
    with pytest.raises(TTSConnectionError) as failure:
        await speak_with_fault(proxy, "refuse", config)
    assert type(failure.value) is TTSConnectionError  # refused, not timed out
    elapsed = asyncio.get_running_loop().time() - started
    assert CONFIG.reconnect_window <= elapsed < CONFIG.reconnect_window + SLACK_S


@pytest.mark.parametrize("fault", ["drop", "reset", "half_close_server"])
async def test_a_link_broken_while_idle_is_replaced_before_the_next_segment(
    proxy: FaultProxy, fake: FakeEngine, fault: str
) -> None:
    async with TTSSession(WebSocketTransport(proxy.url("ws", STREAM_PATH)), CONFIG) as session:
        inject(proxy, fault)
        async with asyncio.timeout(5):
            while session.connections < 2:  # the reader saw the end and reconnected at once
                await asyncio.sleep(0.01)
        segment = await session.speak(TEXTS[1])
        assert await segment.read() == await reference_pcm(fake, TEXTS[1])


# --- the same faults under the agent's turn ---------------------------------------------


def demo_agent() -> Agent:
    model = DemoModel(DemoConfig(sentences=3, tokens_per_second=400, first_token_delay_s=0.01))
    return Agent(model=model, callback_handler=None)


async def agent_turn(proxy: FaultProxy, fault: str) -> tuple[list[dict[str, object]], int]:
    """One demo turn over the proxy, ``fault`` injected at its first audio event; the events
    and the connections its TTS session opened."""
    pool = SessionPool(WebSocketTransport(proxy.url("ws", STREAM_PATH)), CONFIG)
    session = await pool.borrow()
    pool.give_back(session)  # warm, as the agent keeps it
    proxy.hold(after_bytes=HOLD)
    turn = Turn(TurnRequest("Tell me about faults"), demo_agent(), pool)
    events: list[dict[str, object]] = []
    try:
        async for event in turn.run():
            if isinstance(event, AudioDelta) and "audio.delta" not in kinds(events):
                inject(proxy, fault)
            events.append(event.to_dict())
    finally:
        proxy.stall(0)
        proxy.refuse(False)
        await pool.aclose()
    return events, session.connections


def kinds(events: list[dict[str, object]]) -> list[object]:
    return [e["type"] for e in events]


@pytest.mark.parametrize("fault", RESUMED)
async def test_a_turn_survives_a_fault_and_speaks_each_segment_once_in_order(
    proxy: FaultProxy, fake: FakeEngine, fault: str
) -> None:
    events, connections = await agent_turn(proxy, fault)
    assert connections == 2
    assert kinds(events)[-1] == "turn.end" and "error" not in kinds(events)
    texts = {e["seq"]: str(e["text"]) for e in events if e["type"] == "segment"}
    deltas = [e for e in events if e["type"] == "audio.delta"]
    seqs = [e["seq"] for e in deltas]
    assert seqs == sorted(seqs) and set(seqs) == set(texts)  # type: ignore[type-var]
    for seq, text in texts.items():
        pcm = b"".join(base64.b64decode(str(e["audio"])) for e in deltas if e["seq"] == seq)
        assert pcm == await reference_pcm(fake, text)  # each segment whole, once


async def test_a_turn_whose_speech_goes_silent_reports_tts_unavailable_and_ends(
    proxy: FaultProxy,
) -> None:
    events, _ = await agent_turn(proxy, "blackhole")
    errors = [e for e in events if e["type"] == "error"]  # told while it retries, then given up
    assert [e["code"] for e in errors] == ["tts_reconnecting", "tts_unavailable"]
    assert all("TTSTimeout" in str(e["message"]) for e in errors)
    order = kinds(events)
    assert order[-1] == "turn.end" and order.count("segment") == order.count("segment.end")
    assert order.count("text.delta") > 10  # the text went on
