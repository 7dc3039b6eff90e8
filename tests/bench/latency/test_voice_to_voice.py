"""The voice-to-voice benchmark: its floors on figures given to it, and one trial of each kind
against a real dev server (all on) and a fast fake TTS server, on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from agent.core.llm import DemoConfig, demo_reply
from agent.listening.turn_model import SmartTurn
from bench.latency.agent_latency import dev_server, ws_url
from bench.latency.endpointing import CONFIGS, DEFAULT
from bench.latency.pause_corpus import items, say, texts
from bench.latency.voice_to_voice import (
    asr_floor_ms,
    eot_floor_ms,
    first_sentence_ms,
    pause_trial,
    utterance,
)
from tests.conftest import start_server
from tts_server.engines import Engine
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread


def test_the_first_sentence_takes_the_demo_model_its_tokens_at_its_rate() -> None:
    reply = demo_reply("Turn on the lights", 4)
    first = reply[: reply.index(".") + 1]  # "You said: Turn on the lights."
    demo = DemoConfig(tokens_per_second=10.0)
    assert first_sentence_ms("Turn on the lights", first, demo) == 800.0  # 8 tokens at 10/s


def test_the_end_of_turn_floor_adds_the_model_only_when_its_answer_ended_the_turn() -> None:
    assert eot_floor_ms(17, {"turn": None}) == 544.0  # the silence rule: frames only
    complete = {"turn": "complete", "turn_ms": 41.5, "wait_ms": 224.0}
    assert eot_floor_ms(8, complete) == 297.5  # the reader waited for the answer
    assert eot_floor_ms(33, {"turn": "incomplete", "turn_ms": 41.5}) == 1056.0


def test_eager_recognition_takes_its_head_start_off_the_recognition_floor() -> None:
    complete = {"turn": "complete", "turn_ms": 40.0, "wait_ms": 224.0}
    incomplete = {"turn": "incomplete", "turn_ms": 40.0, "wait_ms": 1024.0}
    assert asr_floor_ms(400.0, complete, CONFIGS["silence"]) == 400.0
    assert asr_floor_ms(400.0, complete, CONFIGS["turn_model"]) == 400.0  # not eager
    assert asr_floor_ms(400.0, complete, CONFIGS["eager_asr"]) == 360.0  # the model's 40 ms
    assert asr_floor_ms(400.0, incomplete, CONFIGS["eager_asr"]) == 0.0  # ready in the wait
    assert asr_floor_ms(400.0, {"turn_ms": None}, CONFIGS["eager_asr"]) == 400.0  # no answer


@pytest.fixture
def fast_server() -> Iterator[ServerThread]:
    server = start_server(FakeEngine(), max_queue=16)
    yield server
    server.stop()


@pytest.mark.timeout(300)  # three real-time trials; a loaded 2-core box stretches them
def test_one_utterance_and_one_paused_sentence_through_the_socket(
    engine: Engine, fast_server: ServerThread
) -> None:
    (item,) = items(asyncio.run(say(texts(1), engine)), 1)  # a table for ... four people
    model = SmartTurn()
    model.load()

    async def trials(url: str) -> list[dict[str, Any]]:
        pcm, tts = item.pcm, fast_server.ws_url
        return [
            await utterance(url, tts, 0, item.text, pcm, DEFAULT, model),
            await pause_trial(url, DEFAULT, 0, item, paused=True),
            await pause_trial(url, DEFAULT, 0, item, paused=False),
        ]

    with dev_server(fast_server.ws_url, CONFIGS[DEFAULT]) as (url, _):
        spoken, paused, whole = asyncio.run(trials(ws_url(url)))
    assert spoken["voice_to_voice_ms"] == pytest.approx(
        sum(spoken[key] for key in spoken["floors"]), abs=1.0
    )
    assert spoken["turn"] in ("complete", "incomplete") and spoken["turn_ms"] > 0
    assert spoken["floors"]["eot_wait_ms"] >= 224  # at least the pause the model is asked at
    assert paused["paused"] and paused["pause_ms"] == item.pause_ms
    assert isinstance(paused["cut_in_pause"], bool)
    assert not whole["paused"] and not whole["cut_in_pause"] and whole["eot_ms"] > 224
