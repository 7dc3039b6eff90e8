"""The agent's /metrics on both front doors: real turns (demo model, fake-engine TTS server)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import WebSocketDenialResponse, WebSocketTestSession

from agent.browser_leg import SESSION_HEADER
from agent.config import AgentConfig
from agent.core.service import VoiceAgent
from agent.doors import agentcore as agentcore_app
from agent.doors import devserver
from agent.doors.metrics import AgentMetrics
from agent.events import ErrorEvent, Event, SpeechEnd, TurnEnd, TurnStart
from tts_server.testing.server_thread import ServerThread

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
FAST = {"first_token_delay_s": 0.0, "tokens_per_second": 400.0, "sentences": 2}


def parse(text: str) -> Samples:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def fast(voice_agent: VoiceAgent, conversation: str) -> None:
    """The conversation's demo model, without its think time and at 400 tokens a second."""
    voice_agent.conversations.get(conversation).agent.model.update_config(**FAST)


@pytest.fixture
def client(fake_tts: ServerThread) -> Iterator[TestClient]:
    config = AgentConfig(model="demo", tts_url=fake_tts.ws_url)
    with TestClient(devserver.create_app(config), base_url="http://localhost") as client:
        fast(client.app.state.voice_agent, "m")  # type: ignore[attr-defined]
        yield client


def scrape(client: TestClient | httpx.Client) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200
    return parse(response.text)


def test_an_sse_turn_is_counted_with_its_latencies(client: TestClient) -> None:
    response = client.post("/invocations", json={"prompt": "Hi"}, headers={SESSION_HEADER: "m"})
    assert response.status_code == 200 and '"turn.end"' in response.text
    samples = scrape(client)
    assert value(samples, "agent_turns_total", transport="sse", outcome="ok") == 1
    for histogram in ("agent_turn_first_audio", "agent_llm_first_token", "agent_turn_duration"):
        assert value(samples, f"{histogram}_seconds_count", transport="sse") == 1
    first_audio = value(samples, "agent_turn_first_audio_seconds_sum", transport="sse")
    first_token = value(samples, "agent_llm_first_token_seconds_sum", transport="sse")
    assert 0 < first_token < first_audio
    assert value(samples, "agent_sse_clients") == 0
    assert value(samples, "agent_turns_in_progress", transport="sse") == 0


def test_refusals_over_http_and_websocket_are_counted_by_code(client: TestClient) -> None:
    assert client.post("/invocations", content=b"{oops").status_code == 400
    assert client.post("/invocations", json={"prompt": ""}).status_code == 400
    with client.websocket_connect("ws://localhost/ws") as socket:
        assert socket.receive_json()["type"] == "ready"
        socket.send_bytes(b"[" * 5000)
        assert socket.receive_json()["code"] == "invalid_json"
        assert value(scrape(client), "agent_ws_clients") == 1
    samples = scrape(client)
    assert value(samples, "agent_ws_clients") == 0
    assert value(samples, "agent_errors_total", code="invalid_json") == 2
    assert value(samples, "agent_errors_total", code="invalid_prompt") == 1


def until_text(socket: WebSocketTestSession, needle: str) -> None:
    """Read the socket until a text frame containing ``needle`` (within 10,000 frames)."""
    for _ in range(10_000):
        if needle in (socket.receive().get("text") or ""):
            return
    pytest.fail(f"no frame with {needle!r} in 10,000")


def test_websocket_turns_count_completed_and_cancelled(client: TestClient) -> None:
    with client.websocket_connect("ws://localhost/ws", headers={SESSION_HEADER: "m"}) as socket:
        assert socket.receive_json()["type"] == "ready"
        socket.send_json({"type": "prompt", "prompt": "Hi"})
        until_text(socket, '"turn.end"')
        socket.send_json({"type": "prompt", "prompt": "Again"})
        until_text(socket, '"turn.start"')
        socket.send_json({"type": "cancel"})
        until_text(socket, '"cancelled"')
    samples = scrape(client)
    assert value(samples, "agent_turns_total", transport="ws", outcome="ok") == 1
    assert value(samples, "agent_turns_total", transport="ws", outcome="cancelled") == 1
    assert value(samples, "agent_turn_first_audio_seconds_count", transport="ws") == 1


