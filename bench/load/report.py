"""The load benchmark's output: ``tts_load_<engine>_<device>.json``, ``.md`` and ``.png``."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.load.stats import LevelStats

Results = dict[str, list[LevelStats]]  # server mode -> one entry per level


def to_json(results: Results, meta: dict[str, Any]) -> dict[str, Any]:
    """Everything measured, with what it was measured on."""
    modes = {mode: [asdict(s) for s in levels] for mode, levels in results.items()}
    return {**meta, "modes": modes}


def markdown(results: Results, meta: dict[str, Any]) -> str:
    """One table per server mode, then the definitions."""
    lines = [
        f"# Load benchmark: {meta['engine']} engine on {meta['device']}",
        "",
        f"Machine: {meta['machine']}; load average before the run: {meta['load_before']}. "
        f"Server: {meta['server']}. Written by `python -m bench.load.tts_load_bench` "
        f"in {meta['wall_s']:.0f} s.",
        "",
        "Each session speaks the same four sentences, all sent at once (pipelined):",
        "",
        *[f"{n}. {sentence}" for n, sentence in enumerate(meta["sentences"], 1)],
        "",
    ]
    for mode, levels in results.items():
        lines += [
            f"## {mode}",
            "",
            "| sessions | first audio p50 / p95 / p99 (ms) | total (s) | audio-s per s "
            "| late | errors | refusals |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for s in levels:
            fa = s.first_audio_ms
            lines.append(
                f"| {s.sessions} | {fa['p50']:.0f} / {fa['p95']:.0f} / {fa['p99']:.0f} "
                f"| {s.total_s:.2f} | {s.audio_s_per_s:.1f} | {s.late} of {s.sentences} "
                f"| {s.errors} | {s.refusals} |"
            )
        lines.append("")
    lines += [
        "Definitions: *first audio* is from the moment all sessions of a level speak to each "
        "session's first PCM bytes; *total* is until the last sentence's `end`; *audio-s per s* "
        "is the audio of all sessions over that total; a sentence is *late* when its first audio "
        "came after real-time playback from the session's first audio needed it; *refusals* are "
        "connections and segments the server refused as `busy` (its `/ping` counts).",
    ]
    return "\n".join(lines) + "\n"


def plot(results: Results, meta: dict[str, Any], path: Path) -> None:
    """First audio p95 and throughput against the number of sessions, one line per mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (latency, throughput) = plt.subplots(1, 2, figsize=(10, 4))
    for mode, levels in results.items():
        sessions = [s.sessions for s in levels]
        latency.plot(sessions, [s.first_audio_ms["p95"] for s in levels], "o-", label=mode)
        throughput.plot(sessions, [s.audio_s_per_s for s in levels], "o-", label=mode)
    for axis, label in ((latency, "first audio p95 (ms)"), (throughput, "audio-s per s")):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("concurrent sessions")
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
        axis.legend()
    figure.suptitle(f"tts-server load: {meta['engine']} on {meta['device']}")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def write(results: Results, meta: dict[str, Any], out: Path, stem: str) -> list[Path]:
    """Write the JSON, the Markdown and the plot; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.json", out / f"{stem}.md", out / f"{stem}.png"]
    paths[0].write_text(json.dumps(to_json(results, meta), indent=2) + "\n")
    paths[1].write_text(markdown(results, meta))
    try:
        plot(results, meta, paths[2])
    except ModuleNotFoundError as exc:  # the GPU machine may lack matplotlib: figures first
        print(f"load report: no plot ({exc}); the JSON and the Markdown are written")
        return paths[:2]
    return paths
