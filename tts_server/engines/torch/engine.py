"""Kokoro-82M on PyTorch (CUDA when available): the engine for GPU hosts such as SageMaker.

The model directory (SageMaker's ``/opt/ml/model``) holds Kokoro's ``config.json``, exactly one
``*.pth`` checkpoint (e.g. ``kokoro-v1_0.pth``) and ``voices/<name>.pt`` style tables, each a
float tensor of shape ``(510, 1, 256)``. Nothing is downloaded: the Hugging Face hub is put in
offline mode before kokoro is imported, and the checkpoint is loaded weights-only and checked
key by key, since ``KModel`` itself quietly keeps random weights for keys that do not match.

Inference runs through ``BatchedKokoro`` (kokoro's forward, batched over pieces of different
lengths), so the scheduler can put up to ``max_batch`` pieces from different connections into
one forward pass; with ``max_batch=1`` every piece runs alone. Given a ``WindowPlan``, a piece
runs its text side as one job and its decoder window by window (``kokoro_stream``), windows
of different connections batched together.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tts_server.engines.base import G2P, Engine, EngineError, Started, Trim, WindowJob
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed, char_bounds
from tts_server.engines.torch.kmodel import PARTS, REPO_ID, import_kmodel
from tts_server.engines.windows import SAMPLES_PER_FRAME, WindowPlan
from tts_server.settings import DEFAULT_BATCH_WAIT_MS, SAGEMAKER_MODEL_DIR

if TYPE_CHECKING:
    import torch
    from kokoro import KModel

    from tts_server.engines.torch.kokoro_stream import Sentence

PACKAGE_HINT = "pip install torch kokoro (or: pip install -e '.[tts,torch]')"
DEFAULT_VOICE = "af_heart"
CUDA_MAX_BATCH = 32  # the H200's forward pass reaches 891 audio-s/s at B=32
VOICE_SHAPE = (510, 1, 256)
CONFIG_KEYS = (
    "vocab",
    "n_token",
    "plbert",
    "hidden_dim",
    "style_dim",
    "n_layer",
    "max_dur",
    "dropout",
    "text_encoder_kernel_size",
    "n_mels",
    "istftnet",
)
LAYOUT = (
    "config.json (Kokoro's config), exactly one *.pth checkpoint (e.g. kokoro-v1_0.pth) and "
    "voices/<name>.pt voice tables (float tensors of shape (510, 1, 256))"
)
_MAX_DETAIL = 800  # torch lists every mismatched key; keep error messages readable
# What building kokoro's KModel warns about, in code this project cannot change: its weight norm
# (torch's deprecated form; the engine folds it into the weights at load anyway) and its
# one-layer LSTMs given a dropout (which only ever applies between layers). Only these two.
KOKORO_BUILD_WARNINGS: tuple[tuple[str, type[Warning]], ...] = (
    (r"`torch\.nn\.utils\.weight_norm` is deprecated", FutureWarning),
    (r"dropout option adds dropout after all but last recurrent layer", UserWarning),
)


def _import_kmodel() -> type[KModel]:
    try:
        return import_kmodel()  # imports torch
    except ImportError as exc:
        raise EngineError(f"torch/kokoro are not importable ({exc}); run: {PACKAGE_HINT}") from exc


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + " …"


def _load_failure(exc: Exception) -> str:
    """The useful line of a ``torch.load`` failure (weights-only refusals run to a page)."""
    for line in str(exc).splitlines():
        if line.strip().startswith("WeightsUnpickler error:"):
            return line.strip() + " (only tensors and plain containers are accepted)"
    return _clip(str(exc))


def _pick_device(device: str | None) -> torch.device:
    import torch

    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        chosen = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise EngineError(f"invalid torch device {device!r}: {exc}") from exc
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise EngineError(
            f"device {device!r} was requested but CUDA is not available "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'})"
        )
    return chosen


def _find_files(model_dir: Path) -> tuple[Path, Path, list[Path]]:
    """The config, the one checkpoint and the voice tables in ``model_dir``."""
    layout = f"{model_dir} must hold {LAYOUT}"
    if not model_dir.is_dir():
        raise EngineError(f"model directory {model_dir} does not exist; it must hold {LAYOUT}")
    config = model_dir / "config.json"
    if not config.is_file():
        raise EngineError(f"{config} is missing; {layout}")
    weights = sorted(model_dir.glob("*.pth"))
    if len(weights) != 1:
        found = ", ".join(path.name for path in weights) or "none"
        raise EngineError(
            f"{model_dir} needs exactly one *.pth checkpoint (found: {found}); {layout}"
        )
    voices_dir = model_dir / "voices"
    if not voices_dir.is_dir():
        raise EngineError(f"{voices_dir} is missing; {layout}")
    voices = sorted(voices_dir.glob("*.pt"))
    if not voices:
        raise EngineError(f"{voices_dir} holds no *.pt voice tables; {layout}")
    return config, weights[0], voices


def _check_config(path: Path) -> None:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise EngineError(f"{path} is not readable JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise EngineError(f"{path} must hold a JSON object (Kokoro's config)")
    missing = [key for key in CONFIG_KEYS if key not in config]
    if missing:
        raise EngineError(f"{path} lacks Kokoro config keys: {', '.join(missing)}")
    if not isinstance(config["vocab"], dict) or not config["vocab"]:
        raise EngineError(f"{path}: 'vocab' must map phonemes to token ids")


def _load_voice(path: Path) -> torch.Tensor:
    import torch

    try:
        pack = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling fails with many exception types
        raise EngineError(f"cannot load voice table {path}: {_load_failure(exc)}") from exc
    if not isinstance(pack, torch.Tensor) or not pack.is_floating_point():
        raise EngineError(f"{path} must hold a float tensor of shape {VOICE_SHAPE}")
    if tuple(pack.shape) != VOICE_SHAPE:
        raise EngineError(f"{path} has shape {tuple(pack.shape)}; a voice table is {VOICE_SHAPE}")
    return pack.float()


def _load_checkpoint(path: Path) -> dict[str, dict[str, torch.Tensor]]:
    """The checkpoint's per-part state dicts, weights-only, with any ``module.`` prefix removed."""
    import torch

    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling fails with many exception types
        raise EngineError(
            f"cannot load {path} as a weights-only checkpoint: {_load_failure(exc)}"
        ) from exc
    is_parts = isinstance(checkpoint, dict) and all(
        isinstance(v, dict) for v in checkpoint.values()
    )
    if not is_parts:
        raise EngineError(f"{path} must hold a dict of state dicts keyed {', '.join(PARTS)}")
    missing = [part for part in PARTS if part not in checkpoint]
    extra = sorted(str(key) for key in checkpoint if key not in PARTS)
    if missing or extra:
        raise EngineError(
            f"{path} must hold exactly the parts {', '.join(PARTS)} "
            f"(missing: {', '.join(missing) or 'none'}; unexpected: {', '.join(extra) or 'none'})"
        )
    return {
        part: {key.removeprefix("module."): value for key, value in checkpoint[part].items()}
        for part in PARTS
    }


