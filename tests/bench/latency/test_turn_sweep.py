"""The turn model's knobs swept offline: a quick real run on two sentences of the pause corpus."""

from __future__ import annotations

import json
from pathlib import Path

from bench.latency.turn_sweep import (
    FIRST_THRESHOLDS,
    PAUSES_MS,
    RECHECK_THRESHOLDS,
    RECHECKS_MS,
    THRESHOLDS,
    ScoredOnce,
    main,
)


class Counted:
    """A turn model that counts what it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    def load(self) -> None: ...

    def score(self, pcm: bytes) -> float:
        self.asked += 1
        return len(pcm) % 7 / 7


def test_each_distinct_audio_is_scored_once() -> None:
    counted = Counted()
    model = ScoredOnce(counted)
    assert model.score(b"\x01" * 64) == model.score(b"\x01" * 64) == 64 % 7 / 7
    model.score(b"\x02" * 64)
    assert counted.asked == len(model.costs) == 2


def test_a_quick_run_writes_every_setting(tmp_path: Path) -> None:
    assert main(["--sentences", "2", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "turn_sweep.json").read_text())
    rows = report["rows"]
    twice = len(FIRST_THRESHOLDS) * len(RECHECKS_MS) * len(RECHECK_THRESHOLDS)
    assert len(rows) == 1 + len(PAUSES_MS) * len(THRESHOLDS) + twice
    assert report["paused"] == 2 and report["complete"] == 12  # 2 whole + the 10 questions
    silence, *swept = rows
    assert silence["pause_ms"] is None and silence["ended_by_model"] == 0
    assert min(silence["eot_ms"]["median"], silence["eot_mean_ms"]) >= 512  # 16 windows
    for row in swept:
        assert 0 <= row["false_cutoffs"] <= 2 and row["asked_per_utterance"] >= 1
        assert row["eot_ms"]["median"] >= row["pause_ms"]  # never before the pause it asks at
        assert 0 <= row["questions_by_model"] <= min(10, row["ended_by_model"])
    assert [row["recheck_ms"] for row in swept[-twice:]] == [160, 160, 160, 224, 224, 224] * 2
    assert {row["recheck_ms"] for row in swept[:-twice]} == {None}  # asked once
    text = (tmp_path / "turn_sweep.md").read_text()
    assert "| pause 96 ms, threshold 0.3 |" in text
    assert "| pause 96 ms, threshold 0.3; again at 160 ms, threshold 0.7 |" in text
