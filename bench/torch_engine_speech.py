"""Does the PyTorch engine speak? Real Kokoro weights (imported from the embedded ONNX model)
against the ONNX engine, stage by stage, by ear (offline Whisper) and by the clock.

    python -m bench.torch_engine_speech            # writes docs/benchmarks/torch_engine_speech.*

1. Same tokens, style row and speed into the ONNX graph and into ``BatchedKokoro``: frames per
   token (equal, or one frame apart where a token's duration lies near .5: the ONNX graph
   quantizes its activations to int8 on the fly, this model runs them in float32), and the
   audio: SNR after a least-squares gain (the export's iSTFT is 1.5 times louder than
   ``torch.istft``; kokoro draws its harmonic source's noise and phases at random, the export
   does not) and a log-spectral distance in dB.
2. Whisper's WER on a paragraph, each engine.
3. A mixed-length batch of eight sentences (three voices, two speeds) in one forward pass:
   each item's WER beside the same sentence synthesized alone.
4. Word timings of both engines; speed and a blend on both.
5. CPU real-time factor of both engines, same run; the calibrated random checkpoint's cost
   per call beside the real weights'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tts_protocol.validation import parse_voice
from tts_server.engines.base import Engine
from tts_server.engines.g2p import Phonemized, phonemize
from tts_server.engines.scheduler import Piece
from tts_server.engines.timings import Timed
from tts_server.engines.torch.engine import TorchEngine
from tts_server.engines.torch.kokoro_batch import BatchedKokoro
from tts_server.engines.torch.onnx_import.model_dir import embedded_model_dir

OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
SAMPLES_PER_FRAME = 600
EXPORT_ISTFT_GAIN = 1.5  # the export's iSTFT over torch.istft, measured (correlation 1.0)
# About a hundred words, so that one word is a WER of 0.01, under the 0.02 goal (three
# sentences, 38 words, made one word 0.026). No numbers: Whisper writes them as digits.
PARAGRAPH = (
    "The library opens early in the morning and closes late in the evening. "
    "Children can borrow a few books at a time, and adults may take more. "
    "Please return every book before the date stamped inside the cover. "
    "On weekends the reading room fills with students who come to study in the quiet. "
    "The staff will gladly help you find a novel, a recipe book or a travel guide. "
    "If a book you want is out, you can ask to have it saved for you when it comes back. "
    "Newspapers and magazines stay in the hall, where anyone may read them by the window."
)
BATCH = (  # (text, voice, speed): mixed lengths, three voices, two speeds
    ("Good morning.", "jf_alpha", 1.0),
    ("The train leaves from the old station after lunch.", "jm_kumo", 1.0),
    ("Please close the window.", "jf_nezumi", 1.2),
    ("My brother bought a new bicycle last weekend, and he rides it to work.", "jf_alpha", 1.2),
    ("Thank you very much.", "jm_kumo", 1.2),
    ("The weather will be sunny with a light wind from the west.", "jf_nezumi", 1.0),
    ("Where is the nearest station?", "jf_alpha", 1.0),
    ("We planted tomatoes, beans and carrots in the garden this spring.", "jm_kumo", 1.2),
)


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

        from tts_server.engines.onnx_engine import duration_output
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
    steps = np.abs(np.subtract(own, reference.durations))
    ours = batched.acoustics([ids], styles, [speed], frames=[reference.durations])
    theirs = replace(
        ours,
        asr=torch.from_numpy(reference.asr),
        f0=torch.from_numpy(reference.f0),
        energy=torch.from_numpy(reference.energy),
    )

    def waveform(acoustics: Any, seed: int) -> np.ndarray:
        (wave,) = batched.decode(acoustics, [torch.Generator().manual_seed(seed)])
        return wave.float().cpu().numpy().ravel()

    decoded, whole = waveform(theirs, 0), waveform(ours, 0)
    gain, snr = gain_matched_snr(decoded, reference.audio)
    row = {
        "tokens": len(ids),
        "frames_onnx": int(sum(reference.durations)),
        "frames_torch": int(sum(own)),
        "tokens_off_by_one": int((steps == 1).sum()),
        "max_token_frame_difference": int(steps.max()),
        # how far from a rounding edge (x.5) the tokens that rounded the other way were
        "off_tokens_distance_from_half": (
            round(float(np.abs(unrounded % 1 - 0.5)[steps == 1].max()), 4) if steps.any() else None
        ),
        "f0_relative_error": round(relative_error(ours.f0, reference.f0), 4),
        "energy_relative_error": round(relative_error(ours.energy, reference.energy), 4),
        "asr_relative_error": round(relative_error(ours.asr, reference.asr), 4),
        "decoder_gain": round(gain, 3),
        "decoder_snr_db": round(snr, 2),
        "log_spectral_distance_db": round(log_spectral_distance(whole, reference.audio), 2),
    }
    if redraw:
        redecoded, rewhole = waveform(theirs, 1), waveform(ours, 1)
        row["decoder_snr_db_two_torch_draws"] = round(gain_matched_snr(decoded, redecoded)[1], 2)
        row["log_spectral_distance_db_two_torch_draws"] = round(
            log_spectral_distance(whole, rewhole), 2
        )
    return row


def wer_of(audio: np.ndarray, reference_text: str) -> tuple[float, str]:
    """Whisper's WER of ``audio`` against ``reference_text``, and what it heard."""
    from bench.intelligibility import transcribe, word_error_rate

    heard = transcribe(audio, 24_000)
    return word_error_rate(reference_text, heard), heard


