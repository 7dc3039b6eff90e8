"""The voice-to-voice benchmark: its floors on figures given to it, and a quick real run of the
whole ablation (one utterance, one pause-corpus sentence) with a fast fake TTS server on
loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agent.core.llm import DemoConfig, demo_reply
from bench.latency.endpointing import CONFIGS, DEFAULT, last_ask_ms, pause_wait_ms
from bench.latency.pause_corpus import PAUSES_MS
from bench.latency.voice_to_voice import (
    asr_floor_ms,
    eager_start_floors,
    eot_floor_ms,
    first_sentence_ms,
    main,
)
from tests.conftest import start_server
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


def test_eager_recognition_takes_its_head_start_in_the_wait_off_the_recognition_floor() -> None:
    pause = float(pause_wait_ms(CONFIGS["eager_asr"]))
    complete = {"turn": "complete", "turn_ms": 40.0, "wait_ms": pause}  # ended at the pause
    incomplete = {"turn": "incomplete", "turn_ms": 40.0, "wait_ms": 1024.0}
    assert asr_floor_ms(400.0, complete, CONFIGS["silence"]) == 400.0
    assert asr_floor_ms(400.0, complete, CONFIGS["turn_model"]) == 400.0  # not eager
    assert asr_floor_ms(400.0, complete, CONFIGS["eager_asr"]) == 400.0  # begun after the model
    assert asr_floor_ms(400.0, incomplete, CONFIGS["eager_asr"]) == 0.0  # ready in the wait
    assert asr_floor_ms(900.0, incomplete, CONFIGS["eager_asr"]) == 140.0  # 1024 - 224 - 40
    assert asr_floor_ms(400.0, {"turn_ms": None}, CONFIGS["eager_asr"]) == 400.0  # no answer


def test_the_model_is_asked_last_at_its_second_ask_where_that_falls_inside_the_wait() -> None:
    assert last_ask_ms(CONFIGS["eager_asr"]) == 224  # 7 windows: after 160, again at 224
    assert last_ask_ms(replace(CONFIGS["eager_asr"], turn_recheck_ms=0)) == 160
    assert last_ask_ms(replace(CONFIGS["eager_asr"], pause_ms=200)) == 224  # 224: not after it
    assert last_ask_ms(replace(CONFIGS["eager_asr"], turn_recheck_ms=1000)) == 160  # the wait


def test_the_eager_start_takes_what_the_wait_left_off_the_replys_floors_in_order() -> None:
    floors = {
        "eot_wait_ms": 1060.0,
        "asr_ms_seen": 0.0,
        "llm_first_token_ms": 300.0,
        "first_segment_ms": 300.0,
        "synthesis_ms": 250.0,
    }
    incomplete = {"turn": "incomplete", "turn_ms": 40.0, "wait_ms": 1024.0}
    config = replace(CONFIGS["eager_start"], pause_ms=200)  # asked after 224 ms
    assert eager_start_floors(floors, 400.0, incomplete, config) == floors | {
        "llm_first_token_ms": 0.0,  # 1024 - 224 - 40 - 400: 360 ms left after recognition
        "first_segment_ms": 240.0,
        "synthesis_ms": 250.0,
    }
    assert eager_start_floors(floors, 400.0, incomplete, CONFIGS["eager_asr"]) == floors
    complete = {"turn": "complete", "turn_ms": 40.0, "wait_ms": 224.0}  # no reply was begun
    assert eager_start_floors(floors, 400.0, complete, config) == floors
    lone = floors | {"synthesis_ms": None}  # the lone synthesis was not measured
    assert eager_start_floors(lone, 0.0, incomplete, config)["synthesis_ms"] is None


@pytest.fixture
def fast_server() -> Iterator[ServerThread]:
    server = start_server(FakeEngine(), max_queue=16)
    yield server
    server.stop()


@pytest.mark.timeout(300)  # a dozen real-time trials; a loaded 2-core box stretches them
def test_a_quick_run_writes_the_ablation(fast_server: ServerThread, tmp_path: Path) -> None:
    argv = ["--utterances", "1", "--pauses", "1", "--barge-ins", "0"]
    assert main([*argv, "--tts-url", fast_server.ws_url, "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "voice_to_voice.json").read_text())
    assert list(report["configs"]) == list(CONFIGS)
    for runs in report["configs"].values():
        assert len(runs["utterances"]) == 1 and len(runs["pauses"]) == 2  # paused, whole
    assert report["replayed"]["sentences"] == 1 and report["replayed"]["turn_model_ms"]
    assert report["summary"]["goals"]["speculative_heard"]["measured"] == 0
    assert all(isinstance(c["withdrawn"], int) for c in report["configs"].values())
    assert "| pause corpus: false cut-offs |" in (tmp_path / "voice_to_voice.md").read_text()
    (spoken,) = report["configs"][DEFAULT]["utterances"]  # all on
    assert spoken["voice_to_voice_ms"] == pytest.approx(
        sum(spoken[key] for key in spoken["floors"]), abs=1.0
    )  # the stages, end to end
    assert spoken["turn"] in ("complete", "incomplete") and spoken["turn_ms"] > 0
    pause = pause_wait_ms(CONFIGS[DEFAULT])  # the pause the model is asked at, in whole windows
    assert spoken["floors"]["eot_wait_ms"] >= pause
    paused, whole = report["configs"][DEFAULT]["pauses"]
    assert paused["paused"] and paused["pause_ms"] == PAUSES_MS[0]
    assert not whole["paused"] and not whole["cut_in_pause"] and whole["eot_ms"] > pause
    (silence,) = report["configs"]["silence"]["utterances"]
    assert silence["turn"] is None and silence["floors"]["eot_wait_ms"] >= 512
