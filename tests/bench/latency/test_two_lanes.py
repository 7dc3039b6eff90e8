"""The two-lanes benchmark's parts: its configurations, its figures and its report."""

from __future__ import annotations

import numpy as np

from bench.latency.streaming_synthesis import Heard
from bench.latency.two_lanes import REPLIES, configurations, figures, markdown


def heard(first_s: float, total_s: float, seconds: float, underruns: int = 0) -> Heard:
    chunks = [np.zeros(round(seconds * 24_000), np.float32)]
    return Heard(first_s, total_s, underruns, 0.01 * underruns, chunks)


def test_two_lanes_of_every_core_with_and_without_narrow_and_of_one_thread() -> None:
    configs = configurations(4)
    assert list(configs.values()) == [
        {"lane_threads": 4, "narrow": True},
        {"lane_threads": 4, "narrow": False},
        {"lane_threads": 1, "narrow": False},
    ]
    assert len(REPLIES) == 2 and REPLIES[0] != REPLIES[1]
    assert all(len(reply) > 3 for reply in REPLIES)


def test_audio_a_second_counts_both_listeners_over_the_slower() -> None:
    runs = [[heard(0.2, 10.0, 24.0), heard(0.4, 12.0, 24.0, 2)], [heard(0.3, 8.0, 24.0)]]
    got = figures(runs)
    assert got["first_audio_ms"] == 300.0 and got["total_ms"] == 10000.0
    assert got["audio_per_second"] == 3.5  # median of 48/12 and 24/8
    assert got["underruns"] == 2 and got["worst_gap_ms"] == 20.0


def test_the_report_has_a_row_per_configuration() -> None:
    row = {"first_audio_ms": 1.0, "total_ms": 2.0, "audio_per_second": 3.0}
    kinds = {"alone": {**row, "underruns": 0, "worst_gap_ms": 0.0}}
    kinds["two at once"] = {**row, "underruns": 4, "worst_gap_ms": 55.5}
    result = {
        "configurations": {"a": kinds},
        "memory_mb": {"a": 250},
        "beside_text_side": {
            "a": {
                "window_alone_ms": 270.0,
                "window_beside_text_side_ms": 310.5,
                "text_side_alone_ms": 75.0,
            }
        },
        "runs": 3,
        "machine": {"cpus": 2, "platform": "x"},
    }
    page = markdown(result)
    assert "| a | 250 | 1.0 | 2.0 | 1.0 | 2.0 | 3.0 | 4 (55.5) |" in page
    assert "| a | 270.0 | 310.5 | 75.0 |" in page
