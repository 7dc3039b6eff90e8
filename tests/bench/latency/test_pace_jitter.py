"""The pace simulation: the production schedule on a scripted clock, counted as a page would."""

from __future__ import annotations

import json
from pathlib import Path

from bench.latency.pace_jitter import case, main


async def test_a_steady_machine_never_runs_dry_and_a_straying_one_sometimes_does() -> None:
    steady = await case(0.4, 0.0, 1.0, replies=3)
    assert steady["underruns"] == 0 and steady["waited_ms_per_reply"] == 0.0
    straying = await case(0.6, 0.2, 1.4, replies=6)
    assert straying["underruns"] >= straying["replies_with_one"] > 0
    assert straying["opening_slowdown_after"] > 1.0  # the slow starts were learned


async def test_the_same_case_draws_the_same_decode_times() -> None:
    assert await case(0.5, 0.2, 1.0, replies=4) == await case(0.5, 0.2, 1.0, replies=4)


def test_the_report_is_written_as_json_and_markdown(tmp_path: Path) -> None:
    assert main(["--replies", "1", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "pace_jitter.json").read_text())
    assert len(report["cases"]) == 24 and report["replies"] == 1
    assert "| 0.3 | 0.0 | 1.0 |" in (tmp_path / "pace_jitter.md").read_text()
