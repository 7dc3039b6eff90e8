"""``bench.frame_sizes``: every /ws frame kind, as sent, within the bound; the report written."""

from __future__ import annotations

import json
from pathlib import Path

from agent.browser_leg import MAX_FRAME_BYTES
from bench import frame_sizes


def test_every_kind_is_sent_within_the_bound_and_the_report_is_written(tmp_path: Path) -> None:
    frame_sizes.main(["--out", str(tmp_path)])
    report = json.loads((tmp_path / "frame_sizes.json").read_text())
    assert report["ws_limit_bytes"] == MAX_FRAME_BYTES == 32_000
    rows = report["ws"]
    assert all(row["largest_sent_bytes"] <= MAX_FRAME_BYTES for row in rows.values()), rows
    assert any(row["one_frame_bytes"] > MAX_FRAME_BYTES for row in rows.values())  # cut: real
    assert set(report["model_leg"]) == {"speak", "marks", "audio"}
    assert (tmp_path / "frame_sizes.md").read_text().startswith("# Frame sizes")


def test_the_longest_segment_is_at_the_segmenters_cap() -> None:
    assert 340 <= len(frame_sizes.longest_segment("a")) <= 350
