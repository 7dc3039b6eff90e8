"""A decoder call's own cost: the ONNX decoder timed over windows of several sizes, fitted.

    python -m bench.latency.call_cost [--runs 5]

The embedded int8 model split as the engine splits it (``SplitKokoro``), the longest calibration
sentence's text side in the default voice, then windows of ``--sizes`` kept frames with the
default plan's context either side, each decoded ``--runs`` times: one stream alone on a session
with a thread per core, then two at once, each on a session of its own, as ``voice-agent dev``'s
two lanes run. A least-squares line through each condition's medians against the frames decoded:
seconds a call plus seconds a frame, and the call in frames. ``CALL_FRAMES`` in
``tts_server/engines/pace.py`` is that, rounded (docs/tts_server.md, "A call's own cost").
Writes ``docs/benchmarks/call_cost.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.latency.report import write_files
from bench.page.run import commit
from tts_server.engines.onnx.engine import DEFAULT_VOICE, style_row
from tts_server.engines.onnx.priors import CALIBRATION
from tts_server.engines.onnx.split import Features, SplitKokoro
from tts_server.engines.pace import CALL_FRAMES
from tts_server.engines.packaged import packaged_files
from tts_server.engines.windows import Window, window_plan
from tts_server.settings import Settings

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
SIZES = (8, 16, 32, 64, 128)


def fit(decoded: Sequence[int], seconds: Sequence[float]) -> dict[str, float]:
    """The line ``seconds = call + frame x decoded``, and the call in frames."""
    frame, call = np.polyfit(np.asarray(decoded, float), np.asarray(seconds, float), 1)
    return {
        "call_ms": round(float(call) * 1000, 1),
        "frame_ms": round(float(frame) * 1000, 2),
        "call_frames": round(float(call / frame), 2),
    }


def sentence(split: SplitKokoro) -> Features:
    """The longest calibration sentence's text side, in the default voice."""
    _, vocab, voices = packaged_files()
    phonemes = max(CALIBRATION, key=len)
    tokens = [vocab[p] for p in phonemes if p in vocab]
    table = np.asarray(voices[DEFAULT_VOICE]).reshape(-1, 256)
    return split.text(tokens, style_row(table, len(tokens)), 1.0)


def windows(sizes: Sequence[int], frames: int) -> dict[int, Window]:
    """A window of each size with the default context either side, within ``frames``."""
    plan = window_plan(Settings())
    context = plan.context if plan is not None else 0
    if max(sizes) + 2 * context > frames:
        raise ValueError(f"the sentence has {frames} frames: no window over {frames - 2 * context}")
    return {n: Window(context, context + n, context, context) for n in sizes}


def timed(split: SplitKokoro, features: Features, window: Window) -> float:
    """Seconds one decoder call over ``window`` takes."""
    started = time.perf_counter()
    split.decode(features, window)
    return time.perf_counter() - started


def together(
    splits: Sequence[SplitKokoro], features: Features, window: Window, runs: int
) -> list[float]:
    """Each stream's time for ``window``, ``runs`` times, every stream starting together."""
    times: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(len(splits))

    def stream(split: SplitKokoro) -> None:
        for _ in range(runs):
            start.wait()
            took = timed(split, features, window)
            with lock:
                times.append(took)

    threads = [threading.Thread(target=stream, args=(split,)) for split in splits]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return times


def condition(
    splits: Sequence[SplitKokoro], features: Features, cut: dict[int, Window], runs: int
) -> dict[str, Any]:
    """Median seconds a call per size with ``splits`` decoding at once, and the line."""
    for window in cut.values():  # warm: each shape once
        together(splits, features, window, 1)
    medians = {n: statistics.median(together(splits, features, w, runs)) for n, w in cut.items()}
    decoded = [w.decoded_frames for w in cut.values()]
    return {
        "streams": len(splits),
        "median_ms": {str(n): round(s * 1000, 1) for n, s in medians.items()},
        "decoded_frames": {str(n): w.decoded_frames for n, w in cut.items()},
        **fit(decoded, list(medians.values())),
    }


def to_markdown(report: dict[str, Any]) -> str:
    sizes = list(report["conditions"][0]["median_ms"])
    lines = [
        "# A decoder call's own cost",
        "",
        f"`python -m bench.latency.call_cost`, {report['runs']} runs a size, medians, commit "
        f"{report['commit']}, {report['cpus']} CPUs, {report['threads']} threads a session, "
        f"load average before {report['load_before']}. The int8 decoder over windows of each "
        "size with the default context either side: one stream alone, then two at once (a "
        "session each). The line: ms a call + ms a decoded frame; the call in frames is "
        f"`CALL_FRAMES`'s measure (now {report['call_frames_used']}).",
        "",
        "| streams | " + " | ".join(f"{n} kept ms" for n in sizes) + " | call ms | frame ms "
        "| call in frames |",
        "|---:|" + "---:|" * (len(sizes) + 3),
    ]
    for c in report["conditions"]:
        cells = " | ".join(str(c["median_ms"][n]) for n in sizes)
        lines.append(
            f"| {c['streams']} | {cells} | {c['call_ms']} | {c['frame_ms']} | {c['call_frames']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    threads = os.cpu_count() or 1
    model, _, _ = packaged_files()
    splits = [SplitKokoro.load(model, threads) for _ in range(2)]
    features = sentence(splits[0])
    cut = windows(args.sizes, features.frames)
    load_before = [round(x, 2) for x in os.getloadavg()]
    conditions = [condition(splits[:n], features, cut, args.runs) for n in (1, 2)]
    for c in conditions:
        print(c)
    report = {
        "runs": args.runs,
        "commit": commit(),
        "cpus": os.cpu_count(),
        "threads": threads,
        "platform": platform.platform(),
        "load_before": load_before,
        "call_frames_used": CALL_FRAMES,
        "conditions": conditions,
    }
    write_files(report, args.out, "call_cost", to_markdown, lambda _r, _p: None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
