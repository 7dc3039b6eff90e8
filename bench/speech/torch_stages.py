"""Stage 1 of ``torch_engine_speech``: one sentence through the ONNX graph and through
``BatchedKokoro`` on the same tokens, style row and speed, compared stage by stage (frames per
token, F0, energy, the aligned text features, the decoder's audio).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from tts_server.engines.torch.kokoro_batch import BatchedKokoro

EXPORT_ISTFT_GAIN = 1.5  # the export's iSTFT over torch.istft, measured (correlation 1.0)


@dataclass(frozen=True)
class Synthesis:
    """One model call's result: the waveform and the frames each token got."""

    audio: np.ndarray
    durations: list[int]


@dataclass(frozen=True)
class OnnxStages(Synthesis):
    """The ONNX graph's intermediate tensors too (batch of one)."""

    asr: np.ndarray  # (1, 512, frames): the text encoder's features, aligned
    f0: np.ndarray  # (1, 2 * frames)
    energy: np.ndarray  # (1, 2 * frames)


# Where the export computes them (its own tensor names).
ONNX_STAGES = {
    "asr": "/encoder/MatMul_1_output_0",
    "f0": "/encoder/F0_proj/Conv_output_0",
    "energy": "/encoder/N_proj/Conv_output_0",
}


class OnnxReference:
    """The embedded ONNX graph called on raw token ids, its durations and stages exposed."""

    def __init__(self, threads: int | None = None) -> None:
        import onnx
        import onnxruntime as ort

        from tts_server.engines.onnx.graph import duration_output
        from tts_server.engines.packaged import packaged_files

        path, self.vocab, self.voices = packaged_files()
        model = onnx.load(str(path))
        produced = {name for node in model.graph.node for name in node.output}
        missing = [name for name in ONNX_STAGES.values() if name not in produced]
        if missing:
            raise RuntimeError(f"{path} has none of the tensors {missing}: another export?")
        self._outputs = [model.graph.output[0].name, duration_output(model.graph)]
        self._outputs += list(ONNX_STAGES.values())
        del model.graph.output[1:]
        for name in self._outputs[1:]:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or os.cpu_count() or 1
        self._session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, ids: Sequence[int], style: np.ndarray, speed: float) -> OnnxStages:
        feed = {
            "tokens": np.array([list(ids)], dtype=np.int64),
            "style": np.asarray(style, dtype=np.float32).reshape(1, -1),
            "speed": np.array([speed], dtype=np.float32),
        }
        audio, frames, asr, f0, energy = self._session.run(self._outputs, feed)
        return OnnxStages(
            audio=np.asarray(audio, np.float32).ravel(),
            durations=np.asarray(frames).ravel().tolist(),
            asr=np.asarray(asr, np.float32),
            f0=np.asarray(f0, np.float32).reshape(1, -1),
            energy=np.asarray(energy, np.float32).reshape(1, -1),
        )


def token_ids(phonemes: str, vocab: dict[str, int]) -> list[int]:
    """Kokoro's input: the phonemes' ids between two boundary pads."""
    return [0, *(vocab[p] for p in phonemes if p in vocab), 0]


