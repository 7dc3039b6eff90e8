"""The TTS server's view of the page benchmark's replies: its windows' trace, summarized.

``bench.page`` starts the local stack with ``TTS_WINDOW_TRACE`` (``--window-trace``), so that
the server appends each paced window (as the pace cut it and how long it took) and each wait
of the listener that the pace's model of it met. Here the records of a span of wall-clock time
(one kind of run) become what sets the server's view beside what the page heard: how the
windows at sentence starts were cut, the waits the model foresaw, and the window before each.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

LATE_SHOWN = 6  # the waits listed with their window, longest first


def read_trace(path: Path) -> list[dict[str, Any]]:
    """Every record of the trace at ``path`` (none if the server wrote none)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _median_ms(values: Iterable[float]) -> float | None:
    found = list(values)
    return round(statistics.median(found) * 1000, 1) if found else None


def server_view(records: list[dict[str, Any]], since: float, until: float) -> dict[str, Any]:
    """The windows and waits of ``records`` from ``since`` to ``until`` (Unix seconds)."""
    span = [r for r in records if since <= r["at"] <= until]
    windows = [r for r in span if r["event"] == "window"]
    waits = [r for r in span if r["event"] == "dry"]
    starts = [w for w in windows if w["sentence_start"] and not w["opening"]]
    late = []
    for wait in waits:
        before = [w for w in windows if w["listener"] == wait["listener"] and w["at"] <= wait["at"]]
        window = before[-1] if before else None
        late.append({"waited_ms": round(wait["waited_s"] * 1000, 1), "window": window})
    late.sort(key=lambda entry: -entry["waited_ms"])
    return {
        "listeners": len({r["listener"] for r in span}),
        "windows": len(windows),
        "sentence_starts": {
            "count": len(starts),
            "decoded_frames_median": statistics.median(w["decoded"] for w in starts)
            if starts
            else None,
            "ahead_ms_median": _median_ms(w["ahead_s"] for w in starts),
            "took_ms_median": _median_ms(w["took_s"] for w in starts),
            "seconds_per_frame_median": round(
                statistics.median(w["seconds_per_frame"] for w in starts), 5
            )
            if starts
            else None,
        },
        "waits": {
            "count": len(waits),
            "total_ms": round(sum(w["waited_s"] for w in waits) * 1000, 1),
            "after_a_sentence_start": sum(
                1 for entry in late if entry["window"] and entry["window"]["sentence_start"]
            ),
            "longest": [_shown(entry) for entry in late[:LATE_SHOWN]],
        },
    }


def _shown(entry: dict[str, Any]) -> dict[str, Any]:
    """A wait and the window just before it, as the report shows them."""
    window = entry["window"] or {}
    return {
        "waited_ms": entry["waited_ms"],
        "sentence_start": window.get("sentence_start"),
        "decoded_frames": window.get("decoded"),
        "ahead_ms": round(window["ahead_s"] * 1000, 1) if window else None,
        "took_ms": round(window["took_s"] * 1000, 1) if window else None,
        "seconds_per_frame": window.get("seconds_per_frame"),
        "streams": window.get("streams"),
    }


def markdown(views: dict[str, dict[str, Any]]) -> list[str]:
    """``views`` (by kind of run) as the lines of ``page.md``'s section."""
    lines = [
        "The TTS server's view (its windows' trace, `--window-trace`): the waits its model of "
        "each listener met, and the windows that start a sentence (after the reply's first):",
        "",
        "| run | listeners | windows | waits | waited ms | waits after a sentence start "
        "| sentence starts | their frames (median) | buffered ms | took ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, view in views.items():
        starts, waits = view["sentence_starts"], view["waits"]
        lines.append(
            f"| {kind} | {view['listeners']} | {view['windows']} | {waits['count']} "
            f"| {waits['total_ms']} | {waits['after_a_sentence_start']} | {starts['count']} "
            f"| {starts['decoded_frames_median']} | {starts['ahead_ms_median']} "
            f"| {starts['took_ms_median']} |"
        )
    longest = [(kind, w) for kind, view in views.items() for w in view["waits"]["longest"]]
    if longest:
        lines += [
            "",
            "The longest waits, each with the window before it:",
            "",
            "| run | waited ms | sentence start | frames decoded | buffered ms | took ms "
            "| s a frame | streams |",
            "|---|---:|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {kind} | {w['waited_ms']} | {w['sentence_start']} | {w['decoded_frames']} "
            f"| {w['ahead_ms']} | {w['took_ms']} | {w['seconds_per_frame']} | {w['streams']} |"
            for kind, w in longest
        ]
    return lines
