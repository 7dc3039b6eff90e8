"""Each end-of-turn rule replayed offline on TTS-made audio: where it ends the turn."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agent.listening.turn_model import SmartTurn
from bench.latency.endpointing import CONFIGS, FRAME_MS, pause_wait_ms, replay
from tests.agent.listening.speech import silence, spoken
from tts_server.engines import Engine

BEFORE, AFTER = "Could you book a table for", "four people tonight?"


def test_the_rules_differ_only_in_how_the_turn_ends() -> None:
    assert [c.endpointing for c in CONFIGS.values()] == ["silence", *["turn_model"] * 3]
    assert [c.eager_asr for c in CONFIGS.values()] == [False, False, True, True]
    assert [c.eager_start for c in CONFIGS.values()] == [False, False, False, True]
    assert pause_wait_ms(CONFIGS["turn_model"]) == 160  # 5 whole 32 ms windows
    assert pause_wait_ms(replace(CONFIGS["turn_model"], pause_ms=200)) == 224  # 7 windows


def test_the_silence_rule_cuts_a_long_pause_and_the_turn_model_asks_at_it(engine: Engine) -> None:
    before, after = spoken(engine, BEFORE), spoken(engine, AFTER)
    stream = silence(400) + before + silence(700) + after + silence(1500)
    pause_at = 400 + len(before) / 32
    cut = replay(stream, CONFIGS["silence"])
    assert cut.at_ms <= pause_at + 2 * FRAME_MS and cut.costs == []
    assert (cut.frame + 1) * FRAME_MS == cut.at_ms + 512  # 16 quiet windows after the speech
    model = SmartTurn()
    model.load()
    asked = replay(stream, CONFIGS["turn_model"], model)
    assert asked.costs and all(cost > 0 for cost in asked.costs)  # one per pause asked
    with pytest.raises(ValueError, match="needs a model"):
        replay(stream, CONFIGS["turn_model"])


def test_a_turn_that_never_ends_is_an_error(engine: Engine) -> None:
    with pytest.raises(ValueError, match="never ended"):
        replay(silence(400) + spoken(engine, AFTER), CONFIGS["silence"])
