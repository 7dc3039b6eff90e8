"""``voice-agent bench``: a quick real run of every level against a real local TTS server.

The server runs the fast fake engine: what is under test is the benchmark's plumbing (every
level, leg and figure), not the model, whose speed is the benchmark's own business."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import start_server
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread
from voice_agent_cli import cli


@pytest.fixture
def fast_server() -> Iterator[ServerThread]:
    server = start_server(FakeEngine(), max_queue=16)
    yield server
    server.stop()


@pytest.mark.timeout(600)  # a dozen real turns; a loaded 2-core box takes minutes
def test_quick_bench_against_the_local_server(fast_server: ServerThread, tmp_path: Path) -> None:
    cli.main(["bench", "--quick", "--tts-url", fast_server.ws_url, "--out", str(tmp_path)])
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
    # The browser leg: the same turn over SSE and the WebSocket; binary audio is a third
    # smaller than base64 (48,000 bytes a second of PCM, plus headers and JSON).
    legs = report["legs"]
    assert sorted(run["leg"] for run in legs["runs"]) == ["sse", "websocket"]
    for run in legs["runs"]:
        assert 0 < run["ttfa_ms"] < run["total_ms"] and not run["errors"]
        assert run["wire_bytes"] / (run["audio_ms"] / 1000) == pytest.approx(
            run["bytes_per_audio_s"], abs=1
        )
    per_audio_s = {leg: s["bytes_per_audio_s"]["median"] for leg, s in legs["summary"].items()}
    assert 48_000 < per_audio_s["websocket"] < 1.1 * 48_000 < 1.3 * 48_000 < per_audio_s["sse"]
    assert [c["turns"] for c in report["concurrency"]] == [1, 2]
    assert report["machine"]["cores"] and report["setup"]["quick"]
    markdown = (tmp_path / "agent_latency.md").read_text()
    assert "## Headline" in markdown and "## Browser leg: SSE vs. WebSocket" in markdown
    assert (tmp_path / "agent_latency.png").read_bytes().startswith(b"\x89PNG")
