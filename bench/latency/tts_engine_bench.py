"""Engine benchmark: time to first audio and real-time factor, alone and under concurrent load.

    python -m bench.latency.tts_engine_bench                # embedded ONNX engine on the CPU
    python -m bench.latency.tts_engine_bench --workers 1 2  # ONNX: K sessions, the cores split
    python -m bench.latency.tts_engine_bench --engine torch --model-dir DIR --device cpu --speedups

Each case runs once to warm up, then ``--runs`` rounds (the Ks interleaved, so that load from
other work hits them alike); medians are reported. For every K in ``--workers`` (ONNX sessions
side by side, the server's ``--onnx-workers``), ``--streams`` concurrent callers each speak the
load benchmark's four sentences one after the other, as sessions do: aggregate audio-seconds
per second and first audio per sentence. For the torch engine, ``--speedups`` times one
forward pass with the load-time speed-ups on and off, counts the operators the PyTorch
profiler sees, and times a batch of four. The machine's load average is recorded (other work
shares the CPU). Writes ``docs/benchmarks/tts_engine_<engine>_<device>.{md,json}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.load.tts_load_bench import SENTENCES
from tts_protocol.validation import parse_voice
from tts_server.engines import Engine, load_engine
from tts_server.engines.scheduler import Piece
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
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"


async def measure(engine: Engine, text: str) -> dict[str, float]:
    """One synthesis: ms to the first chunk, total ms, seconds of audio, real-time factor."""
    started = time.perf_counter()
    first = None
    samples = 0
    async for chunk in engine.synthesize(engine.prepare(text)):
        first = first if first is not None else time.perf_counter() - started
        samples += chunk.audio.size
    total = time.perf_counter() - started
    audio = samples / engine.sample_rate
    return {
        "first_audio_ms": round((first or total) * 1000, 1),
        "total_ms": round(total * 1000, 1),
        "audio_s": round(audio, 3),
        "rtf": round(total / audio, 3),
    }


async def concurrent(engine: Engine, streams: int) -> dict[str, float]:
    """``streams`` callers, each speaking ``SENTENCES`` in turn: throughput and first audio."""
    firsts: list[float] = []

    async def stream() -> float:
        audio = 0.0
        for text in SENTENCES:
            result = await measure(engine, text)
            firsts.append(result["first_audio_ms"])
            audio += result["audio_s"]
        return audio

    started = time.perf_counter()
    audio = sum(await asyncio.gather(*(stream() for _ in range(streams))))
    wall = time.perf_counter() - started
    return {
        "audio_s_per_s": round(audio / wall, 2),
        "first_audio_p50_ms": round(statistics.median(firsts), 1),
        "first_audio_max_ms": round(max(firsts), 1),
    }


async def run_round(engine: Engine, streams: list[int]) -> dict[str, dict[str, float]]:
    """One measurement of every case alone, then of each concurrency level."""
    results = {name: await measure(engine, text) for name, text in CASES.items()}
    for count in streams:
        results[f"{count} streams"] = await concurrent(engine, count)
    return results


def medians(rounds: list[dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Per case, the median of each figure over the rounds."""
    return {
        name: {
            "chars": len(CASES.get(name, "")),
            "median": {k: statistics.median(r[name][k] for r in rounds) for k in rounds[0][name]},
        }
        for name in rounds[0]
    }


def speedups(settings: Settings, runs: int) -> dict[str, Any]:
    """Torch: one forward of a 12-word sentence with the load-time speed-ups on and off."""
    import torch

    report: dict[str, Any] = {}
    for label, on in (("eager", False), ("speed-ups", True)):
        engine = load_engine(replace(settings, fold_weight_norm=on, fuse_styles=on))
        try:
            voice = parse_voice(engine.default_voice)
            one = [Piece(engine._g2p(SENTENCES[0]), voice, 1.0)]
            engine._infer_batch(0, one)  # warm-up
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                engine._infer_batch(0, one)
                times.append((time.perf_counter() - started) * 1000)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                engine._infer_batch(0, one)
            ops = Counter(event.name for event in prof.events())
            four = [Piece(engine._g2p(text), voice, 1.0) for text in SENTENCES]
            started = time.perf_counter()
            engine._infer_batch(0, four)
            batch_ms = (time.perf_counter() - started) * 1000
        finally:
            engine.close()
        report[label] = {
            "forward_ms": round(statistics.median(times), 1),
            "operators": sum(ops.values()),
            "weight_norm_calls": ops["aten::_weight_norm_interface"],
            "linear_calls": ops["aten::linear"] + ops["aten::addmm"],
            "batch_of_4_ms": round(batch_ms, 1),
        }
    return report


