"""The windows' trace: each paced window and each wait of a listener, as JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

from tts_server.engines.pace import DecodeRate, PlaybackClock
from tts_server.engines.window_trace import traced, tracing
from tts_server.engines.windows import Window, WindowPlan
from tts_server.settings import parse_settings


def records(path: Path) -> list[dict[str, object]]:
    """The trace's records (the ``trace`` fixture's file)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_trace_is_off_unless_asked() -> None:
    assert not tracing()
    assert parse_settings([], env={}).window_trace is None
    given = parse_settings([], env={"TTS_WINDOW_TRACE": "/tmp/trace.jsonl"})
    assert given.window_trace == Path("/tmp/trace.jsonl")


def test_a_record_is_one_json_line_of_its_listener_and_fields(trace: Path) -> None:
    listener = object()
    assert tracing()
    traced("dry", listener, waited_s=0.1234567, chunk_s=0.2)
    (record,) = records(trace)
    assert record["event"] == "dry" and record["listener"] == id(listener)
    assert record["waited_s"] == 0.123457 and record["chunk_s"] == 0.2
    assert isinstance(record["at"], float)


async def test_each_paced_window_is_traced_as_cut_and_as_long_as_it_took(trace: Path) -> None:
    plan = WindowPlan(first=8, size=240, context=4, min_last=8, growth=3)
    clock, rate = PlaybackClock(), DecodeRate(0.005)

    async def decode(window: Window) -> Window:
        clock.sent(window.frames * 0.025)
        return window

    windows = [w async for w, _, _ in plan.decoded(decode, 200, 10, clock=clock, rate=rate)]
    traced_windows = records(trace)
    assert len(traced_windows) == len(windows) > 1
    opening, second = traced_windows[:2]
    assert opening["event"] == "window" and opening["opening"] is True
    assert (opening["start"], opening["stop"], opening["end"]) == (0, windows[0].stop, 200)
    assert opening["silent"] == 10 and opening["ahead_s"] == 0.0 and opening["sentence_start"]
    assert opening["decoded"] == windows[0].decoded_frames and 0 <= opening["took_s"] < 5
    assert second["opening"] is False and second["silent"] == 0 and not second["sentence_start"]
    assert 0 < second["ahead_s"] <= (windows[0].frames * 0.025 + clock.lead_s)
    assert second["paced"] >= plan.first and second["streams"] == 0
    assert second["seconds_per_frame"] > 0 and second["margin"] >= 1
    assert {r["listener"] for r in traced_windows} == {id(clock)}


async def test_unpaced_windows_are_not_traced(trace: Path) -> None:
    plan = WindowPlan(first=8, size=40, context=4)

    async def decode(window: Window) -> Window:
        return window

    assert len([w async for w in plan.decoded(decode, 100)]) > 1
    assert records(trace) == []
