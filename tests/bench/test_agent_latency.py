"""``voice-agent bench``: a quick real run of every level against the local server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import cli
from tests.servers import ServerThread


def test_quick_bench_against_the_local_server(tts_server: ServerThread, tmp_path: Path) -> None:
    cli.main(["bench", "--quick", "--tts-url", tts_server.ws_url, "--out", str(tmp_path)])
    report = json.loads((tmp_path / "agent_latency.json").read_text())
    assert set(report["levels"]) == {"transport", "inprocess", "http"}
    assert set(report["levels"]["transport"]["runs"]) == {"pipelined", "sequential", "reconnect"}
    for level in ("inprocess", "http"):
        (case,) = report["levels"][level]
        assert {run["mode"] for run in case["runs"]} == {"stream", "batch"}
        for run in case["runs"]:
            assert run["ttft_ms"] < run["first_segment_ms"] < run["ttfa_ms"] < run["total_ms"]
            assert run["segments"] == (2 if run["mode"] == "stream" else 1)
            assert run["lone_ttfa_ms"] > 0 and not run["errors"]
            assert run["overhead_ms"] == pytest.approx(run["ttfa_ms"] - run["floor_ms"], abs=0.2)
        assert case["ttfa_batch_over_stream"] > 0
        assert len(case["timeline"]["stream"]["audio"]) >= 2  # a burst per sentence
    assert [c["turns"] for c in report["concurrency"]] == [1, 2]
    assert report["machine"]["cores"] and report["setup"]["quick"]
    assert "## Headline" in (tmp_path / "agent_latency.md").read_text()
    assert (tmp_path / "agent_latency.png").read_bytes().startswith(b"\x89PNG")