async def spoken(engine: Engine, text: str, voice: str, speed: float = 1.0) -> dict[str, Any]:
    """The engine's whole synthesis of ``text``: the audio and the seconds it took."""
    started = time.perf_counter()
    prepared = engine.prepare(text, parse_voice(voice), speed)
    chunks = [chunk.audio async for chunk in engine.synthesize(prepared)]
    audio = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    return {"audio": audio, "seconds": time.perf_counter() - started}


def _word_edges(phonemized: Phonemized, timed: Timed) -> list[int]:
    """Each word's first and end sample in the piece's (untrimmed) audio."""
    bounds = timed.bounds if timed.bounds is not None else np.zeros(0, np.int64)
    return [int(bounds[edge]) for word in phonemized.words for edge in (word.start, word.end)]


def batch_and_timings(
    torch_engine: TorchEngine, onnx_engine: Engine, g2p: Any
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The eight sentences alone on both engines and in one torch batch: WER, word edges."""
    phonemized = [phonemize(g2p, text) for text, _, _ in BATCH]
    pieces = [
        Piece(p.phonemes, parse_voice(voice), speed)
        for p, (_, voice, speed) in zip(phonemized, BATCH, strict=True)
    ]
    started = time.perf_counter()
    alone = [torch_engine._infer_batch(0, [piece])[0] for piece in pieces]
    alone_s = time.perf_counter() - started
    started = time.perf_counter()
    batched = torch_engine._infer_batch(0, pieces)
    batch_s = time.perf_counter() - started
    rows = []
    for (text, voice, speed), words, single, together, piece in zip(
        BATCH, phonemized, alone, batched, pieces, strict=True
    ):
        (theirs,) = onnx_engine._infer_batch(0, [piece])
        edges = np.abs(np.subtract(_word_edges(words, single), _word_edges(words, theirs)))
        wer_alone, _ = wer_of(single.audio, text)
        wer_batched, heard_batched = wer_of(together.audio, text)
        wer_onnx, _ = wer_of(theirs.audio, text)
        rows.append(
            {
                "text": text,
                "voice": voice,
                "speed": speed,
                "wer_onnx": round(wer_onnx, 3),
                "wer_torch_alone": round(wer_alone, 3),
                "wer_torch_in_batch": round(wer_batched, 3),
                "heard_in_batch": heard_batched,
                "same_durations_in_batch": bool(
                    single.bounds is not None
                    and together.bounds is not None
                    and np.array_equal(single.bounds, together.bounds)
                ),
                "max_word_edge_difference_frames": round(float(edges.max()) / SAMPLES_PER_FRAME, 2),
            }
        )
    return rows, {"alone_s": round(alone_s, 2), "batch_of_8_s": round(batch_s, 2)}


def speed_and_blend(
    torch_engine: TorchEngine, onnx_engine: Engine, reference: OnnxReference, phonemes: str
) -> list[dict[str, Any]]:
    """Total frames at two speeds, one voice and one blend, on both models."""
    ids = token_ids(phonemes, reference.vocab)
    rows = []
    for voice in ("jf_alpha", "jf_alpha(0.7)+jm_kumo(0.3)"):
        style = style_row(onnx_engine.style_table(parse_voice(voice)), ids)
        for speed in (1.0, 1.5):
            theirs = reference(ids, style, speed).durations
            (ours,) = torch_engine._batched.durations([ids], torch.from_numpy(style[None]), [speed])
            rows.append(
                {
                    "voice": voice,
                    "speed": speed,
                    "frames_onnx": int(sum(theirs)),
                    "frames_torch": int(sum(ours)),
                    "max_token_frame_difference": int(np.abs(np.subtract(ours, theirs)).max()),
                }
            )
    return rows


async def real_time_factors(engines: dict[str, Engine], text: str, runs: int) -> dict[str, Any]:
    """Each engine's synthesis of ``text`` (the paragraph), interleaved ``runs`` times: median
    seconds per audio second, and Whisper's WER of every run (torch draws new noise each
    time: its median is the figure) with what it heard the last time."""
    seconds: dict[str, list[float]] = {name: [] for name in engines}
    wers: dict[str, list[float]] = {name: [] for name in engines}
    result: dict[str, Any] = {}
    for _ in range(runs):
        for name, engine in engines.items():
            said = await spoken(engine, text, "jf_alpha")
            seconds[name].append(said["seconds"] / (said["audio"].size / 24_000))
            wer, heard = wer_of(said["audio"], text)
            wers[name].append(round(wer, 3))
            result[name] = {"heard": heard}
    for name in engines:
        result[name]["rtf"] = round(statistics.median(seconds[name]), 3)
        result[name]["wer"] = round(statistics.median(wers[name]), 3)
        result[name]["wers"] = wers[name]
    return result


def calibrated_cost(
    real: BatchedKokoro, table: dict[str, str], runs: int, cache: Path | None
) -> dict[str, Any]:
    """The calibrated random checkpoint, built on the real weights' targets, beside the real
    weights: one forward pass per sentence, median seconds, same sentences and style rows."""
    from bench.calibrated_checkpoint import CONFIG, Calibration, build, real_weight_targets

    frames_per_token, rms = real_weight_targets(table, cache)
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as folder:
        report = build(
            Path(folder), config=config, table=table, frames_per_token=frames_per_token, rms=rms
        )
        calibrated = TorchEngine(lambda text: text, Path(folder), device="cpu")
    voice = torch.load(embedded_model_dir() / "voices" / "jf_alpha.pt", weights_only=True)
    models = {"real": real, "calibrated": calibrated._batched}
    first = parse_voice(calibrated.voices[0])
    tables = {"real": voice, "calibrated": calibrated.style_table(first).cpu()}
    timings: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(runs):
        for name, batched in models.items():
            check = Calibration(batched.model, table, tables[name])
            for ids, style in zip(check.token_ids, check.styles, strict=True):
                started = time.perf_counter()
                batched([ids], style[None], [1.0])
                timings[name].append(time.perf_counter() - started)
    calibrated.close()
    real_s, calibrated_s = (statistics.median(timings[name]) for name in models)
    return {
        "targets_from_real_weights": {
            "frames_per_token": round(frames_per_token, 3),
            "rms": round(rms, 4),
        },
        "calibration": report,
        "median_call_s": {"real": round(real_s, 3), "calibrated": round(calibrated_s, 3)},
        "calibrated_over_real": round(calibrated_s / real_s, 3),
    }


PL_BERT_LAYER = "/encoder/bert/encoder/albert_layer_groups.0/albert_layers.0/"


def fake_int8(x: torch.Tensor) -> torch.Tensor:
    """``x`` through onnxruntime's DynamicQuantizeLinear and back: per-tensor uint8, the range
    widened to hold 0, round half to even."""
    low, high = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    if high == low:
        return x
    scale = (high - low) / 255.0
    zero_point = float(np.clip(np.round(-low / scale), 0, 255))
    return (torch.clamp(torch.round(x / scale) + zero_point, 0, 255) - zero_point) * scale


def activation_rounding(batched: BatchedKokoro, ids: Sequence[int]) -> dict[str, list[float]]:
    """Why durations flip: PL-BERT's twelve layer outputs against the export's, relative L2
    error, in float32 and with the export's int8 activations emulated (``fake_int8`` before
    every linear layer, as DynamicQuantizeLinear before every MatMulInteger)."""
    import onnx
    import onnxruntime as ort

    from tts_server.engines.packaged import packaged_files

    names = [
        f"{PL_BERT_LAYER}full_layer_layer_norm{f'_{k}' if k else ''}/LayerNormalization_output_0"
        for k in range(12)
    ]
    model = onnx.load(str(packaged_files()[0]))
    del model.graph.output[:]
    model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    style = np.zeros((1, 256), dtype=np.float32)  # PL-BERT reads neither style nor speed
    feed = {"tokens": np.array([list(ids)]), "style": style, "speed": np.ones(1, np.float32)}
    export = session.run(None, feed)
    bert = batched.model.bert
    layers: list[torch.Tensor] = []
    layer = bert.encoder.albert_layer_groups[0].albert_layers[0].full_layer_layer_norm
    hook = layer.register_forward_hook(lambda _module, _inputs, output: layers.append(output))
    linears = [m for m in bert.modules() if isinstance(m, torch.nn.Linear)]
    errors: dict[str, list[float]] = {}
    try:
        for mode in ("float32", "emulated_int8"):
            layers.clear()
            if mode == "emulated_int8":
                for linear in linears:
                    linear.forward = lambda x, lin=linear: torch.nn.functional.linear(
                        fake_int8(x), lin.weight, lin.bias
                    )
            with torch.inference_mode():
                bert(torch.tensor([list(ids)]), attention_mask=torch.ones(1, len(ids), dtype=int))
            errors[mode] = [
                round(relative_error(ours, theirs), 4)
                for ours, theirs in zip(layers, export, strict=True)
            ]
    finally:
        hook.remove()
        for linear in linears:
            vars(linear).pop("forward", None)
    return errors


def weight_rounding(model_path: Path) -> dict[str, Any]:
    """What int8 did to the weights: each quantized tensor's signal to rounding noise (the
    rounding error of a step ``scale`` is uniform: RMS ``scale / sqrt(12)``), and the output
    channels rounded to all zeros."""
    import onnx

    from tts_server.engines.torch.onnx_import.graph_weights import Graph, dequantize

    graph = Graph(onnx.load(str(model_path)))
    ratios, zeroed, channels, signal, noise = [], 0, 0, 0.0, 0.0
    seen: set[str] = set()
    for node in graph.nodes:
        if node.op_type in ("ConvInteger", "MatMulInteger"):
            pairs = [(node.input[1], node.input[3], node.input[1].removesuffix("_quantized"))]
        elif node.op_type == "DynamicQuantizeLSTM":
            pairs = [(node.input[1], node.input[9], ""), (node.input[2], node.input[11], "")]
        else:
            continue
        for index, (weight, zero_point, base) in enumerate(pairs):
            if weight in seen or not graph.is_initializer(weight):
                continue
            seen.add(weight)
            scale_name = base + "_scale" if base else node.input[8 + 2 * index]
            scale, q = graph.array(scale_name), graph.array(weight)
            axis = 1 if node.op_type == "MatMulInteger" else 0
            value = dequantize(q, graph.array(zero_point), scale, axis)
            step_noise = float(
                np.mean(np.broadcast_to(scale.astype(np.float64) ** 2 / 12, scale.shape))
            )
            power = float(np.mean(value.astype(np.float64) ** 2))
            ratios.append(10 * np.log10(power / step_noise))
            signal += power * value.size
            noise += step_noise * value.size
            rows = np.moveaxis(value, axis, 0).reshape(value.shape[axis], -1)
            if node.op_type == "ConvInteger":
                zeroed += int((np.abs(rows).max(axis=1) == 0).sum())
                channels += rows.shape[0]
    return {
        "quantized_tensors": len(ratios),
        "snr_db_median": round(float(np.median(ratios)), 1),
        "snr_db_worst": round(float(np.min(ratios)), 1),
        "snr_db_all_weights": round(float(10 * np.log10(signal / noise)), 1),
        "conv_channels_rounded_to_zero": zeroed,
        "conv_channels": channels,
    }


def measure(runs: int, cache: Path | None = None) -> dict[str, Any]:
    """Everything in the module docstring, on this machine's CPU."""
    from bench.calibrated_checkpoint import PHONEME_TABLE
    from tts_server.engines.g2p import EnglishG2P
    from tts_server.engines.onnx_engine import OnnxEngine

    g2p = EnglishG2P()
    started = time.perf_counter()
    model_dir = embedded_model_dir(cache)
    import_s = time.perf_counter() - started
    torch_engine = TorchEngine(g2p, model_dir, device="cpu", max_batch=len(BATCH))
    onnx_engine = OnnxEngine(g2p)
    reference = OnnxReference()
    from tts_server.engines.packaged import packaged_files

    rounding = weight_rounding(packaged_files()[0])
    try:
        stages = [
            {"text": text, "voice": voice, "speed": speed}
            | stage_comparison(reference, torch_engine._batched, g2p(text), voice, speed)
            for text, voice, speed in BATCH[1::2]
        ]
        rounding_in_bert = activation_rounding(
            torch_engine._batched, token_ids(g2p(BATCH[1][0]), reference.vocab)
        )
        rtf = asyncio.run(
            real_time_factors({"onnx": onnx_engine, "torch": torch_engine}, PARAGRAPH, runs)
        )
        batch, batch_time = batch_and_timings(torch_engine, onnx_engine, g2p)
        speeds = speed_and_blend(torch_engine, onnx_engine, reference, g2p(BATCH[3][0]))
        table = json.loads(PHONEME_TABLE.read_text(encoding="utf-8"))
        cost = calibrated_cost(torch_engine._batched, table, runs, cache)
    finally:
        torch_engine.close()
        onnx_engine.close()
    return {
        "machine": {
            "cpu": platform.machine(),
            "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
        "import_s": round(import_s, 1),
        "weight_rounding": rounding,
        "stages": stages,
        "activation_rounding": rounding_in_bert,
        "paragraph": {"text": PARAGRAPH, **rtf},
        "batch": batch,
        "batch_time": batch_time,
        "speed_and_blend": speeds,
        "calibrated_checkpoint": cost,
    }


def _distance(row: dict[str, Any]) -> str:
    distance = row.get("off_tokens_distance_from_half")
    return "" if distance is None else f" ({distance})"


def markdown(result: dict[str, Any]) -> str:
    """The benchmark note."""
    machine = result["machine"]
    rounding = result["weight_rounding"]
    lines = [
        "# The PyTorch engine on real weights: does it speak?",
        "",
        "Real Kokoro-82M weights imported from the embedded int8 ONNX model "
        f"(`tts_server/engines/torch/onnx_import/`; imported, or found in the cache, in "
        f"{result['import_s']} s) against the ONNX engine. Machine: "
        f"{machine['cpu']}, {machine['cores']} cores shared with other work "
        f"(load average {machine['load_average']}), torch threads {machine['torch_threads']}. "
        "Written by `bench/torch_engine_speech.py`.",
        "",
        "## What int8 did to the weights",
        "",
        f"{rounding['quantized_tensors']} quantized weight tensors (MatMulInteger, ConvInteger, "
        "DynamicQuantizeLSTM): signal to rounding noise (a step `scale` rounds with RMS error "
        f"`scale / sqrt(12)`) {rounding['snr_db_median']} dB median, "
        f"{rounding['snr_db_worst']} dB worst, {rounding['snr_db_all_weights']} dB over all "
        f"weights; {rounding['conv_channels_rounded_to_zero']} of "
        f"{rounding['conv_channels']} convolution output channels rounded to all zeros (per-tensor "
        "scales: a channel much smaller than its tensor's largest). The dequantized weights carry "
        "this noise; the original fp32 `kokoro-v1_0.pth` is not here to compare with.",
        "",
        "## Stage by stage (same tokens, style row and speed)",
        "",
        "| sentence | voice | speed | tokens | frames onnx / torch | tokens 1 frame off "
        "(their distance from .5, max) | F0 err | energy err | features err | decoder gain | "
        "decoder SNR dB (two torch draws) "
        "| log-spectral distance dB (two torch draws) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["stages"]:
        lines.append(
            f"| {row['text']} | {row['voice']} | {row['speed']} | {row['tokens']} | "
            f"{row['frames_onnx']} / {row['frames_torch']} | {row['tokens_off_by_one']}"
            f"{_distance(row)} | {row['f0_relative_error']:.2%} | "
            f"{row['energy_relative_error']:.2%} | "
            f"{row['asr_relative_error']:.2%} | {row['decoder_gain']} | "
            f"{row['decoder_snr_db']} ({row['decoder_snr_db_two_torch_draws']}) | "
            f"{row['log_spectral_distance_db']} "
            f"({row['log_spectral_distance_db_two_torch_draws']}) |"
        )
    paragraph = result["paragraph"]
    lines += [
        "",
        "Durations: equal, or one frame apart on a token whose unrounded duration (torch's, "
        "before `round`) lies within a fraction of a frame of .5 (the column says how close): "
        "the ONNX graph quantizes its activations to int8 on the fly (DynamicQuantizeLinear before "
        "every MatMulInteger/ConvInteger), the imported model computes in float32 on the "
        "dequantized weights. F0, energy and the aligned text features are compared on the ONNX "
        "durations (relative L2 error). The decoder is compared on the ONNX model's own F0, energy "
        "and features: the gain is the export's iSTFT, 1.5 times louder than `torch.istft`; the "
        "SNR is after that gain, beside the SNR between two of torch's own noise draws (kokoro's "
        "harmonic source draws noise and phases at random, the export's has neither). The whole "
        "model on its own F0 drifts in phase from a 0.5 % F0 difference, so only spectra compare: "
        "log-spectral distance (1024-point frames, each signal at its own mean power).",
        "",
        "Why durations flip, measured on the second sentence: PL-BERT's output after each of its "
        "12 layers against the export's (relative L2 error), in float32 and with the export's "
        "int8 activations emulated (per-tensor uint8 before every linear layer, as "
        "DynamicQuantizeLinear before every MatMulInteger):",
        "",
        "| PL-BERT layer | " + " | ".join(str(k + 1) for k in range(12)) + " |",
        "|---|" + "---:|" * 12,
        *(
            f"| {mode} | " + " | ".join(f"{e:.2%}" for e in errors) + " |"
            for mode, errors in result["activation_rounding"].items()
        ),
        "",
        "Emulated, the first layer agrees with the export far more closely than float32 does, "
        "yet the error grows layer by layer until it is as large as float32's: a uint8 step is "
        "a 255th of a tensor's range, which PL-BERT's outlier activations make wide, so a "
        "small difference flips some roundings at the next quantizer, and each flip is a whole "
        "step. The export's activations carry this rounding noise, which no float computation "
        "reproduces short of onnxruntime's own integer kernels in the same order; the "
        "predictor downstream shrinks it, yet enough is left to flip a "
        "token whose duration lies near .5.",
        "",
        "## Intelligibility and speed (offline Whisper tiny.en, same run)",
        "",
        f'Paragraph: "{paragraph["text"]}" (jf_alpha)',
        "",
        "| engine | WER, median (each run) | real-time factor (CPU), median | heard (last run) |",
        "|---|---:|---:|---|",
    ]
    for name in ("onnx", "torch"):
        each = ", ".join(str(w) for w in paragraph[name]["wers"])
        lines.append(
            f"| {name} | {paragraph[name]['wer']} ({each}) | {paragraph[name]['rtf']} | "
            f"{paragraph[name]['heard']} |"
        )
    timing = result["batch_time"]
    lines += [
        "",
        "## The batched path: eight sentences, three voices, two speeds, one forward pass",
        "",
        f"Alone one after the other: {timing['alone_s']} s; in one batch: "
        f"{timing['batch_of_8_s']} s.",
        "",
        "| sentence | voice | speed | WER onnx | WER torch alone | WER torch in the batch | "
        "same durations | word edges vs onnx (frames, max) |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for row in result["batch"]:
        lines.append(
            f"| {row['text']} | {row['voice']} | {row['speed']} | {row['wer_onnx']} | "
            f"{row['wer_torch_alone']} | {row['wer_torch_in_batch']} | "
            f"{'yes' if row['same_durations_in_batch'] else 'no'} | "
            f"{row['max_word_edge_difference_frames']} |"
        )
    lines += [
        "",
        "## Speed and blends",
        "",
        "| voice | speed | frames onnx | frames torch | max token difference |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in result["speed_and_blend"]:
        lines.append(
            f"| {row['voice']} | {row['speed']} | {row['frames_onnx']} | {row['frames_torch']} | "
            f"{row['max_token_frame_difference']} |"
        )
    cost = result["calibrated_checkpoint"]
    lines += [
        "",
        "## The calibrated random checkpoint beside the real weights (CPU)",
        "",
        "`bench/calibrated_checkpoint.py` (the GPU speed checkpoint) now takes its targets from "
        f"the imported real weights: {cost['targets_from_real_weights']['frames_per_token']} "
        f"frames per token, RMS {cost['targets_from_real_weights']['rms']} (achieved "
        f"{cost['calibration']['frames_per_token']['achieved']}, "
        f"{cost['calibration']['rms']['achieved']}). One forward pass per sentence of "
        "`bench/load_phonemes.json`, median: real weights "
        f"{cost['median_call_s']['real']} s, calibrated {cost['median_call_s']['calibrated']} s: "
        f"the calibrated model costs {cost['calibrated_over_real']:.2f} times what the real "
        "weights cost.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Measure, write ``docs/benchmarks/torch_engine_speech.{json,md}``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1, help="timed rounds (medians)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--import-cache", type=Path, help="where the imported weights are kept")
    args = parser.parse_args(argv)
    result = measure(args.runs, args.import_cache)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "torch_engine_speech.json").write_text(
        json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (args.out / "torch_engine_speech.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
