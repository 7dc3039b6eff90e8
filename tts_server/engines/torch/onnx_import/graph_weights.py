"""Kokoro-82M's weights as its int8 ONNX export holds them, found and dequantized.

The embedded ``kokoro-v1.0.int8.onnx`` holds the same network as ``kokoro-v1_0.pth``, exported
under a wrapper (``encoder.*`` is the text side, ``decoder.decoder.*`` the decoder) and then
dynamically quantized by onnxruntime. Each weight the graph computes with is found at the node
that uses it and turned back into a float32 ``KModel`` tensor:

- ``MatMulInteger`` / ``ConvInteger`` weights: ``(q - zero_point) * scale``, per tensor or per
  output channel as stored (a matrix is stored ``(in, out)``: transposed for ``nn.Linear``);
- float ``Conv`` / ``ConvTranspose`` / ``MatMul`` weights as they are;
- ``DynamicQuantizeLSTM``: per-direction scales; ONNX packs ``W`` as ``(dirs, in, 4h)`` and
  ``R`` as ``(dirs, h, 4h)`` in gate order i, o, f, c with both biases in one ``(dirs, 8h)``;
  PyTorch wants ``(4h, in)`` per direction in gate order i, f, g(c), o;
- quantized embeddings (``Gather`` then ``DequantizeLinear``) with that node's scale and zero
  point.

Which module a weight belongs to: its own name where the export kept it (``...weight_quantized``),
else the ``.bias`` initializer the result is added to a node or two later (the folded
weight-norm convolutions are named after node outputs, ``/decoder/decoder/encode/Mul_output_0``,
but their bias keeps its module name), else the node's scope placed under the module path its
named neighbours give that scope (a bias-free ``conv1x1``, the LSTMs). ``state_dicts`` keeps a
candidate only if ``KModel`` has a parameter of that name and shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from tts_server.engines.base import EngineError

# Weights of the export's own iSTFT (a fixed ConvTranspose basis): not parameters; KModel's
# TorchSTFT computes the same inverse transform with torch.istft.
OUTSIDE_KMODEL = re.compile(r"^decoder\.decoder\.generator\.stft\.")
GATES_TO_TORCH = (0, 2, 3, 1)  # ONNX i, o, f, c -> PyTorch i, f, g, o
BIAS_QUANTIZATION = ("Reshape", "Cast", "Floor", "Div")  # a bias added in the int32 domain
HOPS_TO_BIAS = 3  # MatMulInteger -> Cast -> Mul (scale) -> Add(bias): the bias is this near


class ImportFailure(EngineError):
    """The ONNX model does not yield every ``KModel`` parameter."""


@dataclass(frozen=True)
class Found:
    """One module's weights as the graph holds them, in KModel's layout."""

    node: str  # the ONNX node that computes with them
    tensors: dict[str, np.ndarray]  # {"weight": ...}, or an LSTM's weight_ih_l0, ...
    modules: frozenset[str]  # ONNX module paths it may belong to (one, when named)


class Graph:
    """The ONNX graph's initializers and nodes, indexed both ways."""

    def __init__(self, model: Any) -> None:
        from onnx import numpy_helper

        self._to_array = numpy_helper.to_array
        graph = model.graph
        self.initializers = {t.name: t for t in graph.initializer}
        self.nodes = list(graph.node)
        self.consumers: dict[str, list[Any]] = {}
        self.producer: dict[str, Any] = {}
        for node in self.nodes:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
            for name in node.output:
                self.producer[name] = node
        self._arrays: dict[str, np.ndarray] = {}

    def array(self, name: str) -> np.ndarray:
        """An initializer as a NumPy array."""
        if name not in self.initializers:
            raise ImportFailure(f"the ONNX model has no initializer {name!r}")
        if name not in self._arrays:
            self._arrays[name] = self._to_array(self.initializers[name])
        return self._arrays[name]

    def is_initializer(self, name: str) -> bool:
        """Whether ``name`` is a constant of the graph."""
        return name in self.initializers


