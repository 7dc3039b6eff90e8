"""The page-hearing benchmark's report: its figures, its file names, its page."""

from __future__ import annotations

from typing import Any

import pytest

from bench.speech.page_hearing_report import command, markdown, report, stem


def a_row(clip: str, offline_wer: float, page_wer: float, worst: float) -> dict[str, Any]:
    return {
        "clip": clip,
        "offline": "o",
        "page": "p",
        "offline_wer": offline_wer,
        "page_wer": page_wer,
        "worse_by": round(page_wer - offline_wer, 4),
        "offline_worst_wer": worst,
        "worse_than_worst": round(page_wer - worst, 4),
        "utterances": 2,
        "speech_db": -20.5,
        "heard_db": -20.8,
        "lead_ms": -40.2,
        "voiced_ms": 180.0,
    }


def test_the_report_counts_the_clips_over_the_bound_and_over_the_spread() -> None:
    rows = [a_row("a", 0.0, 0.2, 0.2), a_row("b", 0.25, 0.625, 0.25), a_row("c", 0.1, 0.1, 0.1)]
    result = report(rows, "page", "human", (0, 1, 2), (4.5, 5.0, 4.3))
    assert (result["over_bound"], result["over_spread"], result["clips"]) == (2, 1, 3)
    assert result["worst_gap"] == 0.375 and result["page_wer_mean"] == pytest.approx(0.3083, 1e-3)
    assert result["load_average_before"] == [4.5, 5.0, 4.3] and result["shifts_ms"] == [0, 1, 2]
    assert result["commit"]


def test_the_page_names_the_command_the_load_and_each_column() -> None:
    result = report([a_row("001 (cards): ten of clubs", 0.0, 0.0, 0.0)], "page", "human", (0, 1))
    text = markdown(result)
    assert "`python -m bench.speech.page_hearing --corpus human --variant page`" in text
    assert f"load average {result['load_average']}:" in text  # no start given
    assert "delayed by 1 ms" in text and "[asr_human.md](asr_human.md)" in text
    assert "| 001 (cards): ten of clubs | o | p | 0.00 | 0.00 | 0.00 | 2 | -20.5 | -20.8 |" in text
    assert "| -40.2 | 180.0 |" in text and "`voiced at ms`" in text
    espeak = markdown(report([a_row("x", 0.0, 0.0, 0.0)], "page", "espeak", (0, 1)))
    assert "asr_human.md" not in espeak and "--corpus" not in espeak


def test_each_corpus_and_variant_has_its_own_report() -> None:
    assert stem("espeak", "page") == "page_hearing"
    assert stem("espeak", "worklet_31") == "page_hearing_worklet_31"
    assert stem("human", "page") == "page_hearing_human"
    assert stem("human", "constraints_on") == "page_hearing_human_constraints_on"
    assert command("espeak", "page") == "python -m bench.speech.page_hearing --variant page"
