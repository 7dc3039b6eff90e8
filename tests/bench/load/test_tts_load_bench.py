"""The load benchmark: its statistics and report on synthetic data, and a tiny real run."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from bench.load.report import markdown, write
from bench.load.server import ping_url
from bench.load.stats import LevelStats, SentenceTiming, SessionRun, late_sentences, percentile
from bench.load.tts_load_bench import CONFIG, SENTENCES, parse, run_level, server_args
from tests.conftest import start_server
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread


def sentence(first: float, audio: float, end: float | None = None) -> SentenceTiming:
    return SentenceTiming(first_audio_s=first, end_s=end or first + 0.1, audio_s=audio)


def test_a_sentence_is_late_when_playback_reaches_it_before_its_first_audio() -> None:
    on_time = [sentence(0.2, 3.0), sentence(3.1, 3.0), sentence(6.2, 2.0)]
    assert late_sentences(on_time) == 0
    # the second arrives 0.5 s after playback needed it (at 3.2); the stall moves the third
    stalled = [sentence(0.2, 3.0), sentence(3.7, 3.0), sentence(6.6, 2.0)]
    assert late_sentences(stalled) == 1
    assert late_sentences([sentence(0.2, 1.0), sentence(1.3, 1.0), sentence(9.0, 1.0)]) == 2
    assert late_sentences([]) == 0


def test_percentiles_interpolate_and_are_nan_without_data() -> None:
    assert percentile([100.0, 200.0], 50) == 150.0
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert math.isnan(percentile([], 50))


def synthetic_level() -> LevelStats:
    fast = SessionRun((sentence(0.1, 2.0, 0.5), sentence(0.6, 2.0, 1.0)))
    slow = SessionRun((sentence(0.3, 2.0, 0.8), sentence(2.5, 2.0, 3.0)))  # second late
    broken = SessionRun((sentence(0.2, 1.0, 0.4),), errors=("failed: synthesis_failed",))
    return LevelStats.of([fast, slow, broken, SessionRun((), refused=True)], server_refusals=0)


def test_a_level_aggregates_its_sessions() -> None:
    stats = synthetic_level()
    assert stats.sessions == 4 and stats.sentences == 5
    assert stats.first_audio_ms == {"p50": 200.0, "p95": 290.0, "p99": 298.0}
    assert (stats.total_s, stats.audio_s, stats.audio_s_per_s) == (3.0, 9.0, 3.0)
    assert (stats.late, stats.errors, stats.refusals) == (1, 1, 1)
    assert stats.error_samples == ["failed: synthesis_failed"]
    assert LevelStats.of([SessionRun(())], server_refusals=5).refusals == 5


def test_the_report_has_one_table_per_mode_and_a_plot(tmp_path: Path) -> None:
    meta = {
        "engine": "onnx",
        "device": "cpu",
        "machine": "test box",
        "load_before": 0.5,
        "server": "--engine onnx",
        "sentences": list(SENTENCES),
        "wall_s": 12.0,
    }
    results = {"unbatched": [synthetic_level()], "batched (max batch 8)": [synthetic_level()]}
    text = markdown(results, meta)
    assert "## unbatched" in text and "## batched (max batch 8)" in text
    assert "| 4 | 200 / 290 / 298 | 3.00 | 3.0 | 1 of 5 | 1 | 1 |" in text
    paths = write(results, meta, tmp_path, "tts_load_onnx_cpu")
    assert [p.name for p in paths] == [f"tts_load_onnx_cpu.{x}" for x in ("json", "md", "png")]
    saved = json.loads(paths[0].read_text())
    assert saved["modes"]["unbatched"][0]["late"] == 1 and saved["engine"] == "onnx"
    assert paths[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_flags_reach_the_server_and_urls_map_to_ping() -> None:
    args = parse(["--engine", "torch", "--device", "cuda", "--sessions", "1", "64"])
    assert server_args(args) == ["--engine", "torch", "--max-sessions", "64", "--device", "cuda"]
    args = parse(["--model-dir", "/m", "--phoneme-table", "/t.json"])
    assert server_args(args)[-4:] == ["--model-dir", "/m", "--phoneme-table", "/t.json"]
    assert ping_url("ws://127.0.0.1:9/ws") == "http://127.0.0.1:9/ping"
    assert ping_url("wss://h.example/invocations-bidirectional-stream") == "https://h.example/ping"
    assert all(10 <= len(s.split()) <= 14 for s in SENTENCES) and len(SENTENCES) == 4


@pytest.fixture
def fake_server() -> Iterator[ServerThread]:
    server = start_server(FakeEngine(), max_sessions=2)
    yield server
    server.stop()


async def test_a_tiny_real_run_measures_every_sentence(fake_server: ServerThread) -> None:
    stats = await run_level(fake_server.ws_url, 2)
    assert (stats.sessions, stats.sentences, stats.errors, stats.refusals) == (2, 8, 0, 0)
    assert stats.audio_s == pytest.approx(2 * 0.06 * sum(len(s) for s in SENTENCES), rel=0.02)
    assert 0 < stats.first_audio_ms["p50"] <= stats.first_audio_ms["p99"] < stats.total_s * 1000


async def test_sessions_beyond_the_servers_limit_are_counted_as_refusals(
    fake_server: ServerThread,
) -> None:
    config = replace(CONFIG, busy_window=10.0, backoff_max=0.1)
    stats = await run_level(fake_server.ws_url, 3, config)
    # all three are let in; the third's first speaks are refused busy until a session rests
    assert stats.sessions == 3 and stats.sentences == 12
    assert stats.refusals >= 1 and stats.errors == 0
