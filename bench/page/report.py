"""The page benchmark's report: ``page.json`` (every figure and every run) and ``page.md``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.page.server_view import markdown as server_lines

TARGETS = {"typed_first_audio_ms": 1000.0, "spoken_voice_to_voice_ms": 1500.0}


def _stage_rows(stages: dict[str, Any]) -> list[str]:
    return [f"| {name} | {ms} |" for name, ms in stages.items()]


def markdown(figures: dict[str, Any]) -> str:
    """A page a reader takes in at a glance: the targets, the stages, the gaps."""
    under = figures["underruns"]
    lines = [
        "# What the page plays (headless Chromium)",
        "",
        f"`python -m bench.page`, {figures['date']}, {figures['runs']} runs of each kind, "
        f"{figures['machine']['cpus']} CPUs, load average before {figures['load']['before']}, "
        f"after {figures['load']['after']}; the player's lead {figures.get('lead_s', 0.1)} s; "
        f"commit {figures.get('commit', 'not recorded')}. "
        "Medians; figures from one run.",
        "",
        "| figure | median | min | max | target |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, target in TARGETS.items():
        f = figures[name]
        lines.append(f"| {name} | {f['median']} | {f['min']} | {f['max']} | ≤ {target:.0f} |")
    lines += [
        f"| underruns (gaps over 5 ms, {under['replies']} replies) | {under['count']} | | "
        f"max gap {under['max_gap_ms']} ms | 0 |",
        "",
        "Underruns by kind of reply:",
        "",
        "| replies | underruns | replies with one | longest gap ms | least buffered ms "
        "(median, min) |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {kind} | {g['count']} | {g['replies_with_one']} | {g['max_gap_ms']} | {_least(g)} |"
            for kind, g in under["by_kind"].items()
        ),
        "",
        "Least buffered: in each reply, the least audio still to play when a chunk arrived "
        "(after the first, which waits the player's lead); below 0, that chunk came late.",
        "",
        "Where typed first audio goes (medians, ms):",
        "",
        "| stage | ms |",
        "|---|---:|",
        *_stage_rows(figures["typed_stages_ms"]),
        "",
        "Where spoken voice to voice goes (medians, ms):",
        "",
        "| stage | ms |",
        "|---|---:|",
        *_stage_rows(figures["spoken_stages_ms"]),
        "",
        "The long reply (about 45 s of speech):",
        "",
        "| case | audio s | underruns | max gap ms |",
        "|---|---:|---:|---:|",
    ]
    for name, f in figures["long_reply"].items():
        lines.append(
            f"| {name} | {f['audio_s']['median']} | {f['underruns']} | {f['max_gap_ms']} |"
        )
    if figures.get("server_view"):
        lines += ["", *server_lines(figures["server_view"])]
    return "\n".join(lines) + "\n"


def write(figures: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "page.json").write_text(json.dumps(figures, indent=1) + "\n")
    (out / "page.md").write_text(markdown(figures))


def _least(kind: dict[str, Any]) -> str:
    least = kind.get("least_buffered_ms") or {}
    if least.get("median") is None:
        return "none"
    return f"{least['median']}, {least['min']}"
