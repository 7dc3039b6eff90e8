"""The turn sweep's report: the settings' table, the people's table and the files written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.latency.turn_sweep_report import page, people, table, write


def a_row(setting: str, default: bool, cut: list[str]) -> dict[str, Any]:
    asks = setting != "silence rule (500 ms)"
    return {
        "setting": setting,
        "default": default,
        "pause_ms": 96 if asks else None,
        "false_cutoffs": 3,
        "whole_cut": 0,
        "eot_ms": {"median": 219.2, "p90": 1056.0},
        "eot_mean_ms": 352.4,
        "ended_by_model": 34,
        "questions_by_model": 6,
        "asked_per_utterance": 1.67,
        "human_cut": len(cut),
        "human_cut_clips": cut,
        "human_eot_ms": {"median": None if len(cut) == 2 else 251.0, "p90": None},
        "human_eot_mean_ms": None if len(cut) == 2 else 300.4,
    }


def a_report() -> dict[str, Any]:
    clips = [
        {"name": "0880", "speaker": "LibriVox reader", "text": "he was not", "seconds": 2.89},
        {"name": "001", "speaker": "cards speaker", "text": "ten of clubs", "seconds": 1.08},
    ]
    return {
        "date": "2026-12-07 03:00 UTC",
        "commit": "abc1234+",
        "machine": {"cores": 2, "load_average": [5.1, 5.0, 4.9]},
        "load_average_end": [5.5, 5.2, 5.0],
        "paused": 30,
        "complete": 40,
        "human": clips,
        "model_ms": {"median": 43.2, "p90": 44.6},
        "decisions": 459,
        "rows": [
            a_row("silence rule (500 ms)", False, []),
            a_row("pause 96 ms, threshold 0.3", True, ["0880"]),
            a_row("pause 64 ms, threshold 0.3", False, ["0880", "001"]),
        ],
    }


def test_the_table_bolds_the_default_and_dashes_a_delay_with_every_utterance_cut() -> None:
    header, _, silence, default, all_cut = table(a_report())
    assert "(of 30)" in header and "(of 40)" in header and "(of 2)" in header
    assert silence == "| silence rule (500 ms) | 3 | 0 | 219 ms (352) | - | - | 0 | 251 ms (300) |"
    assert default.startswith("| **pause 96 ms, threshold 0.3 (the default)** | **3** |")
    assert default.endswith("| **1** | **251 ms (300)** |")
    assert all_cut.endswith("| 34 (6) | 1.67 | 2 | - |")


def test_the_people_say_how_many_settings_cut_each_and_whether_the_default_did() -> None:
    _, _, reader, cards = people(a_report())
    assert reader == "| 0880 | LibriVox reader | he was not | 2.89 | 2 | yes |"
    assert cards == "| 001 | cards speaker | ten of clubs | 1.08 | 1 | no |"


def test_the_page_names_the_commit_the_load_and_the_model_time() -> None:
    text = "\n".join(page(a_report()))
    assert "commit abc1234+" in text and "load average 5.1 at the start and 5.5 at the end" in text
    assert "(43.2 ms, p90 44.6, 459 distinct decisions)" in text
    assert "## The people's utterances" in text


def test_write_puts_the_commit_in_both_files(tmp_path: Path) -> None:
    report = {key: value for key, value in a_report().items() if key != "commit"}
    json_path, md_path = write(report, tmp_path, "sweep")
    assert json.loads(json_path.read_text())["commit"]
    assert md_path.name == "sweep.md" and "# The turn model's pauses" in md_path.read_text()
