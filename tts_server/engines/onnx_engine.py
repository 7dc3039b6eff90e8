"""Kokoro-82M on onnxruntime (CPU): the embedded default engine.

By default the int8 ONNX model and its voice packs are the packaged ones (``packaged.py``). A
model directory may instead hold ``*.onnx`` plus ``voices*.npz``/``voices*.bin`` (a
NumPy archive of ``(510, 1, 256)`` style tables) and optionally a Kokoro ``config.json``.

Word timings: the exported graph outputs only the audio, so at load time ``with_durations``
finds the tensor of per-token frame counts that the graph computes anyway (``round(duration /
speed)`` clipped to at least 1, cast to integers: what the alignment is built from) and adds it
to the graph's outputs. The edit takes about 0.7 s on the 92 MB int8 model, about as long as
reading it, so the edited model is kept in memory, not cached on disk. See docs/protocol.md.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tts_protocol.validation import VoiceMix
from tts_server.engines.base import G2P, Engine, EngineError, Trim
from tts_server.engines.packaged import PACKAGE_HINT, load_voices, packaged_files
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed, char_bounds

DEFAULT_VOICE = "jf_alpha"


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
        vocab = packaged_files()[1]
    return models[0], vocab, load_voices(packs[0])


def duration_output(graph: Any) -> str:
    """The name of the per-token frame-count tensor in a Kokoro ONNX graph.

    Kokoro's forward computes ``round(sum(sigmoid(duration_proj)) / speed)``, clips it to at
    least 1 and casts it to integers: found here as the ``Div`` by the graph input ``speed``,
    then ``Round``, ``Clip``, ``Cast``. ``EngineError`` if the graph has no such chain.
    """
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def follow(name: str, op: str) -> list[str]:
        return [node.output[0] for node in consumers.get(name, []) if node.op_type == op]

    found = [
        cast
        for div in follow("speed", "Div")
        for rounded in follow(div, "Round")
        for clipped in follow(rounded, "Clip")
        for cast in follow(clipped, "Cast")
    ]
    if len(found) != 1:
        raise EngineError(
            "cannot find Kokoro's durations in the ONNX graph (Div by 'speed', Round, Clip, "
            f"Cast; found {len(found)} such chains): word timings need them"
        )
    return found[0]


def with_durations(model_path: Path) -> tuple[bytes, list[str]]:
    """The model at ``model_path`` with its durations as an output; the outputs to fetch.

    Those are the audio (the graph's first output) and the durations, in that order.
    """
    try:
        import onnx
    except ImportError as exc:
        raise EngineError(f"the onnx package is not installed; run: {PACKAGE_HINT}") from exc
    model = onnx.load(str(model_path))
    name = duration_output(model.graph)
    if name not in {output.name for output in model.graph.output}:
        model.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.INT64, None)
        )
    return model.SerializeToString(), [model.graph.output[0].name, name]


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
            _directory_files(model_dir) if model_dir else packaged_files()
        )
        graph, self._outputs = with_durations(model)
        self._sessions = []
        for lane_threads in split_cores(workers, threads):
            options = ort.SessionOptions()
            options.intra_op_num_threads = lane_threads
            self._sessions.append(
                ort.InferenceSession(
                    graph, sess_options=options, providers=["CPUExecutionProvider"]
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

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        """The graph is batch-1: each piece in turn on the lane's own session."""
        return [
            self._infer_piece(lane, piece.phonemes, piece.voice, piece.speed) for piece in pieces
        ]

    def _infer_piece(self, lane: int, phonemes: str, voice: VoiceMix, speed: float) -> Timed:
        tokens = [self._vocab[p] for p in phonemes if p in self._vocab]
        if not tokens:
            return Timed(np.zeros(0, dtype=np.float32))
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
            audio, frames = self._sessions[lane].run(self._outputs, feed, run_options=options)
        finally:
            with self._lock:
                self._run_options[lane] = None
        audio = np.asarray(audio, dtype=np.float32).ravel()
        return Timed(audio, char_bounds(phonemes, self._vocab, frames, audio.size))

    def _interrupt(self, lane: int) -> None:
        """Set onnxruntime's terminate flag: the lane's running ``session.run`` fails within ms."""
        with self._lock:
            options = self._run_options[lane]
            if options is not None:
                options.terminate = True
