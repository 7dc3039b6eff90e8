"""What both front doors share (``FrontDoor``): how a turn starts in place, and what a door's
socket reports to its metrics."""

from __future__ import annotations

from agent.config import AgentConfig
from agent.doors.wiring import FrontDoor
from agent.events import ErrorEvent, SpeechEnd, Transcript
from agent.listening.recognizer import Recognition
from agent.requests import TurnRequest

NOWHERE = "ws://127.0.0.1:9/invocations-bidirectional-stream"  # the discard port


class Idle:
    queue_depth = 3

    async def load(self) -> None: ...

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        return Recognition("", 0.0)


def door() -> FrontDoor:
    return FrontDoor(AgentConfig(model="demo", tts_url=NOWHERE), Idle())


async def test_local_turns_start_the_voice_agents_turn_in_its_conversation() -> None:
    front = door()
    try:
        events = await front.local_turns()(TurnRequest("Hi"), "c7")
        current = front.voice_agent.conversations.get("c7").current
        assert current is not None and current.request == TurnRequest("Hi")
        assert front.busy
        assert (await anext(events)).type == "turn.start"
        await events.aclose()
    finally:
        await front.voice_agent.aclose()


async def test_a_sockets_own_events_are_counted_by_kind() -> None:
    front = door()
    metrics = front.metrics
    for event in (
        ErrorEvent("idle_timeout", "no use"),
        SpeechEnd(10.0, 900.0, "silence"),
        Transcript("Hi", 900.0, 120.0),
    ):
        metrics.socket_event(event)
    registry = metrics.registry
    assert registry.get_sample_value("agent_errors_total", {"code": "idle_timeout"}) == 1
    assert registry.get_sample_value("agent_utterances_total", {"reason": "silence"}) == 1
    assert registry.get_sample_value("agent_asr_seconds_count") == 1
    assert registry.get_sample_value("agent_asr_queue_depth") == 3  # the recognizer, watched
    await front.voice_agent.aclose()
