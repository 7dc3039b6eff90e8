"""A turn's figures: playback underruns, audio bursts, compact events, percentiles."""

from __future__ import annotations

import base64

import pytest

from bench.latency import stats as latency_stats


def test_playback_counts_each_stall_once() -> None:
    arrivals = [(0.0, 100.0), (50.0, 100.0), (300.0, 100.0), (310.0, 100.0), (700.0, 50.0)]
    plays = latency_stats.playback(arrivals)
    assert plays == [(0, 100), (100, 100), (300, 100), (400, 100), (700, 50)]
    assert latency_stats.underruns(plays) == (2, 300.0)  # 200..300 and 500..700
    assert latency_stats.underruns(latency_stats.playback([])) == (0, 0)


def test_audio_bursts_merge_chunks_that_arrive_together() -> None:
    arrivals = [(100.0, 100.0), (101.0, 100.0), (104.0, 50.0), (900.0, 100.0), (903.0, 20.0)]
    assert latency_stats.bursts(arrivals) == [[100.0, 250.0], [900.0, 120.0]]


@pytest.mark.parametrize("size", range(8))
def test_compact_keeps_the_pcm_size_of_an_audio_event(size: int) -> None:
    audio = base64.b64encode(bytes(size)).decode()
    event = {"type": "audio.delta", "seq": 3, "audio": audio, "sample_rate": 24000}
    assert latency_stats.compact(event) == {"type": "audio.delta", "seq": 3, "bytes": size}


def test_figures_of_a_turn() -> None:
    second = 48_000  # bytes of PCM in one second
    events: list[latency_stats.Timed] = [
        (1.0, {"type": "turn.start"}),
        (300.0, {"type": "text.delta", "text": "Hi."}),
        (310.0, {"type": "segment", "seq": 0, "text": "Hi."}),
        (600.0, {"type": "audio.delta", "seq": 0, "bytes": second}),
        (605.0, {"type": "segment.end", "seq": 0, "audio_ms": 1000.0}),
        (700.0, {"type": "segment", "seq": 1, "text": "Bye."}),
        (1800.0, {"type": "audio.delta", "seq": 1, "bytes": second // 2}),
        (1801.0, {"type": "segment.end", "seq": 1, "audio_ms": 500.0}),
        (1802.0, {"type": "metrics", "ttft_ms": 290.0, "ttfa_ms": 590.0, "total_ms": 1795.0}),
        (1803.0, {"type": "turn.end"}),
    ]
    figures = latency_stats.figures(events)
    assert figures["ttft_ms"] == 300 and figures["ttfa_ms"] == 600 and figures["total_ms"] == 1803
    assert figures["audio_ms"] == 1500 and figures["segments"] == 2
    assert figures["first_segment_ms"] == 310
    assert (figures["underruns"], figures["underrun_ms"]) == (1, 200.0)  # 1600..1800
    assert figures["server"] == {"ttft_ms": 290.0, "ttfa_ms": 590.0, "total_ms": 1795.0}
    assert [s["first_audio_ms"] for s in figures["segment_detail"]] == [600, 1800]


def test_percentiles_interpolate_between_ranks() -> None:
    assert latency_stats.spread([5.0, 1.0, 4.0, 2.0, 3.0]) == {"median": 3.0, "p90": 4.6}
    ratios = [0.033, 0.041, 0.038]  # a ratio keeps its decimals: not 0.0
    assert latency_stats.spread(ratios, 3) == {"median": 0.038, "p90": 0.04}
    assert (
        latency_stats.percentile([None, 7.0], 95) == 7.0
        and latency_stats.percentile([], 50) is None
    )
