"""The voice-to-voice figures and their report, on figures given to them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.latency.endpointing import CONFIGS, DEFAULT
from bench.latency.voice_to_voice_report import write
from bench.latency.voice_to_voice_summary import summary


def row(v2v: float, floor: float, asr: float) -> dict[str, Any]:
    stages = {"eot_wait_ms": 530.0, "asr_ms_seen": asr + 5, "llm_first_token_ms": 310.0}
    stages |= {"first_segment_ms": 180.0, "synthesis_ms": v2v - 1025.0 - asr}
    return {
        "text": "Turn on the lights.",
        "heard": "Turn on the lights.",
        "wer": 0.0,
        "speech_ms": 1200.0,
        "utterance_ms": 1700.0,
        "asr_ms": asr,
        **stages,
        "voice_to_voice_ms": v2v,
        "transcript_ms": 535.0 + asr,
        "turn": None,
        "turn_score": None,
        "turn_ms": 45.0,
        "floors": dict.fromkeys(stages, floor / 5),
        "designed_silence_ms": 512,
        "floor_ms": floor,
        "overhead_ms": v2v - floor,
        "asr_rtf": round(asr / 1700, 3),
    }


def trial(paused: bool, cut: bool, eot: float, early: int = 0) -> dict[str, Any]:
    return {
        "text": "A table for four.",
        "paused": paused,
        "pause_ms": 600 if paused else 0,
        "cut_in_pause": cut,
        "eot_ms": eot,
        "reply_frames_before_end": early,
        "turn": None,
        "turn_ms": None,
    }


def test_the_summary_and_the_report_compare_the_configurations(tmp_path: Path) -> None:
    rows = [row(1500, 1460, 300), row(1600, 1540, 340), row(1700, 1600, 360)]
    corpus = {
        "silence": [trial(True, True, 560), trial(False, False, 560)] * 2,
        "turn_model": [trial(True, False, 330), trial(False, False, 300)] * 2,
        "eager_asr": [trial(True, False, 330, early=3), trial(False, False, 300)] * 2,
        DEFAULT: [
            trial(True, True, 320),
            trial(False, False, 200),
            trial(True, False, 330),
            trial(False, False, -1500),  # ended in a short gap, 1.5 s before its speech did
        ],
    }
    results = {
        "configs": {
            name: {"utterances": rows, "pauses": corpus[name], "withdrawn": i}
            for i, name in enumerate(CONFIGS)
        },
        "barge_ins": [
            {
                "onset_to_paused_ms": 230,
                "onset_to_cancelled_ms": 1050,
                "onset_to_last_reply_frame_ms": 240,
            },
            {
                "onset_to_paused_ms": 250,
                "onset_to_cancelled_ms": 990,
                "onset_to_last_reply_frame_ms": 260,
            },
        ],
        "asr_alone": [{"text": "x", "audio_ms": 3000.0, "asr_ms": 420.0}],
        "vad": {"windows": 100, "wall_ms": {"median": 0.8, "p90": 1.1}, "cpu_ms": 1.5},
        "replayed": {
            "false_cutoffs": {"silence": 2, "turn_model": 0},
            "sentences": 2,
            "turn_model_ms": [40.0, 42.0, 90.0],
        },
    }
    s = summary(results)
    assert s["voice_to_voice_ms"] == {"median": 1600.0, "p90": 1680.0}  # all on
    assert s["ablation"]["silence"]["pauses"]["false_cutoff_rate"] == 0.5  # 2 of 4 trials
    assert s["ablation"][DEFAULT]["cut"] == 0  # no question ended before its speech did
    assert s["ablation"][DEFAULT]["pauses"] | {"eot_ms": None} == {
        "paused": 2,
        "false_cutoffs": 1,
        "whole_cut": 1,
        "false_cutoff_rate": 0.5,  # one in its pause, one whole sentence in a gap
        "complete": 2,
        "eot_mean_ms": 200.0,  # the sentence not cut
        "eot_ms": None,
        "replies_before_end": 0,
    }
    assert s["ablation"]["eager_asr"]["pauses"]["replies_before_end"] == 2  # trials, not frames
    assert s["ablation"][DEFAULT]["withdrawn"] == 3
    assert s["turn_model_cost_ms"]["alone"] == {"decisions": 3, "median": 42.0, "p99": 89.0}
    assert s["turn_model_cost_ms"]["live"]["decisions"] == 12  # turn_ms of every utterance
    assert s["goals"]["false_cutoff_rate"] == {"goal": 0.5, "measured": 0.5, "met": True}
    assert s["goals"]["eot_complete_ms"] == {"goal": 250.0, "measured": 200.0, "met": True}
    assert s["goals"]["overhead_ms"] == {"goal": 50.0, "measured": 60.0, "met": False}
    assert s["goals"]["asr_rtf_3s"] == {"goal": 0.15, "measured": 0.14, "met": True}
    # the reply stops where the page pauses it, not where the words cut it
    assert s["goals"]["barge_in_stop_ms"] == {"goal": 300.0, "measured": 240.0, "met": True}
    assert s["onset_to_cancelled_ms"]["median"] == 1020.0
    assert s["asr_rtf"] == {"median": 0.2, "p90": 0.21}  # three decimals, not one
    assert s["goals"]["speculative_heard"] == {"goal": 0, "measured": 0, "met": True}
    report = {
        "benchmark": "voice_to_voice",
        "date": "2026-12-01 23:59 UTC",
        "machine": {"cpu": "test", "cores": 2, "load_average": [1.0], "load_average_at_end": [1.0]},
        "setup": {
            "agent": "dev server",
            "tts": "local",
            "listening": {
                "silence_ms": 500,
                "pause_ms": 200,
                "turn_wait_ms": 1000,
                "turn_threshold": 0.5,
                "turn_recheck_ms": 160,
                "turn_recheck_threshold": 0.7,
                "barge_in_ms": 200,
                "asr_threads": 2,
            },
        },
        **results,
        "summary": s,
    }
    json_path, md_path, png_path = write(report, tmp_path)
    assert json.loads(json_path.read_text())["summary"] == s
    text = md_path.read_text()
    assert "| silence rule (500 ms) | + turn model | + eager recognition | + eager start |" in text
    assert "| **voice to voice** | " + " | ".join(["**1600 / 1680**"] * 4) + " |" in text
    assert (
        "| pause corpus: false cut-offs | 2/2 in the pauses, 0/2 whole (50 % of the trials) "
        "| 0/2 in the pauses, 0/2 whole (0 % of the trials) "
        "| 0/2 in the pauses, 0/2 whole (0 % of the trials) "
        "| 1/2 in the pauses, 1/2 whole (50 % of the trials) |" in text
    )
    assert (
        "- + eager start: voice to voice **1600 ms** median (p90 1680), end of turn 530 ms, "
        "end of speech to transcript 875 ms; pause corpus: 1/2 false cut-offs in the pauses and "
        "1/2 whole sentences (and 0/3 questions) cut in a short gap, end of turn 200 ms median "
        "on the others" in text
    )
    assert "reply frames before the end | 0; 0 | 1; 0 | 2; 2 | 3; 0 |" in text
    assert "load average 1.0 at the start and 1.0 at the end" in text
    assert "median 42.0, p99 89.0, 3 decisions" in text
    assert png_path.read_bytes()[:4] == b"\x89PNG"