def dequantize(
    quantized: np.ndarray, zero_point: np.ndarray, scale: np.ndarray, axis: int
) -> np.ndarray:
    """``(q - zero_point) * scale`` in float32; per-channel parameters lie along ``axis``."""

    def along_axis(values: np.ndarray) -> np.ndarray:
        shape = [1] * quantized.ndim
        if values.size > 1:
            shape[axis] = -1
        return values.astype(np.float32).reshape(shape)

    return (quantized.astype(np.float32) - along_axis(zero_point)) * along_axis(scale)


def _scale_of(graph: Graph, quantized: str) -> np.ndarray:
    """The scale onnxruntime's quantizer stored beside ``<name>_quantized`` as ``<name>_scale``."""
    if not quantized.endswith("_quantized"):
        raise ImportFailure(f"{quantized!r} is not named like a quantized weight")
    return graph.array(quantized.removesuffix("_quantized") + "_scale")


def _own_name(weight: str) -> str | None:
    """The module of a weight that kept its name (``x.weight``, ``x.weight_quantized``)."""
    match = re.fullmatch(r"(.+)\.weight(_quantized)?", weight)
    return match.group(1) if match else None


def _bias_module(graph: Graph, node: Any) -> str | None:
    """The module of the ``.bias`` initializer that ``node``'s result is added to, if any."""
    frontier = [node]
    for _ in range(HOPS_TO_BIAS + 1):
        following = []
        for current in frontier:
            for name in current.input if current is not node else ():
                bias = _bias_source(graph, name)
                if bias is not None:
                    return bias.removesuffix(".bias")
            if current is node or current.op_type in ("Cast", "Mul"):
                following.extend(graph.consumers.get(current.output[0], []))
        frontier = following
    return None


def _bias_source(graph: Graph, name: str) -> str | None:
    """The ``.bias`` initializer that ``name`` is, or is made from by an integer-domain
    quantization (``Div`` by the scales, ``Floor``, ``Cast``, ``Reshape`` to ``(1, C, 1)``)."""
    for _ in range(len(BIAS_QUANTIZATION) + 1):
        if graph.is_initializer(name):
            return name if name.endswith(".bias") else None
        producer = graph.producer.get(name)
        if producer is None or producer.op_type not in BIAS_QUANTIZATION:
            return None
        name = producer.input[0]
    return None


def _scope(node: Any) -> str:
    """``/decoder/decoder/encode/conv1x1/Conv_quant`` -> ``/decoder/decoder/encode/conv1x1``."""
    return node.name.rsplit("/", 1)[0]


def _strip_repeat(component: str) -> str:
    """A scope component without the tracer's call counter (``query_9`` -> ``query``)."""
    return re.sub(r"_\d+$", "", component)


class ScopeMap:
    """ONNX scopes to module paths, learned from the nodes whose module is known by name."""

    def __init__(self) -> None:
        self._modules: dict[str, set[str]] = {}

    def learn(self, scope: str, module: str) -> None:
        """Every prefix of ``scope`` maps to ``module`` less the same trailing components."""
        parts = scope.strip("/").split("/")
        path = module
        while parts:
            self._modules.setdefault("/".join(parts), set()).add(path)
            tail = _strip_repeat(parts.pop())
            if not path.endswith("." + tail):
                break
            path = path[: -len(tail) - 1]

    def candidates(self, scope: str) -> set[str]:
        """Module paths for ``scope``: its longest known prefix's modules plus the rest."""
        parts = scope.strip("/").split("/")
        for cut in range(len(parts), 0, -1):
            known = self._modules.get("/".join(parts[:cut]))
            if known:
                rest = ".".join(_strip_repeat(p) for p in parts[cut:])
                return {f"{m}.{rest}" if rest else m for m in known}
        return set()


