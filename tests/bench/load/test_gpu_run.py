"""The prepared GPU run, rehearsed on the CPU: the same script, the torch engine on ``cpu``.

The shell entry point runs ``bench.load.gpu_run`` end to end with the tiny random checkpoint (the
GPU run builds the full-size calibrated one instead): the server starts with the torch engine,
the load benchmark measures it, and ``gpu_run.json`` and the benchmark's files land in OUT.
As on the GPU machine, spaCy, misaki, eSpeak, PyAV and onnxruntime cannot be imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.load.gpu_run import FULL, QUICK, main
from tests.tts_server.tiny_kokoro import random_checkpoint, tiny_config, write_model_dir

ROOT = Path(__file__).resolve().parents[3]
GPU_MACHINE = ROOT / "tests" / "bench" / "gpu_machine"  # its sitecustomize hides what it lacks


@pytest.mark.timeout(600)  # two torch servers on a shared 2-core CPU
def test_the_script_runs_the_benchmark_on_the_cpu_end_to_end(tmp_path: Path) -> None:
    config = tiny_config()
    model = write_model_dir(tmp_path / "model", config, random_checkpoint(config))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(out), "GPU_WHEELS": "/nonexistent"}
    env["PYTHONPATH"] = str(GPU_MACHINE)  # no spaCy, misaki, eSpeak, PyAV or onnxruntime
    command = [str(ROOT / "scripts" / "gpu_load_run.sh"), "--device", "cpu", "--quick"]
    command += ["--model-dir", str(model), "--budget-s", "420"]
    script = subprocess.Popen(command, env=env, cwd=ROOT, start_new_session=True)
    try:
        assert script.wait(timeout=540) == 0
    finally:  # never leave a server behind, whatever happened
        with contextlib.suppress(ProcessLookupError):
            os.killpg(script.pid, signal.SIGKILL)
    report = json.loads((out / "gpu_run.json").read_text())
    assert report["ok"] and [s["name"] for s in report["steps"]] == ["load benchmark"]
    assert report["torch"] and report["gpu"] is None  # the CPU rehearsal
    load = json.loads((out / "tts_load_torch_cpu.json").read_text())
    for levels in load["modes"].values():
        assert [level["sessions"] for level in levels] == [int(n) for n in QUICK["sessions"]]
        assert all(level["errors"] == 0 and level["sentences"] == 4 * level["sessions"]
                   for level in levels)  # fmt: skip
    assert {p.name for p in out.iterdir()} >= {"tts_load_torch_cpu.md", "tts_load_torch_cpu.png"}


def test_a_failing_step_stops_the_run_and_is_recorded(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"  # the server cannot load it: the benchmark fails
    code = main(["--out", str(tmp_path), "--device", "cpu", "--quick", "--model-dir", str(missing),
                 "--budget-s", "120"])  # fmt: skip
    report = json.loads((tmp_path / "gpu_run.json").read_text())
    assert code == 1 and not report["ok"]
    assert report["steps"][0]["status"] not in (0, "not run")
    assert FULL["max_batch"][0] == "1"  # the full run measures unbatched as well
