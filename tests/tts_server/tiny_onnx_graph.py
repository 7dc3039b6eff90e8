"""A tiny Kokoro-shaped ONNX graph, built at test time, for ``tts_server.engines.onnx.split``.

The packaged int8 model takes seconds to load and cut; this one takes milliseconds and has the
structure the split relies on, read off the packaged graph (its op patterns, not its sizes):

- the inputs ``tokens`` (int64, ``(1, L)``), ``style`` (``(1, STYLE)``) and ``speed``
  (``(1,)``), the one output ``audio`` (1-D), opset 20, IR version 9;
- a text side with a ``DynamicQuantizeLinear`` + ``MatMulInteger`` projection, durations as
  ``duration_output`` finds them (``Div`` by ``speed``, ``Round``, ``Clip`` with an empty max
  input, ``Cast``), an alignment (``CumSum``, ``Range``) expanding tokens to frames, and the
  tensors ``ASR`` (``(1, CHANNELS, frames)``), ``F0`` and ``ENERGY`` (``(1, 2 * frames)``);
- the harmonic source: the F0 at the sample rate, its phase a cumulative sum over the whole
  sentence, two sines, a linear layer and the graph's one ``Tanh``
  (``(1, frames * SAMPLES_PER_FRAME, 1)``);
- a ``Slice`` of ``style`` that both halves read (the F0's offset, the decoder's AdaIN);
- a decoder: a ``DynamicQuantizeLinear`` + ``ConvInteger`` over the frames (one frame of
  context each side); an instance norm as Kokoro's export writes it (``ReduceMean`` over time,
  ``Sub``, ``Mul`` of the difference by itself, ``ReduceMean``) with AdaIN, at the frame rate;
  a ``ConvTranspose`` to twice the frame rate plus a strided ``Conv`` of the source; a second
  instance norm there; two near misses the split must leave alone (means over the channels,
  one centred and squared, then summed, not averaged; one centred and weighted, not squared,
  then averaged); a second quantizer, whose input is a sigmoid (all positive: its range's
  low is the 0 the op adds); a ``ConvTranspose`` to ``SAMPLES_PER_FRAME`` samples a frame,
  plus a tenth of the source.

``TinyKokoro.decoder`` is the decoder alone, neither split nor rewritten, with the inputs of
its norms and quantizers (``TAPS``) as extra outputs: the tests' reference for a window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tts_server.engines.onnx.split import ASR, ENERGY, F0
from tts_server.engines.windows import SAMPLES_PER_FRAME

CHANNELS = 4  # the aligned text features' channels (512 in Kokoro)
HIDDEN = 3  # the decoder's channels
STYLE = 8  # a voice's style row (256 in Kokoro)
VOCAB = 16
SOURCE = "/decoder/generator/m_source/l_tanh/Tanh_output_0"
STEP = SAMPLES_PER_FRAME // 2  # samples per F0 step (two steps a frame)
RATE = 24_000
TAPS = {  # each norm's and quantizer's input, in the order the split numbers them
    "norm0": "/decoder/conv0/Add_output_0",
    "norm1": "/decoder/Add_source_output_0",
    "quant0": "/decoder/Concat_output_0",
    "quant1": "/decoder/gate/Sigmoid_output_0",
}
OPSET, IR_VERSION = 20, 9


@dataclass(frozen=True)
class TinyKokoro:
    """The whole graph (as the packaged model) and its decoder alone (the reference)."""

    model: onnx.ModelProto
    decoder: onnx.ModelProto


class _Builder:
    """Nodes and initializers, named as Kokoro's export names them (``/part/Op_output_0``)."""

    def __init__(self, seed: int) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.weights: dict[str, onnx.TensorProto] = {}
        self.rng = np.random.default_rng(seed)

    def op(self, op_type: str, inputs: list[str], name: str, **attrs: object) -> str:
        """One node with one output, ``name``."""
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name

    def const(self, name: str, value: object, dtype: type = np.float32) -> str:
        self.weights[name] = numpy_helper.from_array(np.asarray(value, dtype), name)
        return name

    def ints(self, name: str, *values: int) -> str:
        return self.const(name, list(values), np.int64)

    def random(self, name: str, shape: tuple[int, ...], scale: float = 0.5) -> str:
        return self.const(name, self.rng.normal(0.0, scale, shape))

    def quantized(self, x: str, weight: tuple[int, ...], prefix: str) -> str:
        """``x`` through a ``DynamicQuantizeLinear`` and an integer matmul (a 2-D weight) or
        conv (3-D, padded to keep the length), scaled back to floats as the int8 export does."""
        q, scale, zero = f"{x}_dynamic_quantized", f"{x}_scale", f"{x}_zero_point"
        self.nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [q, scale, zero]))
        w = self.const(f"{prefix}.w_quantized", self.rng.integers(0, 256, weight), np.uint8)
        w_zero = self.const(f"{prefix}.w_zero_point", 128, np.uint8)
        w_scale = self.const(f"{prefix}.w_scale", 0.02)
        conv = len(weight) == 3
        op, attrs = (
            ("ConvInteger", {"pads": [weight[-1] // 2] * 2}) if conv else ("MatMulInteger", {})
        )
        ints = self.op(op, [q, w, zero, w_zero], f"{prefix}/Integer_output_0", **attrs)
        floats = self.op("Cast", [ints], f"{prefix}/Cast_output_0", to=TensorProto.FLOAT)
        both = self.op("Mul", [scale, w_scale], f"{prefix}/scale_output_0")
        return self.op("Mul", [floats, both], f"{prefix}/Mul_output_0")


def _durations(b: _Builder, proj: str) -> str:
    """Frames per token: ``sum(sigmoid(proj @ w)) / speed``, rounded, at least 1, integers."""
    logits = b.op("MatMul", [proj, b.random("dur.w", (CHANNELS, 4), 2.0)], "/encoder/dur/MatMul")
    sigmoid = b.op("Sigmoid", [logits], "/encoder/Sigmoid_output_0")
    summed = b.op("ReduceSum", [sigmoid, b.ints("axis2", 2)], "/encoder/Sum", keepdims=0)
    div = b.op("Div", [summed, "speed"], "/encoder/Div_output_0")
    rounded = b.op("Round", [div], "/encoder/Round_output_0")
    clipped = b.op("Clip", [rounded, b.const("one", 1.0), ""], "/encoder/Clip_output_0")
    return b.op("Cast", [clipped], "/encoder/Cast_output_0", to=TensorProto.INT64)


def _alignment(b: _Builder, durations: str) -> str:
    """``(L, frames)``: 1 where the frame is the token's."""
    d = b.op("Reshape", [durations, b.ints("flat", -1)], "/encoder/d")
    ends = b.op("CumSum", [d, b.const("axis0", 0, np.int64)], "/encoder/CumSum_output_0")
    starts = b.op("Sub", [ends, d], "/encoder/starts")
    total = b.op("ReduceSum", [d], "/encoder/total", keepdims=0)
    zero, one = b.const("zero64", 0, np.int64), b.const("one64", 1, np.int64)
    frame = b.op("Range", [zero, total, one], "/encoder/Range_output_0")
    row = b.op("Unsqueeze", [frame, b.ints("axes0", 0)], "/encoder/row")
    column = b.ints("axes1", 1)
    starts = b.op("Unsqueeze", [starts, column], "/encoder/starts_column")
    ends = b.op("Unsqueeze", [ends, column], "/encoder/ends_column")
    after = b.op("GreaterOrEqual", [row, starts], "/encoder/GreaterOrEqual_output_0")
    before = b.op("Less", [row, ends], "/encoder/Less_output_0")
    inside = b.op("And", [after, before], "/encoder/And_output_0")
    return b.op("Cast", [inside], "/encoder/Cast_4_output_0", to=TensorProto.FLOAT)


def _curve(b: _Builder, proj: str, align: str, shared: str, name: str, offset: float) -> str:
    """A per-token value aligned to the frames and offset by the style, two steps a frame."""
    p = f"/encoder/{name}"
    tokens = b.op("MatMul", [proj, b.random(f"{name}.w", (CHANNELS, 1))], f"{p}/MatMul_0")
    row = b.op("Transpose", [tokens], f"{p}/Transpose", perm=[0, 2, 1])
    frames = b.op("MatMul", [row, align], f"{p}/MatMul_1")
    styled = b.op("MatMul", [shared, b.random(f"{name}.style", (2, 1))], f"{p}/style")
    level = b.op("Sigmoid", [b.op("Add", [frames, styled], f"{p}/Add_0")], f"{p}/Sigmoid")
    scaled = b.op("Mul", [level, b.const(f"{name}.gain", 1.5 * offset or 1.0)], f"{p}/Mul_0")
    first = b.op("Add", [scaled, b.const(f"{name}.offset", offset)], f"{p}/Add_1")
    second = b.op("Mul", [first, b.const(f"{name}.second", 1.05)], f"{p}/Mul_1")
    axis = b.ints("axes3", 3)
    steps = [
        b.op("Unsqueeze", [x, axis], f"{p}/Unsqueeze_{i}") for i, x in enumerate((first, second))
    ]
    return b.op("Concat", steps, f"{p}/Concat", axis=3)


def _text_side(b: _Builder) -> str:
    """tokens, style, speed -> durations, ``ASR``, ``F0``, ``ENERGY``, the source; returns the
    style's slice that the decoder reads too."""
    emb = b.op("Gather", [b.random("embedding", (VOCAB, CHANNELS), 1.0), "tokens"], "/encoder/emb")
    proj = b.quantized(emb, (CHANNELS, CHANNELS), "/encoder/proj")
    align = _alignment(b, _durations(b, proj))
    columns = b.op("Transpose", [proj], "/encoder/Transpose_2_output_0", perm=[0, 2, 1])
    b.op("MatMul", [columns, align], ASR)
    slice_at = [b.ints("starts", 0), b.ints("ends", 2), b.ints("axes1", 1)]
    shared = b.op("Slice", ["style", *slice_at], "/style/Slice_output_0")
    to_row = b.ints("to_row", 1, -1)
    b.op("Reshape", [_curve(b, proj, align, shared, "F0", 100.0), to_row], F0)
    b.op("Reshape", [_curve(b, proj, align, shared, "N", 0.0), to_row], ENERGY)
    _source(b)
    return shared


def _source(b: _Builder) -> None:
    """The harmonic source: the F0 at the sample rate, its phase summed over the sentence."""
    p = "/decoder/generator/m_source"
    up = b.op("Unsqueeze", [F0, b.ints("axes2", 2)], f"{p}/Unsqueeze")
    wide = b.op("Expand", [up, b.ints("step", 1, 1, STEP)], f"{p}/Expand")
    samples = b.op("Reshape", [wide, b.ints("column", 1, -1, 1)], f"{p}/Reshape")
    rad = b.op("Mul", [samples, b.const("per_sample", 1.0 / RATE)], f"{p}/rad")
    phase = b.op("CumSum", [rad, b.const("axis1", 1, np.int64)], f"{p}/l_sin_gen/CumSum")
    sines = []
    for k in (1, 2):
        angle = b.op("Mul", [phase, b.const(f"harmonic{k}", 2 * math.pi * k)], f"{p}/Mul_{k}")
        sines.append(b.op("Sin", [angle], f"{p}/Sin_{k}"))
    harmonics = b.op("Concat", sines, f"{p}/Concat", axis=2)
    linear = b.op("MatMul", [harmonics, b.random("source.w", (2, 1), 1.0)], f"{p}/l_linear/MatMul")
    b.op("Tanh", [b.op("Add", [linear, b.random("source.b", (1,))], f"{p}/l_linear/Add")], SOURCE)


def _adain(b: _Builder, x: str, shared: str, name: str) -> str:
    """An instance norm over time as Kokoro's export writes it, scaled and shifted by the
    style (AdaIN)."""
    p = f"/decoder/{name}"
    axis = b.ints("axes2", 2)
    mean = b.op("ReduceMean", [x, axis], f"{p}/ReduceMean_output_0", keepdims=1)
    centred = b.op("Sub", [x, mean], f"{p}/Sub_output_0")
    square = b.op("Mul", [centred, centred], f"{p}/Mul_2_output_0")
    var = b.op("ReduceMean", [square, axis], f"{p}/ReduceMean_2_output_0", keepdims=1)
    std = b.op("Sqrt", [b.op("Add", [var, b.const("eps", 1e-5)], f"{p}/Add_2")], f"{p}/Sqrt")
    normed = b.op("Div", [centred, std], f"{p}/Div_1_output_0")
    column = b.ints("to_column", 1, -1, 1)
    gains = []
    for part in ("gamma", "beta"):
        row = b.op("MatMul", [shared, b.random(f"{name}.{part}", (2, HIDDEN))], f"{p}/{part}")
        gains.append(b.op("Reshape", [row, column], f"{p}/{part}_column"))
    scale = b.op("Add", [gains[0], b.const("one", 1.0)], f"{p}/Add_1_output_0")
    scaled = b.op("Mul", [scale, normed], f"{p}/Mul_3_output_0")
    styled = b.op("Add", [scaled, gains[1]], f"{p}/Add_3_output_0")
    return b.op("LeakyRelu", [styled], f"{p}/LeakyRelu_output_0", alpha=0.2)


def _gate(b: _Builder, x: str) -> str:
    """A sigmoid gate from two near misses of the split's pattern, both over the channels
    (local in time): a mean, centred and squared like a norm's, but summed; another mean,
    centred and weighted (not squared), then averaged."""
    p = "/decoder/gate"
    axis = b.ints("axes1", 1)
    mean = b.op("ReduceMean", [x, axis], f"{p}/ReduceMean_output_0", keepdims=1)
    centred = b.op("Sub", [x, mean], f"{p}/Sub_output_0")
    square = b.op("Mul", [centred, centred], f"{p}/Mul_output_0")
    energy = b.op("ReduceSum", [square, axis], f"{p}/ReduceSum_output_0")
    damped = b.op("Mul", [energy, b.const("tenth", 0.1)], f"{p}/Mul_1_output_0")
    other = b.op("ReduceMean", [x, axis], f"{p}/ReduceMean_1_output_0", keepdims=1)
    off = b.op("Sub", [x, other], f"{p}/Sub_1_output_0")
    weighted = b.op("Mul", [off, b.random("gate.w", (1, HIDDEN, 1))], f"{p}/Mul_2_output_0")
    projected = b.op("ReduceMean", [weighted, axis], f"{p}/ReduceMean_2_output_0", keepdims=1)
    summed = b.op("Add", [b.op("Add", [centred, damped], f"{p}/Add"), projected], f"{p}/Add_1")
    return b.op("Sigmoid", [summed], TAPS["quant1"])


def _decoder(b: _Builder, shared: str) -> None:
    """``ASR``, ``F0``, ``ENERGY``, the style and the source -> ``audio``."""
    p = "/decoder"
    steps = b.ints("to_steps", 1, -1, 2)
    f0 = b.op("Reshape", [F0, steps], f"{p}/F0/Reshape")
    f0 = b.op("Transpose", [f0], f"{p}/F0/Transpose", perm=[0, 2, 1])
    f0 = b.op("Mul", [f0, b.const("hundredth", 0.01)], f"{p}/F0/Mul")
    energy = b.op("Reshape", [ENERGY, steps], f"{p}/N/Reshape")
    energy = b.op("Transpose", [energy], f"{p}/N/Transpose", perm=[0, 2, 1])
    x = b.op("Concat", [ASR, f0, energy], TAPS["quant0"], axis=1)
    conv = b.quantized(x, (HIDDEN, CHANNELS + 4, 3), f"{p}/conv0")
    conv = b.op("Add", [conv, b.random("conv0.b", (1, HIDDEN, 1))], TAPS["norm0"])
    frames = _adain(b, conv, shared, "norm0")
    up = b.op(
        "ConvTranspose", [frames, b.random("up.w", (HIDDEN, HIDDEN, 2))], f"{p}/up", strides=[2]
    )
    source = b.op("Transpose", [SOURCE], f"{p}/generator/Transpose_1", perm=[0, 2, 1])
    noise = b.random("noise_conv.w", (HIDDEN, 1, STEP), 0.05)
    noise = b.op("Conv", [source, noise], f"{p}/noise_convs.0/Conv_output_0", strides=[STEP])
    mixed = b.op("Add", [up, noise], TAPS["norm1"])
    gated = _gate(b, _adain(b, mixed, shared, "norm1"))
    out = b.quantized(gated, (HIDDEN, HIDDEN, 1), f"{p}/conv1")
    post = b.random("post.w", (HIDDEN, 1, STEP), 0.3)
    wave = b.op("ConvTranspose", [out, post], f"{p}/conv_post", strides=[STEP])
    dry = b.op("Mul", [source, b.const("tenth", 0.1)], f"{p}/dry")
    both = b.op("Add", [wave, dry], f"{p}/Add_output_0")
    b.op("Reshape", [both, b.ints("flat", -1)], "audio")


def _model(
    b: _Builder, nodes: list[onnx.NodeProto], inputs: list, outputs: list
) -> onnx.ModelProto:
    """A model of ``nodes`` with the initializers they read."""
    used = {name for node in nodes for name in node.input}
    weights = [w for name, w in b.weights.items() if name in used]
    graph = helper.make_graph(nodes, "tiny_kokoro", inputs, outputs, weights)
    opsets = [helper.make_opsetid("", OPSET)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION)


def tiny_kokoro(seed: int = 0) -> TinyKokoro:
    """The tiny graph and its decoder alone, with random weights from ``seed``."""
    b = _Builder(seed)
    shared = _text_side(b)
    text = len(b.nodes)
    _decoder(b, shared)
    value = helper.make_tensor_value_info
    inputs = [
        value("tokens", TensorProto.INT64, [1, "sequence_length"]),
        value("style", TensorProto.FLOAT, [1, STYLE]),
        value("speed", TensorProto.FLOAT, [1]),
    ]
    audio = [value("audio", TensorProto.FLOAT, ["audio_length"])]
    model = _model(b, b.nodes, inputs, audio)
    onnx.checker.check_model(model, full_check=True)
    shared_node = next(node for node in b.nodes if node.output[0] == shared)
    decoder_inputs = [value(n, TensorProto.FLOAT, None) for n in (ASR, F0, ENERGY, "style", SOURCE)]
    taps = [value(n, TensorProto.FLOAT, None) for n in TAPS.values()]
    decoder = _model(b, [shared_node, *b.nodes[text:]], decoder_inputs, audio + taps)
    return TinyKokoro(model, decoder)