def _lstm(graph: Graph, node: Any) -> dict[str, np.ndarray]:
    """A bidirectional ``DynamicQuantizeLSTM``'s weights in ``nn.LSTM``'s names and layout."""
    inputs = list(node.input) + [""] * (12 - len(node.input))
    w_q, r_q, bias = inputs[1], inputs[2], inputs[3]
    w = graph.array(w_q)  # (dirs, in, 4h)
    r = graph.array(r_q)  # (dirs, h, 4h)
    w = dequantize(w, graph.array(inputs[9]), graph.array(inputs[8]), axis=0)
    r = dequantize(r, graph.array(inputs[11]), graph.array(inputs[10]), axis=0)
    b = graph.array(bias).astype(np.float32)  # (dirs, 8h): input biases, then recurrent
    hidden = r.shape[1]

    def torch_gates(matrix: np.ndarray) -> np.ndarray:  # (..., 4h) iofc -> (4h, ...) ifgo
        chunks = np.split(matrix, 4, axis=-1)
        return np.concatenate([chunks[g] for g in GATES_TO_TORCH], axis=-1).T

    tensors = {}
    for direction in range(w.shape[0]):
        suffix = "_l0" + ("_reverse" if direction else "")
        tensors["weight_ih" + suffix] = torch_gates(w[direction])
        tensors["weight_hh" + suffix] = torch_gates(r[direction])
        tensors["bias_ih" + suffix] = torch_gates(b[direction, : 4 * hidden])
        tensors["bias_hh" + suffix] = torch_gates(b[direction, 4 * hidden :])
    return tensors


def _weight(graph: Graph, node: Any) -> tuple[str, np.ndarray] | None:
    """The weight initializer ``node`` computes with and its float value in torch's layout."""
    op, inputs = node.op_type, list(node.input)
    if op == "ConvInteger" and graph.is_initializer(inputs[1]):
        zero_point = graph.array(inputs[3]) if len(inputs) > 3 and inputs[3] else np.zeros(1)
        value = dequantize(graph.array(inputs[1]), zero_point, _scale_of(graph, inputs[1]), 0)
        return inputs[1], value
    if op == "MatMulInteger" and graph.is_initializer(inputs[1]):
        zero_point = graph.array(inputs[3]) if len(inputs) > 3 and inputs[3] else np.zeros(1)
        value = dequantize(graph.array(inputs[1]), zero_point, _scale_of(graph, inputs[1]), 1)
        return inputs[1], value.T
    if op in ("Conv", "ConvTranspose") and graph.is_initializer(inputs[1]):
        return inputs[1], graph.array(inputs[1]).astype(np.float32)
    if op == "MatMul" and graph.is_initializer(inputs[1]):
        return inputs[1], graph.array(inputs[1]).astype(np.float32).T
    if op == "Gather" and graph.is_initializer(inputs[0]):
        after = graph.consumers.get(node.output[0], [])
        dequant = [n for n in after if n.op_type == "DequantizeLinear"]
        if len(dequant) == 1 and inputs[0].endswith("_quantized"):
            scale, zero_point = dequant[0].input[1], dequant[0].input[2]
            quantized = graph.array(inputs[0])
            value = dequantize(quantized, graph.array(zero_point), graph.array(scale), 0)
            return inputs[0], value
    return None


def find_weights(graph: Graph) -> list[Found]:
    """Every weight-using node's weights, with the module (or candidates) they belong to."""
    scopes = ScopeMap()
    named: list[Found] = []
    unnamed: list[tuple[Any, dict[str, np.ndarray]]] = []
    seen: set[str] = set()
    for node in graph.nodes:
        if node.op_type == "DynamicQuantizeLSTM":
            unnamed.append((node, _lstm(graph, node)))
            continue
        weight = _weight(graph, node)
        if weight is None or weight[0] in seen or OUTSIDE_KMODEL.match(weight[0]):
            continue  # (seen: ALBERT's one layer is called 12 times)
        name, value = weight
        seen.add(name)
        module = _own_name(name) or _bias_module(graph, node)
        if module is None:
            unnamed.append((node, {"weight": value}))
            continue
        scopes.learn(_scope(node), module)
        named.append(Found(node.name, {"weight": value}, frozenset([module])))
    return named + [
        Found(node.name, tensors, frozenset(scopes.candidates(_scope(node))))
        for node, tensors in unnamed
    ]
