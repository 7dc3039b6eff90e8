"""The microphone side of the benchmark's socket: where the speech is in the audio."""

from __future__ import annotations

from bench.latency.mic_session import LEAD_MS, last_loud_frame, speech_span_ms, stream_of


def test_the_speech_span_is_where_the_samples_are_loud() -> None:
    quiet, loud = b"\x00\x00" * 1600, b"\x00\x40" * 3200  # 100 ms of zeros, 200 ms at half scale
    assert speech_span_ms(quiet + loud + quiet) == (100.0, 300.0)


def test_the_last_loud_frame_counts_the_lead_silence() -> None:
    loud = b"\x00\x40" * 3200  # 200 ms
    assert last_loud_frame(loud) == 18  # 576-608 ms holds the last loud sample, at 599 ms
    assert stream_of(loud)[: LEAD_MS * 32] == bytes(LEAD_MS * 32)
