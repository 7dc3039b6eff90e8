"""Engine benchmark: time to first audio and real-time factor, short and long input.

    python -m bench.tts_engine_bench                      # embedded ONNX engine on the CPU
    python -m bench.tts_engine_bench --engine torch --model-dir /opt/ml/model --device cuda

Each case runs once to warm up, then ``--runs`` times; medians are reported. Writes
``docs/benchmarks/tts_engine_<engine>_<device>.{md,json}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from pathlib import Path

from tts_server.engines import Engine, load_engine
from tts_server.settings import Settings

CASES = {
    "short": "Hello! How can I help you today?",
    "long": (
        "Kokoro is a small text to speech model with eighty two million parameters. "
        "It runs comfortably on a laptop processor, and on a graphics card it is many times "
        "faster than real time. This paragraph has four sentences, so the engine yields four "
        "chunks. The first one is heard long before the last one is synthesized."
    ),
}
OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


async def measure(engine: Engine, text: str) -> dict[str, float]:
    """One synthesis: ms to the first chunk, total ms, seconds of audio, real-time factor."""
    started = time.perf_counter()
    first = None
    samples = 0
    async for chunk in engine.synthesize(text):
        first = first if first is not None else time.perf_counter() - started
        samples += chunk.size
    total = time.perf_counter() - started
    audio = samples / engine.sample_rate
    return {
        "first_audio_ms": round((first or total) * 1000, 1),
        "total_ms": round(total * 1000, 1),
        "audio_s": round(audio, 3),
        "rtf": round(total / audio, 3),
    }


async def run(settings: Settings, runs: int) -> dict[str, object]:
    """Load the engine, then warm up and time every case ``runs`` times."""
    started = time.perf_counter()
    engine = await asyncio.to_thread(load_engine, settings)
    load_s = time.perf_counter() - started
    results: dict[str, object] = {}
    for name, text in CASES.items():
        await measure(engine, text)  # warm-up
        samples = [await measure(engine, text) for _ in range(runs)]
        results[name] = {
            "chars": len(text),
            "runs": samples,
            "median": {k: statistics.median(s[k] for s in samples) for k in samples[0]},
        }
    return {
        "engine": settings.engine,
        "device": settings.device or "auto",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "python": platform.python_version(),
        "load_s": round(load_s, 2),
        "cases": results,
    }


def markdown(report: dict[str, object]) -> str:
    """The Markdown table of medians."""
    lines = [
        f"# Engine benchmark: {report['engine']} ({report['device']})",
        "",
        f"Machine: {report['machine']}; Python {report['python']}; load {report['load_s']} s.",
        "Medians of the runs below, after one warm-up run each. Written by "
        "`bench/tts_engine_bench.py`.",
        "",
        "| case | chars | first audio (ms) | total (ms) | audio (s) | RTF |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, case in report["cases"].items():  # type: ignore[union-attr]
        m = case["median"]
        lines.append(
            f"| {name} | {case['chars']} | {m['first_audio_ms']} | {m['total_ms']} "
            f"| {m['audio_s']} | {m['rtf']} |"
        )
    lines += ["", "RTF = synthesis time / audio duration (below 1 is faster than real time).", ""]
    return "\n".join(lines)


def main() -> None:
    """Parse flags, run, print and write the report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", choices=["onnx", "torch"], default="onnx")
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--device", choices=["cpu", "cuda"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    settings = Settings(engine=args.engine, model_dir=args.model_dir, device=args.device)
    report = asyncio.run(run(settings, args.runs))
    text = markdown(report)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"tts_engine_{settings.engine}_{settings.device or 'auto'}"
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(text)


if __name__ == "__main__":
    main()
