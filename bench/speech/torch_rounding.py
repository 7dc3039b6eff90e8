"""Why durations flip (``torch_engine_speech``): what int8 did to the export's weights, and
PL-BERT's layers against the export's with its int8 activations emulated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.speech.torch_stages import relative_error
from tts_server.engines.torch.kokoro_batch import BatchedKokoro

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
