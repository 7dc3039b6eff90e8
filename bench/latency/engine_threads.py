"""The ONNX engine's threads: spinning on and off, one thread or two, on idle and shared cores.

    python -m bench.latency.engine_threads [--runs 5]

onnxruntime's intra-op threads busy-wait for work between operators by default
(``session.intra_op.allow_spinning``). On idle cores that saves a wake-up per operator; on
cores another process is using, the spinning threads take the time slices the work needs.
AgentCore and SageMaker hosts share their cores, and so does a laptop running the agent, the
recognizer and a browser. Each configuration is its own ``OnnxEngine``: threads x spinning,
decoding whole and in the default windows, every one warmed up in the voice. The 12-word
sentence of ``streaming_synthesis`` runs on each in turn, ``--runs`` times, first with the
cores idle, then with another process running matrix products on every core. Medians of the
first audio and the total. Writes ``docs/benchmarks/engine_threads.{md,json}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.latency.streaming_synthesis import OUT, TWELVE, WARM_UP, Heard, hear
from tts_server.engines import Engine, load_g2p, window_plan
from tts_server.engines.onnx.engine import OnnxEngine
from tts_server.settings import Settings

THREADS = (1, 2)
LOAD = """
import numpy as np
a = np.random.default_rng(0).random((400, 400))
while True:
    a = a @ a / 400.0
"""


def configurations() -> dict[str, dict[str, Any]]:
    """Every configuration's engine arguments, by name."""
    plan = window_plan(Settings())
    return {
        f"{threads} thread{'s' * (threads > 1)}, spinning {'on' if spin else 'off'}, {mode}": {
            "threads": threads,
            "spinning": spin,
            "windows": plan if mode == "windows" else None,
        }
        for mode in ("whole", "windows")
        for threads in THREADS
        for spin in (True, False)
    }


def engines() -> dict[str, Engine]:
    """One engine per configuration, each having spoken the warm-up sentence."""
    g2p = load_g2p(Settings())
    built: dict[str, Engine] = {
        name: OnnxEngine(g2p, **arguments) for name, arguments in configurations().items()
    }
    for engine in built.values():
        asyncio.run(hear(engine, [WARM_UP]))
    return built


def measure(built: dict[str, Engine], runs: int) -> dict[str, dict[str, float]]:
    """First audio and total of the 12-word sentence per configuration, interleaved."""
    heard: dict[str, list[Heard]] = {name: [] for name in built}
    for _ in range(runs):
        for name, engine in built.items():
            heard[name].append(asyncio.run(hear(engine, [TWELVE])))
    return {
        name: {
            "first_audio_ms": round(statistics.median(h.first_s for h in runs_of) * 1000, 1),
            "total_ms": round(statistics.median(h.total_s for h in runs_of) * 1000, 1),
        }
        for name, runs_of in heard.items()
    }


def loaded(built: dict[str, Engine], runs: int) -> dict[str, dict[str, float]]:
    """``measure`` while another process keeps every core busy."""
    cores = str(os.cpu_count() or 1)
    env = {**os.environ, "OMP_NUM_THREADS": cores, "OPENBLAS_NUM_THREADS": cores}
    load = subprocess.Popen([sys.executable, "-c", LOAD], env=env)
    try:
        return measure(built, runs)
    finally:
        load.kill()
        load.wait()


def markdown(result: dict[str, Any]) -> str:
    """The report as a Markdown page."""
    lines = [
        "# The ONNX engine's threads: spinning and thread count, idle and shared cores",
        "",
        "`python -m bench.latency.engine_threads`: the embedded ONNX engine (int8, CPU, "
        "default voice), decoding the 12-word sentence of `streaming_synthesis` whole and in "
        "the default windows, with onnxruntime's intra-op threads spinning or not "
        "(`--onnx-spinning`) and one or two of them. Every configuration its own engine, "
        f"{result['runs']} runs interleaved, medians; idle cores, then another process running "
        f"matrix products on all {result['machine']['cpus']} cores. "
        f"{result['machine']['platform']}.",
        "",
        "| configuration | idle: first audio ms | idle: total ms | shared: first audio ms "
        "| shared: total ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, idle in result["idle"].items():
        shared = result["shared"][name]
        lines.append(
            f"| {name} | {idle['first_audio_ms']} | {idle['total_ms']} "
            f"| {shared['first_audio_ms']} | {shared['total_ms']} |"
        )
    lines += ["", "Spinning off against on, same thread count and mode (ratio of medians):", ""]
    lines += [f"- {line}" for line in result["spinning_off_over_on"]]
    lines.append("")
    return "\n".join(lines)


def ratios(result: dict[str, Any]) -> list[str]:
    """Spinning off over on, per condition, thread count and mode."""
    lines = []
    for name in result["idle"]:
        if ", spinning on," not in name:
            continue
        off = name.replace("spinning on", "spinning off")
        parts = []
        for condition in ("idle", "shared"):
            for metric in ("first_audio_ms", "total_ms"):
                on_value = result[condition][name][metric]
                ratio = result[condition][off][metric] / on_value
                parts.append(
                    f"{condition} {metric.removesuffix('_ms').replace('_', ' ')} {ratio:.2f}"
                )
        lines.append(f"{name.replace(', spinning on', '')}: " + ", ".join(parts))
    return lines


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and write its Markdown and JSON reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    built = engines()
    try:
        result: dict[str, Any] = {
            "idle": measure(built, args.runs),
            "shared": loaded(built, args.runs),
        }
    finally:
        for engine in built.values():
            engine.close()
    result["runs"] = args.runs
    result["machine"] = {"platform": platform.platform(), "cpus": os.cpu_count()}
    result["spinning_off_over_on"] = ratios(result)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "engine_threads.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "engine_threads.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
