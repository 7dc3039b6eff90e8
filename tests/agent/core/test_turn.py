"""One turn against the real local TTS server: event order, overlap, errors, cancellation."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest
from strands import Agent

from agent.core.llm import DemoConfig, DemoModel
from agent.core.turn import Turn
from agent.events import AUDIO_EVENT_BYTES, AudioDelta, Segment
from agent.requests import TurnRequest
from tts_client import SessionPool, TTSConnectionError, TTSError, TTSSession, WebSocketTransport
from tts_client.testing.recording import RecordingTransport
from tts_server.testing.server_thread import ServerThread

Event = dict[str, Any]


def demo_agent(sentences: int = 4, rate: float = 40.0) -> Agent:
    model = DemoModel(DemoConfig(sentences=sentences, tokens_per_second=rate))
    return Agent(model=model, callback_handler=None)


@pytest.fixture
def recorder(tts_server: ServerThread) -> RecordingTransport:
    return RecordingTransport(WebSocketTransport(tts_server.ws_url))


@pytest.fixture
async def session(recorder: RecordingTransport) -> AsyncIterator[TTSSession]:
    async with TTSSession(recorder) as opened:
        yield opened


def sent(recorder: RecordingTransport) -> list[str]:
    """Every control frame the session sent, over all its connections."""
    return [frame for connection in recorder.sent for frame in connection]


class Lender:
    """Lends one open session to each turn, as ``SessionPool`` would; records what came back."""

    def __init__(self, session: TTSSession) -> None:
        self.session = session
        self.returned: list[TTSSession] = []

    async def borrow(self, on_retry: Callable[[TTSError], None] | None = None) -> TTSSession:
        self.session.on_retry = on_retry
        return self.session

    def give_back(self, session: TTSSession) -> None:
        self.returned.append(session)


def source(session: TTSSession) -> Lender:
    return Lender(session)


async def collect(turn: Turn) -> list[Event]:
    """The turn's events in their JSON form."""
    return [event.to_dict() async for event in turn.run()]


def types(events: list[Event]) -> list[str]:
    return [e["type"] for e in events]


def pcm(events: list[Event]) -> np.ndarray:
    raw = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "audio.delta")
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768


async def test_stream_mode_speaks_while_the_text_is_still_streaming(session: TTSSession) -> None:
    turn = Turn(TurnRequest("Tell me about streaming speech"), demo_agent(), source(session))
    events = await collect(turn)
    kinds = types(events)
    assert kinds[0] == "turn.start" and kinds[-2:] == ["metrics", "turn.end"]
    # The point of the design, as far as the code decides it: the producer puts the first
    # `segment` event in the queue and sends its `speak` before it reads the next text delta, so
    # sentence one is on its way to the TTS server while the text still streams. When its audio
    # comes back is the machine's business (measured by the benchmark, not asserted here).
    first_segment = kinds.index("segment")
    last_text = len(kinds) - 1 - kinds[::-1].index("text.delta")
    assert first_segment < last_text
    assert kinds.index("audio.delta") > first_segment
    segments = [e for e in events if e["type"] == "segment"]
    assert len(segments) >= 4 and [s["seq"] for s in segments] == list(range(len(segments)))
    # audio arrives in segment order, each segment closed by its segment.end
    audio_seqs = [e["seq"] for e in events if e["type"] == "audio.delta"]
    assert audio_seqs == sorted(audio_seqs)
    ends = [e for e in events if e["type"] == "segment.end"]
    assert [e["seq"] for e in ends] == [s["seq"] for s in segments]
    for end in ends:
        assert kinds.index("segment.end", events.index(end)) == events.index(end)
        assert all(
            i < events.index(end)
            for i, e in enumerate(events)
            if e["type"] == "audio.delta" and e["seq"] == end["seq"]
        )
    assert all(
        len(base64.b64decode(e["audio"])) <= AUDIO_EVENT_BYTES for e in events if "audio" in e
    )
    audio = pcm(events)
    assert np.sqrt(np.mean(audio**2)) > 0.03
    metrics = events[-2]
    assert metrics["segments"] == len(segments)
    assert 0 < metrics["ttft_ms"] < metrics["ttfa_ms"] < metrics["total_ms"]
    assert abs(metrics["audio_ms"] - audio.size / 24) < 1


async def test_batch_mode_waits_for_the_whole_reply(session: TTSSession) -> None:
    turn = Turn(TurnRequest("Tell me about batch", mode="batch"), demo_agent(), source(session))
    events = await collect(turn)
    kinds = types(events)
    last_text = len(kinds) - 1 - kinds[::-1].index("text.delta")
    assert kinds.index("audio.delta") > last_text
    assert kinds.count("segment") == 1 and kinds.count("segment.end") == 1
    text = "".join(e["text"] for e in events if e["type"] == "text.delta")
    assert next(e for e in events if e["type"] == "segment")["text"] == text