def style_row(table: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """The voice table's row for this many phonemes (pads excluded), as both engines pick it."""
    return np.asarray(table[min(len(ids) - 2, len(table)) - 1], dtype=np.float32).reshape(-1)


def torch_synthesis(
    batched: BatchedKokoro,
    items: Sequence[tuple[Sequence[int], np.ndarray, float]],
    seed: int = 0,
    frames: Sequence[Sequence[int]] | None = None,
) -> list[Synthesis]:
    """``items`` (ids, style row, speed) in one forward pass, noise seeded per item;
    ``frames`` forces the durations (see ``BatchedKokoro``)."""
    styles = torch.from_numpy(np.stack([style for _, style, _ in items]))
    rngs = [torch.Generator().manual_seed(seed + i) for i in range(len(items))]
    speeds = [speed for _, _, speed in items]
    out = batched([ids for ids, _, _ in items], styles, speeds, rngs, frames)
    return [
        Synthesis(wave.float().cpu().numpy().ravel(), durations)
        for wave, durations in zip(out.audio, out.durations, strict=True)
    ]


def gain_matched_snr(test: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """(gain, SNR in dB) of ``gain * test`` against ``reference`` (least-squares gain)."""
    n = min(test.size, reference.size)
    a, b = test[:n].astype(np.float64), reference[:n].astype(np.float64)
    gain = float(a @ b / (a @ a))
    noise = b - gain * a
    return gain, float(10 * np.log10((b @ b) / (noise @ noise)))


def log_spectral_distance(test: np.ndarray, reference: np.ndarray, n_fft: int = 1024) -> float:
    """RMS difference in dB of the two signals' log power spectra (1024-point frames, hop 256),
    each normalized to its own mean power, over the frames and bins within 60 dB of the peak."""

    def spectrum(x: np.ndarray) -> np.ndarray:
        hop = n_fft // 4
        window = np.hanning(n_fft)
        frames = [x[i : i + n_fft] * window for i in range(0, x.size - n_fft, hop)]
        power = np.abs(np.fft.rfft(np.array(frames), axis=1)) ** 2
        return power / power.mean()

    n = min(test.size, reference.size)
    a, b = spectrum(test[:n].astype(np.float64)), spectrum(reference[:n].astype(np.float64))
    a_db, b_db = 10 * np.log10(a + 1e-12), 10 * np.log10(b + 1e-12)
    keep = b_db > b_db.max() - 60
    return float(np.sqrt(np.mean((a_db[keep] - b_db[keep]) ** 2)))


def relative_error(test: np.ndarray | torch.Tensor, reference: np.ndarray) -> float:
    """``|test - reference| / |reference|`` (L2 over every element)."""
    a = np.asarray(test, dtype=np.float64).ravel()
    b = np.asarray(reference, dtype=np.float64).ravel()
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _durations_before_rounding(
    batched: BatchedKokoro, ids: Sequence[int], styles: torch.Tensor, speed: float
) -> tuple[list[int], np.ndarray]:
    """Torch's frames per token, and the predictor's values before they were rounded."""
    seen: list[torch.Tensor] = []
    hook = batched.model.predictor.duration_proj.register_forward_hook(
        lambda _module, _inputs, output: seen.append(output)
    )
    try:
        (own,) = batched.durations([ids], styles, [speed])
    finally:
        hook.remove()
    values = torch.sigmoid(seen[-1]).sum(dim=-1)[0, : len(ids)] / speed
    return own, values.float().cpu().numpy()


def stage_comparison(
    onnx: OnnxReference,
    batched: BatchedKokoro,
    phonemes: str,
    voice: str,
    speed: float = 1.0,
    *,
    redraw: bool = True,
) -> dict[str, Any]:
    """One sentence through both models on the same ids, style row and speed, stage by stage.

    1. durations: each model's own, token by token;
    2. on the ONNX durations: F0, energy and the aligned text features, relative error;
    3. the decoder on the ONNX model's own F0, energy and features: the audio, gain-matched
       SNR, beside the SNR between two noise draws of torch (kokoro's harmonic source draws
       noise and phases at random; the export's has none);
    4. the whole torch model on the ONNX durations (its own F0: a 0.5 % F0 difference drifts
       the phase, so only spectra compare): log-spectral distance, beside two noise draws'.

    ``redraw=False`` skips the second noise draws (two decoder runs fewer).
    """
    ids = token_ids(phonemes, onnx.vocab)
    style = style_row(onnx.voices[voice], ids)
    styles = torch.from_numpy(style[None])
    reference = onnx(ids, style, speed)
    own, unrounded = _durations_before_rounding(batched, ids, styles, speed)
    ours = batched.acoustics([ids], styles, [speed], frames=[reference.durations])
    theirs = replace(
        ours,
        asr=torch.from_numpy(reference.asr),
        f0=torch.from_numpy(reference.f0),
        energy=torch.from_numpy(reference.energy),
    )
    decoded, whole = _waveform(batched, theirs, 0), _waveform(batched, ours, 0)
    gain, snr = gain_matched_snr(decoded, reference.audio)
    row = {
        **_duration_figures(ids, own, unrounded, reference.durations),
        "f0_relative_error": round(relative_error(ours.f0, reference.f0), 4),
        "energy_relative_error": round(relative_error(ours.energy, reference.energy), 4),
        "asr_relative_error": round(relative_error(ours.asr, reference.asr), 4),
        "decoder_gain": round(gain, 3),
        "decoder_snr_db": round(snr, 2),
        "log_spectral_distance_db": round(log_spectral_distance(whole, reference.audio), 2),
    }
    if redraw:
        redecoded, rewhole = _waveform(batched, theirs, 1), _waveform(batched, ours, 1)
        row["decoder_snr_db_two_torch_draws"] = round(gain_matched_snr(decoded, redecoded)[1], 2)
        row["log_spectral_distance_db_two_torch_draws"] = round(
            log_spectral_distance(whole, rewhole), 2
        )
    return row


def _waveform(batched: BatchedKokoro, acoustics: Any, seed: int) -> np.ndarray:
    """The decoder's audio for ``acoustics``, its noise drawn from ``seed``."""
    (wave,) = batched.decode(acoustics, [torch.Generator().manual_seed(seed)])
    return wave.float().cpu().numpy().ravel()


def _duration_figures(
    ids: Sequence[int], own: Sequence[int], unrounded: np.ndarray, onnx_durations: Sequence[int]
) -> dict[str, Any]:
    """Frames per token, torch's own against the ONNX model's: the totals, the tokens one frame
    off, the largest difference, and how near a rounding edge the tokens one frame off were."""
    steps = np.abs(np.subtract(own, onnx_durations))
    return {
        "tokens": len(ids),
        "frames_onnx": int(sum(onnx_durations)),
        "frames_torch": int(sum(own)),
        "tokens_off_by_one": int((steps == 1).sum()),
        "max_token_frame_difference": int(steps.max()),
        # how far from a rounding edge (x.5) the tokens that rounded the other way were
        "off_tokens_distance_from_half": (
            round(float(np.abs(unrounded % 1 - 0.5)[steps == 1].max()), 4) if steps.any() else None
        ),
    }
