"""The figures of a turn from its timed events: first text/audio, underruns, percentiles."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from agent.requests import TURN_MODES
from tts_protocol import BYTES_PER_SAMPLE, samples_ms

METRICS = (
    "ttft_ms",
    "ttfa_ms",
    "total_ms",
    "audio_ms",
    "segments",
    "floor_ms",
    "overhead_ms",
    "underruns",
    "underrun_ms",
)

Event = dict[str, Any]
Timed = tuple[float, Event]  # ms since the request; audio.delta carries "bytes", not "audio"
Summary = dict[str, dict[str, dict[str, float | None]]]  # mode -> metric -> median, p90


def audio_record(seq: int, size: int) -> Event:
    """An ``audio.delta`` as kept in memory: its segment and its PCM byte count, not its data."""
    return {"type": "audio.delta", "seq": seq, "bytes": size}


def compact(event: Event) -> Event:
    """An event read off the wire (JSON), as kept in memory (``audio_record`` for audio)."""
    if event.get("type") != "audio.delta":
        return event
    audio: str = event["audio"]
    return audio_record(event["seq"], len(audio) * 3 // 4 - audio[-2:].count("="))


def playback(arrivals: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """(start, duration) ms of each chunk for a player that starts at the first arrival.

    It plays each chunk once it has arrived and the previous one has finished, with no
    buffer ahead: a chunk that arrives after the previous one finished is an underrun.
    """
    plays: list[tuple[float, float]] = []
    clock: float | None = None
    for arrived, duration in arrivals:
        start = arrived if clock is None else max(clock, arrived)
        plays.append((start, duration))
        clock = start + duration
    return plays


def underruns(plays: Sequence[tuple[float, float]]) -> tuple[int, float]:
    """How many times playback stalled, and for how long in all (ms)."""
    gaps = [b[0] - (a[0] + a[1]) for a, b in itertools.pairwise(plays)]
    stalls = [gap for gap in gaps if gap > 0]
    return len(stalls), round(sum(stalls), 1)


def _audio(events: Sequence[Timed]) -> list[tuple[float, float]]:
    return [
        (t, samples_ms(e["bytes"] // BYTES_PER_SAMPLE))
        for t, e in events
        if e["type"] == "audio.delta"
    ]


def figures(events: Sequence[Timed]) -> dict[str, Any]:
    """The figures of one turn from its timed events (client-side times)."""
    first: dict[str, float] = {}
    segments: dict[int, dict[str, Any]] = {}
    for t, event in events:
        kind = event["type"]
        first.setdefault(kind, t)
        if kind == "segment":
            segments[event["seq"]] = {
                "seq": event["seq"],
                "text": event["text"],
                "sent_ms": t,
                "first_audio_ms": None,
                "end_ms": None,
                "audio_ms": None,
            }
        elif kind == "audio.delta" and segments[event["seq"]]["first_audio_ms"] is None:
            segments[event["seq"]]["first_audio_ms"] = t
        elif kind == "segment.end":
            segments[event["seq"]].update(end_ms=t, audio_ms=event["audio_ms"])
    audio = _audio(events)
    stalls, stalled_ms = underruns(playback(audio))
    server = next((e for _, e in events if e["type"] == "metrics"), {})
    return {
        "ttft_ms": first.get("text.delta"),
        "ttfa_ms": first.get("audio.delta"),
        "total_ms": first.get("turn.end", events[-1][0] if events else None),
        "audio_ms": round(sum(duration for _, duration in audio), 1),
        "segments": len(segments),
        "first_segment_ms": first.get("segment"),
        "underruns": stalls,
        "underrun_ms": stalled_ms,
        "errors": [e["code"] for _, e in events if e["type"] == "error"],
        "server": {k: server.get(k) for k in ("ttft_ms", "ttfa_ms", "total_ms")},
        "segment_detail": list(segments.values()),
    }


def bursts(arrivals: Sequence[tuple[float, float]], gap_ms: float = 5.0) -> list[list[float]]:
    """Audio chunks that arrived less than ``gap_ms`` apart as one: [first arrival, ms]."""
    merged: list[list[float]] = []  # [first arrival, duration, last arrival]
    for arrived, duration in arrivals:
        if merged and arrived - merged[-1][2] <= gap_ms:
            merged[-1][1:] = [merged[-1][1] + duration, arrived]
        else:
            merged.append([arrived, duration, arrived])
    return [[first, round(duration, 1)] for first, duration, _ in merged]


def timeline(events: Sequence[Timed]) -> dict[str, Any]:
    """One turn for the plot: text deltas, segment sends and audio bursts (one per piece)."""
    return {
        "text_ms": [t for t, e in events if e["type"] == "text.delta"],
        "segments": [[t, e["seq"]] for t, e in events if e["type"] == "segment"],
        "audio": bursts(_audio(events)),
        "end_ms": events[-1][0] if events else 0.0,
    }


def percentile(values: Sequence[float | None], q: float, digits: int = 1) -> float | None:
    """The ``q``-th percentile, interpolated between closest ranks, to ``digits`` decimals;
    None without values."""
    ordered = sorted(v for v in values if v is not None)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (position - low), digits)


def spread(values: Sequence[float | None], digits: int = 1) -> dict[str, float | None]:
    """Median and p90, to ``digits`` decimals (ms want 1; ratios such as an RTF or a WER, 3)."""
    return {"median": percentile(values, 50, digits), "p90": percentile(values, 90, digits)}


def summarize(runs: Sequence[dict[str, Any]]) -> Summary:
    """Median and p90 of every metric, per mode."""
    by_mode: Summary = {}
    for mode in TURN_MODES:
        chosen = [run for run in runs if run["mode"] == mode]
        if chosen:
            by_mode[mode] = {m: spread([run[m] for run in chosen]) for m in METRICS}
    return by_mode


def ratio(summary: Summary, metric: str) -> float | None:
    """Batch median over stream median of ``metric`` (how many times sooner streaming is)."""
    try:
        batch, stream = summary["batch"][metric]["median"], summary["stream"][metric]["median"]
    except KeyError:
        return None
    return round(batch / stream, 2) if batch and stream else None
