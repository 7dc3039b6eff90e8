"""The turn model's knobs swept offline: a quick real run on two sentences of the pause corpus,
and a person's whole utterance (here the project's voice with a pause put in) cut before its
end where the model is asked in the pause."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.latency import turn_sweep
from bench.latency.turn_sweep import (
    FIRSTS,
    PAUSES_MS,
    RECHECK_THRESHOLDS,
    RECHECKS_MS,
    THRESHOLDS,
    ScoredOnce,
    is_default,
    main,
    settings,
    sweep,
    with_cost,
)
from bench.speech.human_speech import HumanClip
from tests.agent.listening.speech import silence, spoken
from tts_server.engines import Engine

TWICE = sum(r > p for p, _ in FIRSTS for r in RECHECKS_MS) * len(RECHECK_THRESHOLDS)


class Counted:
    """A turn model that counts what it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    def load(self) -> None: ...

    def score(self, pcm: bytes) -> float:
        self.asked += 1
        return len(pcm) % 7 / 7


class Fixed:
    """A turn model with one score for any audio."""

    def __init__(self, score: float) -> None:
        self._score = score

    def load(self) -> None: ...

    def score(self, pcm: bytes) -> float:
        return self._score


@pytest.fixture(scope="module")
def person(engine: Engine) -> bytes:
    """One whole utterance with a speaker's pause in it: 300 ms between two phrases."""
    return (
        spoken(engine, "He was not") + silence(300) + spoken(engine, "an ill disposed young man.")
    )


def clip_of(pcm: bytes) -> HumanClip:
    samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    words = "he was not an ill disposed young man"
    return HumanClip("0880", "a reader", words, samples, "p==1", "0880.wav", "BSD", "here")


def test_each_distinct_audio_is_scored_once() -> None:
    counted = Counted()
    model = ScoredOnce(counted)
    assert model.score(b"\x01" * 64) == model.score(b"\x01" * 64) == 64 % 7 / 7
    model.score(b"\x02" * 64)
    assert counted.asked == len(model.costs) == 2


def test_the_defaults_are_one_of_the_settings() -> None:
    assert len([name for name, config in settings().items() if is_default(config)]) == 1


def test_a_person_asked_in_a_pause_is_cut_before_the_end(person: bytes) -> None:
    rows = {
        row["setting"]: row for row in with_cost(sweep([], [], {"0880": person}, Fixed(0.6)), 40)
    }
    silence_rule = rows["silence rule (500 ms)"]
    assert silence_rule["human_cut"] == 0 and silence_rule["human_eot_ms"]["median"] >= 512
    cut = rows["pause 96 ms, threshold 0.5"]  # 0.6 ends the turn at the pause
    assert cut["human_cut"] == 1 and cut["human_cut_clips"] == ["0880"]
    assert cut["human_eot_ms"]["median"] is None and cut["human_eot_mean_ms"] is None
    held = rows["pause 96 ms, threshold 0.7"]  # 0.6 never does: the wait ends it
    assert held["human_cut"] == 0 and held["human_by_model"] == 0
    assert held["human_eot_ms"]["median"] >= 1000
    assert all(row["whole_cut"] == 0 and row["asked_per_utterance"] == 0 for row in rows.values())


def test_a_quick_run_writes_every_setting(
    tmp_path: Path, person: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turn_sweep, "human_clips", lambda: [clip_of(person)])
    assert main(["--sentences", "2", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "turn_sweep.json").read_text())
    rows = report["rows"]
    assert len(rows) == 1 + len(PAUSES_MS) * len(THRESHOLDS) + TWICE
    assert report["paused"] == 2 and report["complete"] == 12  # 2 whole + the 10 questions
    assert [clip["name"] for clip in report["human"]] == ["0880"] and report["commit"]
    silence_rule, *swept = rows
    assert silence_rule["pause_ms"] is None and silence_rule["ended_by_model"] == 0
    assert min(silence_rule["eot_ms"]["median"], silence_rule["eot_mean_ms"]) >= 512
    assert silence_rule["human_cut"] == 0  # its pause is under 500 ms
    for row in swept:
        assert 0 <= row["false_cutoffs"] <= 2 and row["asked_per_utterance"] >= 1
        assert row["eot_ms"]["median"] >= row["pause_ms"]  # never before the pause it asks at
        assert 0 <= row["questions_by_model"] <= min(10, row["ended_by_model"])
        assert row["human_cut"] == len(row["human_cut_clips"]) <= 1
    assert {row["recheck_ms"] for row in swept[-TWICE:]} == set(RECHECKS_MS)
    assert {row["recheck_ms"] for row in swept[:-TWICE]} == {None}  # asked once
    assert sum(row["default"] for row in rows) == 1
    text = (tmp_path / "turn_sweep.md").read_text()
    assert "| pause 96 ms, threshold 0.3 |" in text
    assert "| pause 128 ms, threshold 0.5; again at 288 ms, threshold 0.85 |" in text
    assert "| 0880 | a reader | he was not an ill disposed young man |" in text
