"""The reliability benchmark's output: ``reliability.json`` and ``reliability.md``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.reliability.stats import BOUNDS, FaultResult, SoakStats


def to_json(
    phases: Sequence[SoakStats], faults: Sequence[FaultResult], meta: dict[str, Any]
) -> dict[str, Any]:
    """Everything measured, with what it was measured on and the bounds."""
    return {
        **meta,
        "bounds": BOUNDS,
        "soak": [asdict(p) | {"failures": p.failures()} for p in phases],
        "faults": [asdict(f) | {"ok": f.ok} for f in faults],
    }


def _resource(figure: dict[str, float]) -> str:
    return (
        f"{figure['start']:g} → {figure['end']:g} (max {figure['max']:g}; "
        f"growth {figure['growth']:g}, bound {figure['bound']:g})"
    )


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _introduction(
    phases: Sequence[SoakStats], faults: Sequence[FaultResult], meta: dict[str, Any]
) -> list[str]:
    plan = meta["plan"]
    failed = [f for p in phases for f in p.failures()] + [f.fault for f in faults if not f.ok]
    return [
        "# Reliability: soak and faults",
        "",
        f"Mode: **{meta['mode']}**. Machine: {meta['machine']}; load average before the run: "
        f"{meta['load_before']}. Written by `python -m bench.reliability.run"
        f"{' --quick' if meta['mode'] == 'quick' else ''}` in {meta['wall_s']:.0f} s: the agent "
        "dev server (SSE, demo model at "
        f"{plan['tokens_per_second']:g} tokens/s) and a TTS server with the fake engine, in one "
        "process. **Bounds: " + ("all held.**" if not failed else f"exceeded: {failed}.**"),
    ]


def _soak(phases: Sequence[SoakStats]) -> list[str]:
    lines = [
        "",
        "## Soak",
        "",
        "| phase | turns | ended with turn.end | errors | first audio p50 / p95 (ms) "
        "| turn p50 / p95 (ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in phases:
        lines.append(
            f"| {p.name} | {p.turns} | {p.ended} | {p.errors} "
            f"| {p.first_audio_ms['p50']:.0f} / {p.first_audio_ms['p95']:.0f} "
            f"| {p.turn_ms['p50']:.0f} / {p.turn_ms['p95']:.0f} |"
        )
    lines += ["", "| phase | open fds | asyncio tasks | RSS (MB) |", "|---|---|---|---|"]
    for p in phases:
        lines.append(
            f"| {p.name} | {_resource(p.fds)} | {_resource(p.tasks)} | {_resource(p.rss_mb)} |"
        )
    return lines


def _faults(faults: Sequence[FaultResult]) -> list[str]:
    lines = [
        "",
        "## Faults between the agent and the TTS server",
        "",
        "| fault | expected | outcome | reconnects | to error (s) | to turn.end (s) | bound (s) "
        "| in order, once | next turn | ok |",
        "|---|---|---|---:|---:|---:|---:|---|---|---|",
    ]
    for f in faults:
        once = "yes" if f.in_order and f.no_repeat else "**no**"
        lines.append(
            f"| {f.fault} | {f.expected} | {f.outcome} | {f.reconnects} "
            f"| {_seconds(f.to_error_s)} | {_seconds(f.to_end_s)} | {_seconds(f.within_s)} "
            f"| {once} | {'ok' if f.next_turn_ok else '**failed**'} "
            f"| {'yes' if f.ok else '**no**'} |"
        )
    return lines


def _definitions(plan: dict[str, Any]) -> list[str]:
    return [
        "",
        "Definitions: growth is the last sample minus the first one after the warm-up "
        f"({plan['warmup']} turns; the first round of the conversations), sampled every 25 turns "
        "(every round); the figures are the whole process's (agent, TTS server and client). "
        "*First audio* and *turn* are from the POST to the first `audio.delta` and to "
        "`turn.end`. A fault is injected at its turn's first `audio.delta`, while the proxy "
        "holds the rest of the segment; *to turn.end* is from then. *resumed*: reconnected, and "
        "every segment byte-exact against the fake engine's clean output; *delayed*: the same "
        "without a reconnect; `tts_unavailable: TTSTimeout` (or `TTSConnectionError`): the turn "
        "reported speech down, its text went on, it ended with `turn.end`. *In order, once*: "
        "audio never went back to an earlier segment and no segment's audio repeated a byte. "
        "*Next turn*: a clean turn right after spoke every segment exactly.",
    ]


def markdown(
    phases: Sequence[SoakStats], faults: Sequence[FaultResult], meta: dict[str, Any]
) -> str:
    """The soak table, the fault matrix, the bounds and what the words mean."""
    lines = [
        *_introduction(phases, faults, meta),
        *_soak(phases),
        *_faults(faults),
        *_definitions(meta["plan"]),
    ]
    return "\n".join(lines) + "\n"


def write(
    phases: Sequence[SoakStats],
    faults: Sequence[FaultResult],
    meta: dict[str, Any],
    out: Path,
) -> list[Path]:
    """Write the JSON and the Markdown; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "reliability.json", out / "reliability.md"]
    paths[0].write_text(json.dumps(to_json(phases, faults, meta), indent=2) + "\n")
    paths[1].write_text(markdown(phases, faults, meta))
    return paths
