"""The agent's turn across a TTS server restart, with real server processes.

The TTS server is the real ``tts-server`` process (``tests.fake_server``: CLI, uvicorn,
signals, a paced fake engine); the agent side is a ``Turn`` with the demo model over a
``SessionPool``, as a conversation runs it. Two ways a server goes away mid-turn:

- SIGTERM (a scale-in, a deploy): the server drains; what it queued is spoken, what it refused
  (``shutting_down``) or left is sent again on the replacement that comes up on the same port;
  the turn hears every segment once, in order, and the next turn speaks on the same session.
- SIGKILL (a crash): no replacement within the reconnect window, so the turn reports
  ``tts_unavailable`` and its text goes on; once the server is back, the next turn speaks.
"""

from __future__ import annotations

import asyncio
import base64
import signal

from strands import Agent

from agent.core.llm import DemoConfig, DemoModel
from agent.core.turn import Turn
from agent.events import AudioDelta
from agent.requests import TurnRequest
from tests.fake_server import ServerProcess
from tests.tts_client.conftest import reference_pcm
from tts_client import SessionConfig, SessionPool, WebSocketTransport
from tts_server.testing.fake_engine import FakeEngine

Event = dict[str, object]
INFER_S = 0.15  # per sentence on the server's engine thread


def demo_agent() -> Agent:
    model = DemoModel(DemoConfig(sentences=5, tokens_per_second=80, first_token_delay_s=0.01))
    return Agent(model=model, callback_handler=None)


async def run_turn(pool: SessionPool, on_audio: object) -> list[Event]:
    """One demo turn; ``on_audio()`` is called at its first audio event."""
    turn = Turn(TurnRequest("Tell me about restarts"), demo_agent(), pool)
    events: list[Event] = []
    async for event in turn.run():
        if isinstance(event, AudioDelta) and not any(e["type"] == "audio.delta" for e in events):
            on_audio()  # type: ignore[operator]
        events.append(event.to_dict())
    return events


def kinds(events: list[Event]) -> list[object]:
    return [e["type"] for e in events]


async def assert_spoken_whole(events: list[Event], notices: tuple[str, ...] = ()) -> None:
    """Every segment's audio arrived once, whole, in order; the turn ended with no error but
    ``notices`` (a restart that outlasts ``retry_notice_s`` is told as ``tts_reconnecting``)."""
    order = kinds(events)
    assert order[-1] == "turn.end"
    assert {e["code"] for e in events if e["type"] == "error"} <= set(notices)
    texts = {e["seq"]: str(e["text"]) for e in events if e["type"] == "segment"}
    deltas = [e for e in events if e["type"] == "audio.delta"]
    seqs = [e["seq"] for e in deltas]
    assert seqs == sorted(seqs) and set(seqs) == set(texts)  # type: ignore[type-var]
    for seq, text in texts.items():
        pcm = b"".join(base64.b64decode(str(e["audio"])) for e in deltas if e["seq"] == seq)
        assert pcm == await reference_pcm(FakeEngine(), text)


def pool_for(url: str, reconnect_window: float) -> SessionPool:
    config = SessionConfig(backoff_initial=0.05, backoff_max=0.2, reconnect_window=reconnect_window)
    return SessionPool(WebSocketTransport(url), config)


async def test_sigterm_mid_turn_drains_and_the_session_moves_to_the_restarted_server() -> None:
    old = ServerProcess("--drain-s", "10", infer_s=INFER_S).start()
    new = ServerProcess(infer_s=INFER_S, port=old.port)
    pool = pool_for(old.ws_url, reconnect_window=20)
    await pool.prewarm()
    restarted: list[asyncio.Future[object]] = []

    def restart() -> None:  # as an orchestrator does: SIGTERM, wait for the exit, start anew
        old.signal(signal.SIGTERM)
        restarted.append(
            asyncio.ensure_future(asyncio.to_thread(lambda: (old.wait(15), new.start())))
        )

    try:
        events = await run_turn(pool, restart)
        await assert_spoken_whole(events, notices=("tts_reconnecting",))
        assert old.wait(15) == -signal.SIGTERM
        await restarted[0]
        events = await run_turn(pool, lambda: None)  # the next turn, same session
        await assert_spoken_whole(events)
        [session] = [await pool.borrow()]
        assert session.connections == 2 and pool.idle == 0  # the one warm session, reconnected
    finally:
        await pool.aclose()
        old.kill()
        new.kill()


async def test_sigkill_mid_turn_reports_tts_unavailable_and_the_next_turn_speaks() -> None:
    server = ServerProcess(infer_s=INFER_S).start()
    pool = pool_for(server.ws_url, reconnect_window=0.8)
    await pool.prewarm()
    try:
        events = await run_turn(pool, lambda: server.signal(signal.SIGKILL))
        errors = [e for e in events if e["type"] == "error"]  # given up within 0.8 s
        assert [e["code"] for e in errors] == ["tts_unavailable"]
        order = kinds(events)
        assert order[-1] == "turn.end" and order.count("segment") == order.count("segment.end")
        assert order.count("segment") == 5 and order.count("text.delta") > 20  # the text went on
        server.kill()
        server = ServerProcess(infer_s=INFER_S, port=server.port).start()
        await assert_spoken_whole(await run_turn(pool, lambda: None))
    finally:
        await pool.aclose()
        server.kill()