async def test_voice_and_speed_reach_the_server(
    session: TTSSession, recorder: RecordingTransport
) -> None:
    request = TurnRequest("Hi", voice=(("jm_kumo", 1.0),), speed=1.5)
    lender = source(session)
    await collect(Turn(request, demo_agent(sentences=1), lender))
    assert any('"voice":"jm_kumo"' in m and '"speed":1.5' in m for m in sent(recorder))
    assert lender.returned == [session]  # given back at the end of the turn


async def test_tts_down_still_streams_text_then_reports_and_ends() -> None:
    unreachable = SessionPool(WebSocketTransport("ws://127.0.0.1:9/ws", open_timeout=2))
    events = await collect(Turn(TurnRequest("Hello"), demo_agent(sentences=2), unreachable))
    kinds = types(events)
    assert kinds.count("text.delta") > 5 and "audio.delta" not in kinds
    errors = [e for e in events if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["tts_unavailable"]
    assert kinds[-1] == "turn.end" and events[-2]["ttfa_ms"] is None


class FailingModel(DemoModel):
    async def stream(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockDelta": {"delta": {"text": "Partial answer. "}}}
        raise RuntimeError("model endpoint exploded")


async def test_llm_failure_is_an_error_event_and_the_turn_still_ends(session: TTSSession) -> None:
    agent = Agent(model=FailingModel(), callback_handler=None)
    events = await collect(Turn(TurnRequest("Hello"), agent, source(session)))
    errors = [e for e in events if e["type"] == "error"]
    assert errors and errors[0]["code"] == "llm_failed" and "exploded" in errors[0]["message"]
    assert types(events)[-1] == "turn.end"
    assert any(e["type"] == "segment" and e["text"] == "Partial answer." for e in events)


async def test_closing_the_stream_mid_turn_cancels_synthesis(
    session: TTSSession, recorder: RecordingTransport
) -> None:
    turn = Turn(TurnRequest("Long answer please"), demo_agent(sentences=8), source(session))
    stream = turn.run()
    async for event in stream:
        if isinstance(event, Segment) and event.seq >= 2:
            break  # segment 2 was just sent: it cannot have finished yet
    assert session.pending >= 1
    await stream.aclose()  # what the SSE layer does when the client goes away
    assert turn.finished.is_set()
    assert any('"type":"cancel"' in m for m in sent(recorder))
    async with asyncio.timeout(10):  # the server confirms every cancelled segment
        while session.pending:
            await asyncio.sleep(0.02)


async def test_a_link_lost_while_a_cut_turn_cancels_its_segments_still_ends_it(
    session: TTSSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def link_lost() -> None:
        raise TTSConnectionError("the connection was lost")

    monkeypatch.setattr(session, "cancel_all", link_lost)
    lender = source(session)
    turn = Turn(TurnRequest("Long answer please"), demo_agent(sentences=8), lender)
    stream = turn.run()
    async for event in stream:
        if isinstance(event, Segment) and event.seq >= 2:
            break
    assert session.pending >= 1  # so the turn's end cancels them, and that fails
    await stream.aclose()  # does not raise
    assert turn.finished.is_set() and lender.returned == [session]


async def test_superseded_turn_stops_and_ends(session: TTSSession) -> None:
    turn = Turn(TurnRequest("First"), demo_agent(sentences=8), source(session))
    collected: list[Event] = []

    async def consume() -> None:
        async for event in turn.run():
            collected.append(event.to_dict())
            if isinstance(event, AudioDelta) and len(collected) < 10_000:
                turn.supersede()

    await asyncio.wait_for(consume(), 60)
    kinds = types(collected)
    assert "superseded" in [e.get("code") for e in collected]
    assert kinds[-1] == "turn.end"


class BrokenLender:
    """A lender with a bug: borrowing raises something that is not a ``TTSError``."""

    async def borrow(self, on_retry: object = None) -> TTSSession:
        raise AttributeError("no such thing")

    def give_back(self, session: TTSSession) -> None:
        raise AssertionError("nothing was lent")


async def test_a_bug_behind_the_session_is_told_and_logged_not_swallowed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    turn = Turn(TurnRequest("Hello"), demo_agent(sentences=1), BrokenLender())  # type: ignore[arg-type]
    events = await collect(turn)
    errors = [e for e in events if e["type"] == "error"]
    assert [e["code"] for e in errors] == ["tts_unavailable"]
    assert "AttributeError: no such thing" in errors[0]["message"]
    assert types(events)[-1] == "turn.end" and "text.delta" in types(events)
    assert any(r.levelname == "ERROR" and r.exc_info for r in caplog.records)
