"""The AG-UI first-audio benchmark's pure parts: what it reads off each route, its summary and
its report (the measuring itself is ``python -m bench.latency.agui_first_audio``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.latency import agui_first_audio as bench


def test_each_route_is_read_by_its_own_events() -> None:
    assert bench.reading("ours", {"type": "audio.delta"}) == ("audio", None)
    assert bench.reading("agui", {"type": "CUSTOM", "name": "voice.audio"}) == ("audio", None)
    assert bench.reading("agui", {"type": "TEXT_MESSAGE_CONTENT"}) == ("text", None)
    assert bench.reading("ours", {"type": "metrics", "ttfa_ms": 812.0}) == (None, 812.0)
    metrics = {"type": "CUSTOM", "name": "voice.metrics", "value": {"ttfaMs": 815.5}}
    assert bench.reading("agui", metrics) == (None, 815.5)
    assert bench.reading("agui", {"type": "CUSTOM", "name": "voice.sentence"}) == (None, None)
    assert set(bench.body("agui", "t")) == {"threadId", "runId", "messages"}
    assert bench.body("ours", "t") == {"prompt": bench.PROMPT}


def turns(ours: list[float], agui: list[float]) -> list[dict[str, Any]]:
    return [
        {"route": route, "first_audio_ms": ms, "first_text_ms": 300.0, "end_ms": 4000.0,
         "server_ttfa_ms": ms - 5}
        for route, values in (("ours", ours), ("agui", agui))
        for ms in values
    ]  # fmt: skip


def test_the_ratio_is_agui_median_over_ours_against_the_limit(tmp_path: Path) -> None:
    summary = bench.summarize(turns([800.0, 820.0, 900.0], [810.0, 830.0, 2000.0]))
    assert summary["routes"]["agui"]["first_audio_ms"]["median"] == 830.0
    assert summary["ratio"] == round(830 / 820, 3) and summary["within"]
    over = bench.summarize(turns([800.0], [900.0]))
    assert over["ratio"] == 1.125 and not over["within"]
    report = {
        "date": "2026-01-01 00:00 UTC",
        "machine": {"cpu": "x", "cores": 2, "load_average": [1, 1, 1],
                    "load_average_at_end": [1, 1, 1]},
        "setup": {"runs": 3, "warmup": 1, "tts": "local"},
        "summary": summary,
    }  # fmt: skip
    json_path, md_path = bench.write(report, tmp_path)
    text = md_path.read_text()
    assert "- AG-UI over ours: 1.012 (within the limit of 1.1)" in text
    assert "| AG-UI (`RunAgentInput`) | 830.0 / " in text and json_path.exists()