async def test_outcomes_follow_the_events() -> None:
    metrics = AgentMetrics()

    async def turn(*codes: str) -> AsyncGenerator[Event, None]:
        yield TurnStart("t", "stream")
        for code in codes:
            yield ErrorEvent(code, "x")
        yield TurnEnd()

    for codes in [(), ("tts_unavailable",), ("superseded",), ("llm_failed", "superseded")]:
        assert [e async for e in metrics.observe(turn(*codes), "sse")][-1] == TurnEnd()
    cut = metrics.observe(turn(), "sse")
    await anext(cut)
    await cut.aclose()  # the client left before turn.end
    samples = parse(generate_latest(metrics.registry).decode())
    outcomes = ("ok", "error", "superseded", "cancelled")
    counts = {o: value(samples, "agent_turns_total", transport="sse", outcome=o) for o in outcomes}
    assert counts == {"ok": 1, "error": 1, "superseded": 2, "cancelled": 1}
    assert value(samples, "agent_errors_total", code="superseded") == 2
    assert value(samples, "agent_sse_clients") == 0


def test_the_agentcore_app_serves_metrics_and_counts_its_turns(fake_tts: ServerThread) -> None:
    config = AgentConfig(model="demo", tts_url=fake_tts.ws_url)
    server = ServerThread(agentcore_app.create_app(config)).start()
    try:
        fast(server._server.config.app.state.voice_agent, "ac")  # type: ignore[attr-defined]
        with httpx.Client(base_url=server.http_url, timeout=30) as http:
            assert http.post("/invocations", content=b"{oops").status_code == 400
            turn = http.post("/invocations", json={"prompt": "Hi"}, headers={SESSION_HEADER: "ac"})
            assert '"turn.end"' in turn.text
            samples = scrape(http)
    finally:
        server.stop()
    assert value(samples, "agent_errors_total", code="invalid_json") == 1
    assert value(samples, "agent_turns_total", transport="sse", outcome="ok") == 1
    assert value(samples, "agent_turn_first_audio_seconds_count", transport="sse") == 1


def test_a_foreign_origins_handshake_and_an_idle_socket_are_counted(
    fake_tts: ServerThread,
) -> None:
    config = AgentConfig(model="demo", tts_url=fake_tts.ws_url, ws_idle_s=0.3)
    with TestClient(devserver.create_app(config), base_url="http://localhost") as client:
        with pytest.raises(WebSocketDenialResponse):
            client.websocket_connect(
                "ws://localhost/ws", headers={"origin": "https://evil.example"}
            ).__enter__()
        with client.websocket_connect("ws://localhost/ws") as socket:
            assert socket.receive_json()["type"] == "ready"
            assert socket.receive_json()["code"] == "idle_timeout"
        samples = scrape(client)
    assert value(samples, "agent_errors_total", code="origin_not_allowed") == 1
    assert value(samples, "agent_errors_total", code="idle_timeout") == 1


def test_the_end_of_turn_delay_and_the_turn_models_cost_come_from_speech_end() -> None:
    metrics = AgentMetrics()
    for event in (
        SpeechEnd(900.0, 1200.0, "silence", 224.0, "complete", 0.9, 40.0),  # ended by the model
        SpeechEnd(900.0, 1800.0, "silence", 1024.0, "incomplete", 0.1, 60.0),  # by the wait
        SpeechEnd(900.0, 1200.0, "silence", 512.0),  # the silence rule: no model
        SpeechEnd(900.0, 1200.0, "talk.end"),  # push-to-talk: no wait
    ):
        metrics.socket_event(event)
    sample = metrics.registry.get_sample_value
    assert sample("agent_end_of_turn_seconds_count") == 3
    assert sample("agent_end_of_turn_seconds_sum") == pytest.approx(0.264 + 1.024 + 0.512)
    assert sample("agent_turn_model_seconds_count", {"decision": "complete"}) == 1
    assert sample("agent_turn_model_seconds_sum", {"decision": "incomplete"}) == 0.06
