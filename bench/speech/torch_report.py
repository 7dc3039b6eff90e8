"""The torch engine speech note (``torch_engine_speech.md``), a function per section."""

from __future__ import annotations

from typing import Any


def _distance(row: dict[str, Any]) -> str:
    distance = row.get("off_tokens_distance_from_half")
    return "" if distance is None else f" ({distance})"


def _introduction(result: dict[str, Any]) -> list[str]:
    machine = result["machine"]
    return [
        "# The PyTorch engine on real weights: does it speak?",
        "",
        "Real Kokoro-82M weights imported from the embedded int8 ONNX model "
        f"(`tts_server/engines/torch/onnx_import/`; imported, or found in the cache, in "
        f"{result['import_s']} s) against the ONNX engine. Machine: "
        f"{machine['cpu']}, {machine['cores']} cores shared with other work "
        f"(load average {machine['load_average']}), torch threads {machine['torch_threads']}. "
        "Written by `bench/speech/torch_engine_speech.py`.",
    ]


def _weight_rounding(rounding: dict[str, Any]) -> list[str]:
    return [
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
    ]


def _stage_by_stage(stages: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "## Stage by stage (same tokens, style row and speed)",
        "",
        "| sentence | voice | speed | tokens | frames onnx / torch | tokens 1 frame off "
        "(their distance from .5, max) | F0 err | energy err | features err | decoder gain | "
        "decoder SNR dB (two torch draws) "
        "| log-spectral distance dB (two torch draws) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in stages:
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
    ]
    return lines


def _why_durations_flip(activation_rounding: dict[str, list[float]]) -> list[str]:
    return [
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
            for mode, errors in activation_rounding.items()
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
    ]


def _intelligibility(paragraph: dict[str, Any]) -> list[str]:
    lines = [
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
    return lines


def _batched_path(batch: list[dict[str, Any]], timing: dict[str, float]) -> list[str]:
    lines = [
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
    for row in batch:
        lines.append(
            f"| {row['text']} | {row['voice']} | {row['speed']} | {row['wer_onnx']} | "
            f"{row['wer_torch_alone']} | {row['wer_torch_in_batch']} | "
            f"{'yes' if row['same_durations_in_batch'] else 'no'} | "
            f"{row['max_word_edge_difference_frames']} |"
        )
    return lines


def _speed_and_blends(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "",
        "## Speed and blends",
        "",
        "| voice | speed | frames onnx | frames torch | max token difference |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['voice']} | {row['speed']} | {row['frames_onnx']} | {row['frames_torch']} | "
            f"{row['max_token_frame_difference']} |"
        )
    return lines


def _calibrated_checkpoint(cost: dict[str, Any]) -> list[str]:
    return [
        "",
        "## The calibrated random checkpoint beside the real weights (CPU)",
        "",
        "`bench/load/calibrated_checkpoint.py` (the GPU speed checkpoint) now takes its targets "
        "from "
        f"the imported real weights: {cost['targets_from_real_weights']['frames_per_token']} "
        f"frames per token, RMS {cost['targets_from_real_weights']['rms']} (achieved "
        f"{cost['calibration']['frames_per_token']['achieved']}, "
        f"{cost['calibration']['rms']['achieved']}). One forward pass per sentence of "
        "`bench/load/phonemes.json`, median: real weights "
        f"{cost['median_call_s']['real']} s, calibrated {cost['median_call_s']['calibrated']} s: "
        f"the calibrated model costs {cost['calibrated_over_real']:.2f} times what the real "
        "weights cost.",
        "",
    ]


def markdown(result: dict[str, Any]) -> str:
    """The benchmark note."""
    lines = [
        *_introduction(result),
        *_weight_rounding(result["weight_rounding"]),
        *_stage_by_stage(result["stages"]),
        *_why_durations_flip(result["activation_rounding"]),
        *_intelligibility(result["paragraph"]),
        *_batched_path(result["batch"], result["batch_time"]),
        *_speed_and_blends(result["speed_and_blend"]),
        *_calibrated_checkpoint(result["calibrated_checkpoint"]),
    ]
    return "\n".join(lines)
