"""The prepared GPU run: a calibrated checkpoint, then the load benchmark batched and unbatched.

    scripts/gpu_load_run.sh                            # on the GPU machine; JSON under $OUT
    python -m bench.load.gpu_run --device cpu --quick --model-dir DIR --out /tmp/rehearsal

Steps, each a child process bounded by what is left of ``--budget-s`` (6 minutes):

1. build the full-size Kokoro-82M checkpoint with random weights, its duration projection
   calibrated to ``--frames-per-token`` (measured on the CPU beforehand; no weights travel),
   with ``python -m bench.load.calibrated_checkpoint`` — unless ``--model-dir`` names one;
2. ``python -m bench.load.tts_load_bench --engine torch --device DEVICE`` with the phoneme table
   (the GPU machine has no spaCy, so nothing imports misaki: see
   ``tts_server.engines.torch.kmodel``), once unbatched and once batched.

``OUT/gpu_run.json`` records every step (command, seconds, exit status) and the device; the
benchmark's ``tts_load_torch_<device>.{json,md,png}`` land beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FRAMES_PER_TOKEN = 2.75  # the embedded ONNX model's frames per phoneme token, as measured
BUDGET_S = 360.0
PHONEME_TABLE = Path(__file__).with_name("phonemes.json")  # bench.load.phoneme_table wrote it
FULL = {"sessions": ["1", "2", "4", "8", "16", "32", "64"], "max_batch": ["1", "64"]}
QUICK = {"sessions": ["2"], "max_batch": ["1", "4"]}  # a rehearsal: one level, both modes


class Step:
    """One child process of the run, bounded by the time left."""

    def __init__(self, name: str, command: list[str]) -> None:
        self.name, self.command = name, command
        self.seconds = 0.0
        self.status: int | str = "not run"

    def run(self, deadline: float) -> bool:
        """Run within ``deadline`` (monotonic); True when it exited 0."""
        started = time.monotonic()
        child = subprocess.Popen(self.command, start_new_session=True)  # its own process group
        try:
            self.status = child.wait(timeout=deadline - started)
        except subprocess.TimeoutExpired:
            self.status = "timed out"
        finally:  # the step's own children too (a server the benchmark started, say)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        self.seconds = round(time.monotonic() - started, 1)
        print(f"gpu_run: {self.name}: {self.status} in {self.seconds} s", flush=True)
        return self.status == 0

    def record(self) -> dict[str, Any]:
        """What ``gpu_run.json`` says about this step."""
        return {"name": self.name, "command": self.command, "seconds": self.seconds,
                "status": self.status}  # fmt: skip


def plan(args: argparse.Namespace, model_dir: Path) -> list[Step]:
    """The steps for these flags."""
    python = sys.executable
    steps = []
    if args.model_dir is None:
        build = ["-m", "bench.load.calibrated_checkpoint", "--out", str(model_dir)]
        build += ["--frames-per-token", str(args.frames_per_token)]
        steps.append(Step("calibrated checkpoint", [python, *build]))
    sizes = QUICK if args.quick else FULL
    bench = ["-m", "bench.load.tts_load_bench", "--engine", "torch", "--device", args.device]
    bench += ["--model-dir", str(model_dir), "--out", str(args.out)]
    bench += ["--sessions", *sizes["sessions"], "--max-batch", *sizes["max_batch"]]
    bench += ["--phoneme-table", str(args.phoneme_table)]
    steps.append(Step("load benchmark", [python, *bench]))
    return steps


def device_info() -> dict[str, Any]:
    """The torch build and the accelerator it sees."""
    import torch

    cuda = torch.cuda.is_available()
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run every step in order, stop at the first failure, write ``gpu_run.json``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--quick", action="store_true", help="one level, small batch: a rehearsal")
    parser.add_argument("--model-dir", type=Path, help="a checkpoint to use instead of building")
    table_help = "phonemes of the benchmark sentences (default: %(default)s)"
    parser.add_argument("--phoneme-table", type=Path, default=PHONEME_TABLE, help=table_help)
    parser.add_argument("--frames-per-token", type=float, default=FRAMES_PER_TOKEN)
    parser.add_argument("--budget-s", type=float, default=BUDGET_S)
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.budget_s
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kokoro-calibrated-") as scratch:
        steps = plan(args, args.model_dir or Path(scratch) / "model")
        ok = all(step.run(deadline) for step in steps)  # stops at the first failure
    report = {"ok": ok, **device_info(), "steps": [step.record() for step in steps]}
    (args.out / "gpu_run.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