def _build_model(kmodel: type[KModel], config: Path, weights: Path) -> KModel:
    """``KModel`` from local files, then every part reloaded strictly from the checkpoint."""
    try:
        with warnings.catch_warnings():
            for message, category in KOKORO_BUILD_WARNINGS:
                warnings.filterwarnings("ignore", message, category)
            model = kmodel(repo_id=REPO_ID, config=str(config), model=str(weights))
    except Exception as exc:  # KModel asserts, raises KeyError/RuntimeError on bad files
        _load_checkpoint(weights)  # a precise message when the checkpoint's layout is off
        raise EngineError(
            f"cannot build Kokoro from {config} and {weights}: {_clip(str(exc))}"
        ) from exc
    checkpoint = _load_checkpoint(weights)
    for part, state in checkpoint.items():
        try:
            getattr(model, part).load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise EngineError(
                f"{weights}: part {part!r} does not match the model {config} describes: "
                f"{_clip(str(exc))}"
            ) from exc
    return model


class TorchEngine(Engine):
    """Kokoro-82M in PyTorch from a local model directory, on CUDA when available.

    ``max_batch`` defaults to ``CUDA_MAX_BATCH`` on CUDA and 1 (unbatched) elsewhere.
    ``remove_weight_norm`` and ``fuse_styles`` are the load-time speed-ups of ``BatchedKokoro``
    (off: kokoro's eager computation, same results within float rounding).
    """

    name = "torch"
    preferred_voice = DEFAULT_VOICE
    batchable = True
    streams = True

    def __init__(
        self,
        g2p: G2P,
        model_dir: Path = SAGEMAKER_MODEL_DIR,
        device: str | None = None,
        trim: Trim | None = None,
        *,
        max_batch: int | None = None,
        batch_wait_ms: float = DEFAULT_BATCH_WAIT_MS,
        remove_weight_norm: bool = True,
        fuse_styles: bool = True,
        windows: WindowPlan | None = None,
    ) -> None:
        from tts_server.engines.torch.kokoro_batch import BatchedKokoro

        kmodel = _import_kmodel()
        self.device = _pick_device(device)
        model_dir = Path(model_dir)
        config, weights, voice_files = _find_files(model_dir)
        _check_config(config)
        voices = {path.stem: _load_voice(path) for path in voice_files}
        model = _build_model(kmodel, config, weights)
        try:
            self._model = model.eval().to(self.device)
            self._voices = {name: pack.to(self.device) for name, pack in voices.items()}
        except RuntimeError as exc:
            raise EngineError(f"cannot move Kokoro to {self.device}: {exc}") from exc
        self._vocab: dict[str, int] = self._model.vocab
        self._batched = BatchedKokoro(
            self._model, remove_weight_norm=remove_weight_norm, fuse_styles=fuse_styles
        )
        if max_batch is None:
            max_batch = CUDA_MAX_BATCH if self.device.type == "cuda" else 1
        super().__init__(
            g2p, trim, max_batch=max_batch, batch_wait_ms=batch_wait_ms, windows=windows
        )

    def _inputs(self, pieces: Sequence[Piece]) -> tuple[list[int], list[list[int]], torch.Tensor]:
        """The pieces that have known phonemes, their token ids and their style rows."""
        import torch

        token_ids = [
            [0, *(self._vocab[p] for p in x.phonemes if p in self._vocab), 0] for x in pieces
        ]
        spoken = [i for i, ids in enumerate(token_ids) if len(ids) > 2]
        rows = []
        for i in spoken:
            pack = self.style_table(pieces[i].voice)
            # Like KPipeline: the style row is picked by the phoneme string's length.
            rows.append(pack[min(len(pieces[i].phonemes), len(pack)) - 1].reshape(-1))
        styles = torch.stack(rows) if rows else torch.zeros(0)
        return spoken, [token_ids[i] for i in spoken], styles

    def _infer_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Timed]:
        """One forward pass for every piece that has known phonemes; silence for the others.

        Each piece's audio comes with its phonemes' bounds, from the frames the forward pass
        gave each token (the durations it aligned the decoder's input with).
        """
        import torch

        audio = [Timed(np.zeros(0, dtype=np.float32)) for _ in pieces]
        spoken, token_ids, styles = self._inputs(pieces)
        if not spoken:
            return audio
        output = self._batched(token_ids, styles, [float(pieces[i].speed) for i in spoken])
        for i, waveform, frames in zip(spoken, output.audio, output.durations, strict=True):
            samples = waveform.to("cpu", torch.float32).numpy().ravel()
            bounds = char_bounds(pieces[i].phonemes, self._vocab, frames, samples.size)
            audio[i] = Timed(samples, bounds)
        return audio

    def _start_batch(self, lane: int, pieces: Sequence[Piece]) -> list[Started]:
        """The text side of every piece that has known phonemes (nothing to decode for others)."""
        from tts_server.engines.torch.kokoro_stream import sentences

        started = [Started(None, 0, 0, None) for _ in pieces]
        spoken, token_ids, styles = self._inputs(pieces)
        if not spoken:
            return started
        acoustics = self._batched.acoustics(
            token_ids, styles, [float(pieces[i].speed) for i in spoken]
        )
        items = zip(spoken, sentences(self._batched, acoustics), acoustics.durations, strict=True)
        for i, sentence, frames in items:
            samples = sentence.frames * SAMPLES_PER_FRAME
            bounds = char_bounds(pieces[i].phonemes, self._vocab, frames, samples)
            started[i] = Started(_Stream(sentence), sentence.frames, sentence.lead, bounds)
        return started

    def _window_batch(self, lane: int, jobs: Sequence[WindowJob]) -> list[np.ndarray]:
        """Windows of any started pieces in one decoder call, each crossfaded into the one
        before it (the tail that one decoded past its end)."""
        import torch

        from tts_server.engines.torch.kokoro_stream import crossfade, decode_windows

        decoded = decode_windows(self._batched, [(job.state.sentence, job.window) for job in jobs])
        out = []
        for job, window in zip(jobs, decoded, strict=True):
            tail = job.state.tail
            audio = window.audio if tail is None else crossfade(tail, window.audio)
            job.state.tail = window.tail
            out.append(audio.to("cpu", torch.float32).numpy())
        return out


@dataclass(eq=False)
class _Stream:
    """A started piece: its text side, and what its last window decoded past its end."""

    sentence: Sentence
    tail: torch.Tensor | None = None
