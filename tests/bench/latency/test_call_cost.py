"""The call-cost benchmark: the decoder timed over window sizes, a line fitted through them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.latency.call_cost import fit, main, windows


def test_the_line_separates_a_calls_cost_from_its_frames() -> None:
    decoded = [16, 24, 40, 72, 136]
    seconds = [0.033 + 0.0075 * n for n in decoded]  # 33 ms a call, 7.5 ms a frame
    line = fit(decoded, seconds)
    assert line == {"call_ms": 33.0, "frame_ms": 7.5, "call_frames": 4.4}


def test_each_window_has_the_default_context_either_side_within_the_sentence() -> None:
    cut = windows([8, 128], 200)
    assert [w.frames for w in cut.values()] == [8, 128]
    assert all(w.decoded_frames == w.frames + 8 for w in cut.values())
    with pytest.raises(ValueError, match="no window over 92"):
        windows([96], 100)


def test_the_report_times_one_stream_and_two_and_is_written(tmp_path: Path) -> None:
    assert main(["--runs", "1", "--sizes", "8", "24", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "call_cost.json").read_text())
    assert [c["streams"] for c in report["conditions"]] == [1, 2]
    for c in report["conditions"]:
        assert set(c["median_ms"]) == {"8", "24"} and c["frame_ms"] > 0
    assert "| 1 |" in (tmp_path / "call_cost.md").read_text()
