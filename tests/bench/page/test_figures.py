"""The page benchmark's figures from recorded page data, without a browser."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from bench.page.figures import (
    MIC_RATE,
    Chunk,
    chunks,
    end_of_speech,
    first_after,
    gaps,
    least_buffered,
    median_of,
    speech_bounds,
    stages,
    underruns,
    where_dry,
)


def source(at: float, when_s: float, duration_s: float, plays: float | None = None) -> dict:
    return {"at": at, "when": when_s, "plays": plays or when_s * 1000, "duration": duration_s}


def test_chunks_are_those_scheduled_in_the_window_in_playing_order() -> None:
    sources = [
        source(5, 0.0, 0.1),  # before the reply
        source(20, 1.2, 0.1),
        source(10, 1.0, 0.2),
        source(30, 1.3, 0.0),  # empty: never heard
        source(90, 2.0, 0.1),  # after it
    ]
    found = chunks(sources, since=10, until=50)
    assert [c.clock_ms for c in found] == [1000.0, 1200.0]
    assert found[0] == Chunk(1000.0, 200.0, 1000.0)


def test_gaps_are_measured_on_the_audio_clock_and_over_5_ms_is_an_underrun() -> None:
    reply = [Chunk(0, 100, 0), Chunk(0, 100, 100), Chunk(0, 100, 205), Chunk(0, 100, 311)]
    assert gaps(reply) == pytest.approx([0.0, 5.0, 6.0])
    assert underruns(reply) == pytest.approx([6.0])
    assert where_dry(reply) == [{"after_chunk": 2, "after_audio_ms": 300, "gap_ms": 6.0}]
    assert gaps([Chunk(0, 100, 0), Chunk(0, 100, 99.5)]) == pytest.approx([-0.5])  # overlap
    assert gaps(reply[:1]) == []


def test_the_end_of_speech_is_the_last_loud_sample_as_captured() -> None:
    rate = MIC_RATE
    pcm = np.zeros(rate, dtype="<i2")
    pcm[4000:9000] = (8000 * np.sin(np.arange(5000) / 3)).astype("<i2")
    first, last = speech_bounds(pcm) or (0, 0)  # to the 10 ms window
    assert first == 4000 and 8999 <= last < 9000 + rate // 100
    frame = rate // 50  # 20 ms frames, each sent when its last sample is in
    mic = [
        {
            "t": 1000.0 + (i + frame) * 1000 / rate,
            "pcm": base64.b64encode(pcm[i : i + frame].tobytes()),
        }
        for i in range(0, rate, frame)
    ]
    mic = [{"t": m["t"], "pcm": m["pcm"].decode()} for m in mic]
    ended = end_of_speech(mic)
    assert ended == pytest.approx(1000.0 + 9000 * 1000 / rate, abs=10.0)
    assert end_of_speech([]) is None
    assert speech_bounds(np.zeros(rate, dtype="<i2")) is None


def test_stages_are_consecutive_differences_and_medians_skip_missing() -> None:
    marks = {"sent": 100.0, "turn.start": 110.0, "segment": None, "played": 900.0}
    assert stages(marks) == {
        "sent→turn.start": 10.0,
        "turn.start→segment": None,
        "segment→played": None,
    }
    assert median_of([3.0, None, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert median_of([None])["median"] is None
    events = [{"t": 5.0, "type": "segment"}, {"t": 15.0, "type": "segment"}]
    assert first_after(events, "segment", 10.0) == 15.0
    assert first_after(events, "binary", 0.0) is None


def test_least_buffered_is_what_was_still_to_play_when_a_chunk_arrived() -> None:
    sources = [  # 100 ms chunks back to back from 500 ms on the audio clock
        {"at": 10.0, "plays": 600.0, "when": 0.5, "now": 0.4, "duration": 0.1},
        {"at": 20.0, "plays": 700.0, "when": 0.6, "now": 0.45, "duration": 0.1},  # 150 queued
        {"at": 30.0, "plays": 800.0, "when": 0.7, "now": 0.68, "duration": 0.1},  # 20 queued
    ]
    assert least_buffered(chunks(sources, 0.0)) == 20.0
    late = [*sources[:2], {"at": 30.0, "plays": 900.0, "when": 0.85, "now": 0.75, "duration": 0.1}]
    assert least_buffered(chunks(late, 0.0)) == -50.0  # the audio before it ended 50 ms earlier
    assert least_buffered(chunks(sources[:1], 0.0)) is None  # the first waits the lead
    unknown = [{k: v for k, v in s.items() if k != "now"} for s in sources]
    assert least_buffered(chunks(unknown, 0.0)) is None  # recorded before arrival times were
