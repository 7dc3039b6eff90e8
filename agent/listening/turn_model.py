"""Is the user done? A turn-end model scores the utterance so far at a short pause.

``TurnModel`` is the interface (``load``, ``score``), like ``Recognizer``; ``SmartTurn`` is the
one that ships: Smart Turn v3.2 (Whisper-tiny's encoder and a linear head, int8 ONNX, 8 MB,
BSD-2-Clause), the file inside the ``pipecat-ai`` wheel, which is installed with
``--no-deps`` and never imported: only its file is read. It takes the last 8 s of 16 kHz mono
audio, zero-padded at the front, normalized to zero mean and unit variance, as Whisper's
80-band log-mel (faster-whisper's ``FeatureExtractor``), and says how likely the turn is
complete. ``TurnJudge`` runs a model for every socket of a process on one thread of its own
(one ONNX Runtime thread), off the event loop, so that a decision never blocks audio and two
sockets never take both cores from synthesis. Costs: docs/listening.md.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from agent.browser_leg import MIC_SAMPLE_RATE
from tts_protocol import pcm16_to_float

if TYPE_CHECKING:
    import onnxruntime
    from faster_whisper.feature_extractor import FeatureExtractor

WINDOW_S = 8  # Smart Turn reads the last 8 s of the utterance
WINDOW_SAMPLES = WINDOW_S * MIC_SAMPLE_RATE
SMART_TURN_WHEEL = "pipecat-ai"
SMART_TURN_FILE = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
NORMALIZE_EPS = 1e-7  # Whisper's feature extractor: (x - mean) / sqrt(var + eps)


class TurnModelError(Exception):
    """The turn model did not score an utterance; the silence rule decides instead."""

    code = "turn_model_failed"


class TurnModelUnavailable(TurnModelError):
    """The turn model cannot run at all (its file is missing or does not load)."""

    code = "turn_model_unavailable"


@dataclass(frozen=True, slots=True)
class TurnScore:
    """The model's ``score`` (how likely the turn is complete) and what it cost (``cost_ms``,
    wall time, waiting for the model's thread included)."""

    score: float
    cost_ms: float


class TurnModel(Protocol):
    """Scores 16 kHz s16le mono utterances; ``score`` blocks and may run on any thread."""

    def load(self) -> None:
        """Be ready to score (load a model once); raises ``TurnModelUnavailable``."""
        ...

    def score(self, pcm: bytes) -> float:
        """How likely, in [0, 1], the turn is complete after ``pcm`` (its last 8 s count)."""
        ...


def smart_turn_path() -> Path:
    """Smart Turn v3.2 where the ``pipecat-ai`` wheel put it; raises ``TurnModelUnavailable``."""
    try:
        path = Path(
            str(importlib.metadata.distribution(SMART_TURN_WHEEL).locate_file(SMART_TURN_FILE))
        )
    except importlib.metadata.PackageNotFoundError as exc:
        raise TurnModelUnavailable(
            f"no turn model: {SMART_TURN_WHEEL} is not installed (scripts/bootstrap.sh installs"
            " it with --no-deps), or set VOICE_AGENT_ENDPOINTING=silence"
        ) from exc
    if not path.is_file():
        raise TurnModelUnavailable(f"no turn model: {path} is missing")
    return path


def model_input(pcm: bytes) -> np.ndarray:
    """The model's waveform: the last 8 s as floats, zero-padded at the front, normalized."""
    samples = pcm16_to_float(pcm)[-WINDOW_SAMPLES:]
    samples = np.pad(samples, (WINDOW_SAMPLES - samples.size, 0))
    return (samples - samples.mean()) / np.sqrt(samples.var() + NORMALIZE_EPS)


class SmartTurn:
    """Smart Turn v3.2 on ONNX Runtime: one session, one thread."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._session: onnxruntime.InferenceSession | None = None
        self._features: FeatureExtractor | None = None

    def load(self) -> None:
        if self._session is not None:
            return
        import onnxruntime
        from faster_whisper.feature_extractor import FeatureExtractor

        path = self._path or smart_turn_path()
        if not path.is_file():
            raise TurnModelUnavailable(f"no turn model: {path} is missing")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        try:
            self._session = onnxruntime.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # ONNX Runtime's own error types (a corrupt or foreign file)
            raise TurnModelUnavailable(f"the turn model {path} does not load: {exc}") from exc
        self._features = FeatureExtractor()  # Whisper's 80 mel bands, 10 ms hops

    def score(self, pcm: bytes) -> float:
        if self._session is None or self._features is None:
            raise TurnModelUnavailable("the turn model is not loaded")
        if not pcm or len(pcm) % 2:
            raise TurnModelError(f"a turn is whole s16le samples, not {len(pcm)} bytes")
        features = self._features(model_input(pcm), padding=0)  # (80, 800): 8 s
        [probability] = self._session.run(None, {"input_features": features[np.newaxis]})
        return float(np.asarray(probability).item())


class TurnJudge:
    """A turn model and the one thread it runs on, for every socket of a process."""

    def __init__(self, model: TurnModel) -> None:
        self.model = model
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="turn-model")

    async def load(self) -> None:
        """Load the model off the event loop; raises ``TurnModelUnavailable``."""
        await asyncio.get_running_loop().run_in_executor(self._thread, self.model.load)

    async def judge(self, pcm: bytes) -> TurnScore:
        """The model's score of the utterance so far; raises ``TurnModelError``."""
        started = time.perf_counter()
        try:
            score = await asyncio.get_running_loop().run_in_executor(
                self._thread, self.model.score, pcm
            )
        except TurnModelError:
            raise
        except Exception as exc:  # ONNX Runtime's own error types
            raise TurnModelError(f"the turn model failed: {exc}") from exc
        cost_ms = round((time.perf_counter() - started) * 1000, 1)
        return TurnScore(round(score, 4), cost_ms)


@cache
def shared_smart_turn() -> TurnJudge:
    """The process's Smart Turn (one session, one thread), loaded on the first ``listen``."""
    return TurnJudge(SmartTurn())
