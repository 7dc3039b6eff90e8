"""The voice-to-voice benchmark's own arithmetic and report, on figures given to it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.config import ListeningConfig
from agent.core.llm import DemoConfig, demo_reply
from bench.latency.voice_to_voice import (
    FRAME_MS,
    decision_frame,
    first_sentence_ms,
    speech_span_ms,
    summary,
)
from bench.latency.voice_to_voice_report import write
from tests.agent.listening.speech import silence, spoken
from tts_server.engines import Engine


def test_the_speech_span_is_where_the_samples_are_loud() -> None:
    quiet, loud = b"\x00\x00" * 1600, b"\x00\x40" * 3200  # 100 ms of zeros, 200 ms at half scale
    assert speech_span_ms(quiet + loud + quiet) == (100.0, 300.0)


def test_the_first_sentence_takes_the_demo_model_its_tokens_at_its_rate() -> None:
    reply = demo_reply("Turn on the lights", 4)
    first = reply[: reply.index(".") + 1]  # "You said: Turn on the lights."
    demo = DemoConfig(tokens_per_second=10.0)
    assert first_sentence_ms("Turn on the lights", first, demo) == 800.0  # 8 tokens at 10/s


def test_the_end_of_turn_floor_is_where_the_endpointer_alone_ends_the_turn(
    engine: Engine,
) -> None:
    stream = silence(400) + spoken(engine, "Turn on the lights.") + silence(1500)
    _, speech_end = speech_span_ms(stream)
    last_loud = -(-speech_end // FRAME_MS) - 1
    after = (decision_frame(stream) - last_loud) * FRAME_MS
    designed = ListeningConfig().silence_ms
    assert designed <= after <= designed + 4 * FRAME_MS  # the silence, and Silero's fall
    with pytest.raises(ValueError, match="never ended"):
        decision_frame(stream[: len(stream) - 1500 * 32])  # the speech never ends


def row(v2v: float, floor: float, asr: float) -> dict[str, Any]:
    stages = {"eot_wait_ms": 530.0, "asr_ms_seen": asr + 5, "llm_first_token_ms": 310.0}
    stages |= {"first_segment_ms": 180.0, "synthesis_ms": v2v - 1025.0 - asr}
    floors = dict.fromkeys(stages, floor / 5)
    return {
        "text": "Turn on the lights.",
        "heard": "Turn on the lights.",
        "wer": 0.0,
        "speech_ms": 1200.0,
        "utterance_ms": 1700.0,
        "asr_ms": asr,
        **stages,
        "voice_to_voice_ms": v2v,
        "floors": floors,
        "designed_silence_ms": 512,
        "floor_ms": floor,
        "overhead_ms": v2v - floor,
        "asr_rtf": round(asr / 1700, 3),
    }


def test_the_summary_and_the_goals_say_what_was_met(tmp_path: Path) -> None:
    results = {
        "utterances": [row(1500, 1460, 300), row(1600, 1540, 340), row(1700, 1600, 360)],
        "barge_ins": [{"onset_to_cancelled_ms": 250, "onset_to_last_reply_frame_ms": 240}] * 2,
        "asr_alone": [{"text": "x", "audio_ms": 3000.0, "asr_ms": 420.0}],
        "vad": {"windows": 100, "wall_ms": {"median": 0.8, "p90": 1.1}, "cpu_ms": 1.5},
    }
    s = summary(results)
    assert s["voice_to_voice_ms"] == {"median": 1600.0, "p90": 1680.0}
    assert s["goals"]["overhead_ms"] == {"goal": 50.0, "measured": 60.0, "met": False}
    assert s["goals"]["asr_rtf_3s"] == {"goal": 0.15, "measured": 0.14, "met": True}
    assert s["goals"]["barge_in_stop_ms"]["met"] and s["goals"]["vad_ms_per_window"]["met"]
    report = {
        "benchmark": "voice_to_voice",
        "date": "2026-12-01 23:59 UTC",
        "machine": {"cpu": "test", "cores": 2, "load_average": [1.0], "load_average_at_end": [1.0]},
        "setup": {
            "agent": "dev server",
            "tts": "local",
            "listening": {"silence_ms": 500, "barge_in_ms": 200, "asr_threads": 2},
        },
        **results,
        "summary": s,
    }
    json_path, md_path, png_path = write(report, tmp_path)
    assert json.loads(json_path.read_text())["summary"] == s
    text = md_path.read_text()
    assert (
        "| voice to voice over the sum of its stage floors, ms (median) | 50.0 | 60.000 | **no** |"
        in text
    )
    assert "**voice to voice** | **1600 / 1680**" in text
    assert png_path.read_bytes()[:4] == b"\x89PNG"
