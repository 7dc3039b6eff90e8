"""The TTS server's view of the page benchmark's runs: its windows' trace, summarized."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.page.report import markdown as page_markdown
from bench.page.server_view import markdown, read_trace, server_view


def window(at: float, listener: int, **fields: Any) -> dict[str, Any]:
    record = {"event": "window", "at": at, "listener": listener, "opening": False}
    record |= {"sentence_start": False, "decoded": 60, "ahead_s": 1.0, "took_s": 0.5}
    return record | {"seconds_per_frame": 0.02, "streams": 2, **fields}


def dry(at: float, listener: int, waited_s: float) -> dict[str, Any]:
    return {"event": "dry", "at": at, "listener": listener, "waited_s": waited_s}


RECORDS = [
    window(10.0, 1, opening=True, sentence_start=True, ahead_s=0.0),
    window(10.5, 1),
    window(11.0, 2, opening=True, sentence_start=True, ahead_s=0.0),
    window(12.0, 1, sentence_start=True, decoded=150, ahead_s=0.4, took_s=2.9),
    dry(12.1, 1, 2.5),
    window(12.2, 2, sentence_start=True, decoded=90, ahead_s=0.8, took_s=1.1),
    dry(12.3, 2, 0.3),
    window(30.0, 1),  # another run's
    dry(30.1, 1, 1.0),
]


def test_a_span_of_runs_gives_its_waits_each_with_the_window_before_it() -> None:
    view = server_view(RECORDS, 9.0, 20.0)
    assert view["listeners"] == 2 and view["windows"] == 5
    starts = view["sentence_starts"]
    assert starts["count"] == 2  # the openings are not counted
    assert starts["decoded_frames_median"] == 120.0
    assert starts["ahead_ms_median"] == 600.0 and starts["took_ms_median"] == 2000.0
    waits = view["waits"]
    assert waits["count"] == 2 and waits["total_ms"] == 2800.0
    assert waits["after_a_sentence_start"] == 2
    longest, second = waits["longest"]
    assert longest["waited_ms"] == 2500.0 and longest["decoded_frames"] == 150
    assert longest["ahead_ms"] == 400.0 and longest["took_ms"] == 2900.0
    assert second["decoded_frames"] == 90  # the window of its own listener


def test_a_span_without_windows_says_so() -> None:
    view = server_view(RECORDS, 100.0, 200.0)
    assert view["windows"] == 0 and view["waits"]["count"] == 0
    assert view["sentence_starts"]["decoded_frames_median"] is None
    assert view["sentence_starts"]["ahead_ms_median"] is None


def test_the_trace_is_read_from_its_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "windows.jsonl"
    assert read_trace(path) == []  # the server wrote nothing
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    assert read_trace(path) == RECORDS


def test_the_report_shows_each_kind_of_run_and_the_longest_waits() -> None:
    views = {"with_second_conversation": server_view(RECORDS, 9.0, 20.0)}
    lines = markdown(views)
    assert (
        "| with_second_conversation | 2 | 5 | 2 | 2800.0 | 2 | 2 | 120.0 | 600.0 | 2000.0 |"
        in lines
    )
    assert "| with_second_conversation | 2500.0 | True | 150 | 400.0 | 2900.0 | 0.02 | 2 |" in lines
    quiet = markdown({"alone": server_view(RECORDS, 100.0, 200.0)})
    assert not any("longest waits" in line for line in quiet)


def test_the_page_report_carries_the_servers_view() -> None:
    kind = {"count": 0, "max_gap_ms": 0.0, "replies_with_one": 0, "least_buffered_ms": {}}
    figures = {
        "date": "today",
        "runs": 1,
        "machine": {"cpus": 2},
        "load": {"before": [0.1], "after": [0.2]},
        "typed_first_audio_ms": {"median": 1.0, "min": 1.0, "max": 1.0},
        "spoken_voice_to_voice_ms": {"median": 2.0, "min": 2.0, "max": 2.0},
        "underruns": {"count": 0, "max_gap_ms": 0.0, "replies": 1, "by_kind": {"typed": kind}},
        "typed_stages_ms": {},
        "spoken_stages_ms": {},
        "long_reply": {},
        "server_view": {"with_second_conversation": server_view(RECORDS, 9.0, 20.0)},
    }
    assert "The TTS server's view" in page_markdown(figures)
    assert "The TTS server's view" not in page_markdown({**figures, "server_view": {}})