async def run(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """Every K in ``--workers`` (ONNX) or the one engine, then the torch speed-ups."""
    report: dict[str, Any] = {
        "engine": settings.engine,
        "device": settings.device or "auto",
        "model_dir": str(settings.model_dir) if settings.model_dir else "packaged",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "python": platform.python_version(),
        "load_average_before": round(os.getloadavg()[0], 2),
        "runs": args.runs,
        "workers": {},
    }
    engines: dict[int, Engine] = {}
    rounds: dict[int, list[dict[str, dict[str, float]]]] = {}
    try:
        for workers in args.workers if settings.engine == "onnx" else [1]:
            started = time.perf_counter()
            engines[workers] = await asyncio.to_thread(
                load_engine, replace(settings, onnx_workers=workers)
            )
            report["workers"][str(workers)] = {"load_s": round(time.perf_counter() - started, 2)}
            await run_round(engines[workers], [])  # warm-up
        # Rounds interleave the Ks, so that load from other work on the CPU hits them alike.
        rounds = {workers: [] for workers in engines}
        for _ in range(args.runs):
            for workers, engine in engines.items():
                rounds[workers].append(await run_round(engine, args.streams))
    finally:
        for engine in engines.values():
            engine.close()
    for workers, measured in rounds.items():
        report["workers"][str(workers)]["cases"] = medians(measured)
    if args.speedups and settings.engine == "torch":
        report["speedups"] = await asyncio.to_thread(speedups, settings, args.runs)
    report["load_average_after"] = round(os.getloadavg()[0], 2)
    return report


def markdown(report: dict[str, Any]) -> str:
    """The Markdown tables of medians."""
    lines = [
        f"# Engine benchmark: {report['engine']} ({report['device']})",
        "",
        f"Model: {report.get('model_dir', 'packaged')}. "
        f"Machine: {report['machine']}; Python {report['python']}; load average "
        f"{report['load_average_before']} before, {report['load_average_after']} after (the "
        f"CPU is shared). Medians of {report['runs']} runs after a warm-up. Written by "
        "`bench/latency/tts_engine_bench.py`.",
        "",
        "| workers | case | first audio (ms) | total (ms) | audio (s) | RTF |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for workers, result in report["workers"].items():
        for name, case in result["cases"].items():
            m = case["median"]
            if "rtf" in m:
                lines.append(
                    f"| {workers} | {name} | {m['first_audio_ms']} | {m['total_ms']} "
                    f"| {m['audio_s']} | {m['rtf']} |"
                )
    streams = [
        f"| {workers} | {name.split()[0]} | {case['median']['audio_s_per_s']} "
        f"| {case['median']['first_audio_p50_ms']} | {case['median']['first_audio_max_ms']} |"
        for workers, result in report["workers"].items()
        for name, case in result["cases"].items()
        if "audio_s_per_s" in case["median"]
    ]
    if streams:
        lines += [
            "",
            "| workers | concurrent streams | audio-s per s | first audio p50 (ms) | max (ms) |",
            "|---:|---:|---:|---:|---:|",
            *streams,
        ]
    if "speedups" in report:
        lines += [
            "",
            "| torch, one 12-word sentence | ms | operators | weight-norm calls | linear calls "
            "| batch of the 4 sentences (ms) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for label, row in report["speedups"].items():
            lines.append(
                f"| {label} | {row['forward_ms']} | {row['operators']} "
                f"| {row['weight_norm_calls']} | {row['linear_calls']} | {row['batch_of_4_ms']} |"
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
    parser.add_argument("--workers", type=int, nargs="+", default=[1])
    parser.add_argument("--streams", type=int, nargs="*", default=[1, 4])
    parser.add_argument("--speedups", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    settings = Settings(engine=args.engine, model_dir=args.model_dir, device=args.device)
    report = asyncio.run(run(args, settings))
    text = markdown(report)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"tts_engine_{settings.engine}_{settings.device or 'auto'}"
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(text)


if __name__ == "__main__":
    main()
