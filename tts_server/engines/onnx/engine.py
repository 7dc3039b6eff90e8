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
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tts_protocol.validation import VoiceMix
from tts_server.engines.base import G2P, Engine, EngineError, Started, Trim, WindowJob
from tts_server.engines.onnx.graph import session_options, with_durations
from tts_server.engines.onnx.lanes import LaneModels, Lanes
from tts_server.engines.onnx.priors import CALIBRATION, VoicePriors
from tts_server.engines.onnx.split import Features, SplitKokoro, Stats, read_split_graph
from tts_server.engines.packaged import PACKAGE_HINT, load_voices, packaged_files
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed, char_bounds
from tts_server.engines.windows import SAMPLES_PER_FRAME, WindowPlan, speech_span, worth_windows

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


def style_row(table: Any, tokens: int) -> np.ndarray:
    """A voice table's style row for a sentence of ``tokens`` tokens (the last for longer)."""
    return np.asarray(table[min(tokens, len(table)) - 1], dtype=np.float32)


def split_cores(workers: int, cores: int | None = None) -> list[int]:
    """Intra-op threads for each of ``workers`` sessions: the cores shared out, at least one."""
    cores = cores or os.cpu_count() or 1
    return [
        max(1, cores // workers + (1 if lane < cores % workers else 0)) for lane in range(workers)
    ]


class OnnxEngine(Engine):
    """Kokoro-82M int8 ONNX on the CPU: ``workers`` sessions, each on its own lane.

    The graph is batch-1, so every lane runs one piece at a time; with two or more workers,
    pieces of different connections run side by side, each session with ``lane_threads``
    intra-op threads (None: its share of the cores). All the cores for every lane keeps one
    listener's windows as fast as one lane's while two listeners no longer queue behind each
    other's windows; with ``narrow``, such a lane also holds a one-thread session that it runs
    while another lane is running or another listener's reply is under way (``lanes``;
    docs/tts_server.md, "Two listeners at once").
    """

    name = "onnx"
    preferred_voice = DEFAULT_VOICE
    streams = True

    def __init__(
        self,
        g2p: G2P,
        model_dir: Path | None = None,
        trim: Trim | None = None,
        lane_threads: int | None = None,
        workers: int = 1,
        windows: WindowPlan | None = None,
        spinning: bool = False,
        narrow: bool = True,
    ) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EngineError(f"onnxruntime is not installed; run: {PACKAGE_HINT}") from exc
        if workers < 1:
            raise EngineError(f"onnx workers must be at least 1 (got {workers})")
        if lane_threads is not None and lane_threads < 1:
            raise EngineError(f"onnx threads must be at least 1 (got {lane_threads})")
        threads = split_cores(workers) if lane_threads is None else [lane_threads] * workers
        model, self._vocab, self._voices = (
            _directory_files(model_dir) if model_dir else packaged_files()
        )
        if windows is None:
            graph, self._outputs = with_durations(model)

            def load(count: int) -> Any:
                options = session_options(ort, count, spinning)
                return ort.InferenceSession(
                    graph, sess_options=options, providers=["CPUExecutionProvider"]
                )
        else:
            graphs = read_split_graph(model)

            def load(count: int) -> Any:
                return SplitKokoro(graphs, count, spinning)

            self._priors = VoicePriors()
        # a lane with more than one thread, beside another lane, also runs on one (``lanes``)
        narrowed = narrow and workers > 1
        self._lanes: Lanes[Any] = Lanes(
            [
                LaneModels(load(count), load(1) if narrowed and count > 1 else None)
                for count in threads
            ],
            ort.RunOptions,
        )
        super().__init__(g2p, trim, lanes=workers, windows=windows)
        if windows is not None:  # the default voice streams from its first sentence
            default = self._voice(None)
            self._priors.calibrated(default, self._calibration_statistics(0, default))

    @property
    def workers(self) -> int:
        """How many sessions run side by side."""
        return len(self._lanes)

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        """The graph is batch-1: each piece in turn on the lane's own session."""
        return [
            self._infer_piece(lane, piece.phonemes, piece.voice, piece.speed) for piece in pieces
        ]

    def _infer_piece(self, lane: int, phonemes: str, voice: VoiceMix, speed: float) -> Timed:
        tokens = [self._vocab[p] for p in phonemes if p in self._vocab]
        if not tokens:
            return Timed(np.zeros(0, dtype=np.float32))
        feed = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": self._style(voice, tokens).reshape(1, -1),
            "speed": np.array([speed], dtype=np.float32),
        }
        with self._running(lane) as (session, options):
            audio, frames = session.run(self._outputs, feed, run_options=options)
        audio = np.asarray(audio, dtype=np.float32).ravel()
        return Timed(audio, char_bounds(phonemes, self._vocab, frames, audio.size))

    def _start_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Started]:
        """Each piece's text side; a sentence without its voice's prior, or short, is planned
        as one whole window."""
        return [self._start(lane, piece) for piece in pieces]

    def _start(self, lane: int, piece: Piece) -> Started:
        tokens = [self._vocab[p] for p in piece.phonemes if p in self._vocab]
        if not tokens:
            return Started(None, 0, 0, None)
        style = self._style(piece.voice, tokens)
        with self._running(lane, brief=True) as (split, options):
            features = split.text(tokens, style, piece.speed, options)
        frames, lead = features.frames, int(features.durations[0])
        prior = self._priors.prior(
            piece.voice, lambda: self._calibration_statistics(lane, piece.voice)
        )
        samples = frames * SAMPLES_PER_FRAME
        bounds = char_bounds(piece.phonemes, self._vocab, features.durations, samples)
        if prior is None or not worth_windows(frames, lead):
            whole = WindowPlan.whole(frames)
            return Started(_Sentence(features, None), frames, lead, bounds, whole)
        span = speech_span(features.energy)  # the silence around it is not decoded
        return Started(_Sentence(features, prior), frames, lead, bounds, span=span)

    def _calibration_statistics(self, lane: int, voice: VoiceMix) -> list[Stats]:
        """The calibration sentences spoken in ``voice``, each decoded whole: their statistics.
        Each decode's time seeds (or joins) the engine's ``decode_rate``."""
        runs = []
        for phonemes in CALIBRATION:
            tokens = [self._vocab[p] for p in phonemes if p in self._vocab]
            style = self._style(voice, tokens)
            with self._running(lane, brief=True) as (split, options):
                features = split.text(tokens, style, 1.0, options)
            started = time.perf_counter()
            with self._running(lane) as (split, options):
                runs.append(split.whole(features, options)[1])
            self.decode_rate.learn(time.perf_counter() - started, features.frames)
        return runs

    def _window_batch(self, lane: int, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        """Each window against its voice's prior (a whole sentence: against none)."""
        decoded = []
        for job in jobs:
            with self._running(lane) as (split, options):
                decoded.append(
                    split.decode(job.state.features, job.window, job.state.prior, options)[0]
                )
        return decoded

    def _style(self, voice: VoiceMix, tokens: list[int]) -> np.ndarray:
        """The voice's style row for a sentence of ``tokens``."""
        return style_row(self.style_table(voice), len(tokens))

    def _running(self, lane: int, brief: bool = False) -> AbstractContextManager[tuple[Any, Any]]:
        """A run on ``lane``, on its one-thread session where it has one and another stream
        (a listener's reply, or a sentence) decodes beside this one; a ``brief`` run (a text
        side) is not counted by the other lanes' runs (``lanes``)."""
        return self._lanes.running(lane, crowded=self.decode_rate.streams > 1, brief=brief)

    def _interrupt(self, lane: int) -> None:
        """Set onnxruntime's terminate flag: the lane's running ``session.run`` fails within ms."""
        self._lanes.interrupt(lane)


@dataclass(frozen=True, eq=False)
class _Sentence:
    """A started piece: its text side, and the prior its windows pool with (None: whole)."""

    features: Features
    prior: Stats | None
