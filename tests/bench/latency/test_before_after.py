"""The before/after comparison of two latency runs, from committed reports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.latency.before_after import markdown

BENCHMARKS = Path(__file__).resolve().parents[3] / "docs" / "benchmarks"


def runs(tmp_path: Path) -> tuple[Path, Path]:
    """The house_refined runs, each with a committed voice-to-voice report beside it (the one
    frozen in house_wings/after/: the top-level one is rewritten by every run)."""
    folders = []
    for name in ("before", "after"):
        folder = tmp_path / name
        shutil.copytree(BENCHMARKS / "house_refined" / name, folder)
        shutil.copy(BENCHMARKS / "house_wings" / "after" / "voice_to_voice.json", folder)
        folders.append(folder)
    return folders[0], folders[1]


def test_each_level_is_compared_by_its_median_first_audio(tmp_path: Path) -> None:
    before, after = runs(tmp_path)
    text = markdown(before, after, "The house refined")
    # docs/benchmarks/house_refined_before_after.md, read by hand from the same two files
    assert "| http, 4 sentences, stream | 2433 ms | 2262 ms | -7.0% | 12355 ms | 12015 ms |" in text
    assert "| inprocess, 4 sentences, batch | 3918 ms | 3929 ms | +0.3% |" in text
    assert "| 8 concurrent turns (p50) | 10001 ms | 8352 ms |" in text
    assert "| voice to voice | 2423 ms | 2423 ms | +0.0% |  |  |" in text  # the same file twice


def test_runs_that_measured_different_things_are_refused(tmp_path: Path) -> None:
    before, after = runs(tmp_path)
    (after / "voice_to_voice.json").unlink()
    assert "voice to voice" not in markdown(before, after, "t")  # compared only when both have it
    report = (after / "agent_latency.json").read_text()
    (after / "agent_latency.json").write_text(report.replace('"4 sentences"', '"5 sentences"'))
    with pytest.raises(ValueError, match="different things"):
        markdown(before, after, "t")
