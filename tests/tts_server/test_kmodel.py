"""``import_kmodel`` where kokoro's G2P pipeline cannot be imported (the GPU machine's case).

Each case runs in a child interpreter whose ``sitecustomize`` hides packages, so this process
keeps its own kokoro import intact.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GPU_MACHINE = ROOT / "tests" / "bench" / "gpu_machine"  # hides the G2P stack, PyAV, ...


def run(code: str, *, hide_g2p: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(GPU_MACHINE) if hide_g2p else ""}
    command = [sys.executable, "-c", code]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_model_imports_without_spacy_misaki_or_espeak() -> None:
    result = run(
        "import sys\n"
        "from tts_server.engines.torch.kmodel import import_kmodel\n"
        "model = import_kmodel()\n"
        "from kokoro import KModel\n"  # the package the workaround left behind still answers
        "print(model.__module__, model is KModel, sys.modules['spacy'])\n",
        hide_g2p=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["kokoro.model", "True", "None"]


def test_with_the_g2p_installed_kokoro_is_imported_as_usual() -> None:
    result = run(
        "from tts_server.engines.torch.kmodel import import_kmodel\n"
        "import kokoro\n"
        "print(import_kmodel() is kokoro.KModel, hasattr(kokoro, 'KPipeline'))\n",
        hide_g2p=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_a_missing_package_the_model_needs_is_not_hidden() -> None:
    result = run(
        "import sys\n"
        "sys.modules['transformers'] = None\n"  # kokoro.model needs it: no workaround applies
        "from tts_server.engines.torch.kmodel import import_kmodel\n"
        "try:\n"
        "    import_kmodel()\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.name)\n",
        hide_g2p=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ModuleNotFoundError", "transformers"]
