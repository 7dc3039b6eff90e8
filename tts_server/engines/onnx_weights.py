"""Kokoro-82M's PyTorch weights, read back from its int8 ONNX export.

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
named neighbours give that scope (a bias-free ``conv1x1``, the LSTMs). A candidate counts only
if ``KModel`` has a parameter of that name and shape.

Weight-norm convolutions were folded by the export (``g * v / |v|``): the folded weight becomes
``weight_v`` and its norm ``weight_g``, which recomputes it exactly, so the checkpoint has the
keys ``KModel`` (and its strict load) expects. Two groups of parameters are not in the graph,
each for a stated reason (``IDENTITY_RULES``); any other parameter not found fails the import,
listing every one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tts_server.engines.base import EngineError

PARTS = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
# The export's module prefix of each KModel part.
ONNX_PREFIX = {
    "bert": "encoder.bert.",
    "bert_encoder": "encoder.bert_encoder.",
    "predictor": "encoder.predictor.",
    "text_encoder": "encoder.text_encoder.",
    "decoder": "decoder.decoder.",
}
# Parameters the graph does not hold, with the value that computes what the graph computes.
IDENTITY_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    (
        ("decoder", "predictor"),
        re.compile(r"(^|\.)norm\.(weight|bias)$"),
        "AdaIN's InstanceNorm affine: the graph normalizes with no affine, i.e. weight 1, bias 0",
    ),
    (
        ("bert",),
        re.compile(r"^pooler\.(weight|bias)$"),
        "ALBERT's pooler: kokoro uses the hidden states only, so the export dropped it (zeros)",
    ),
)
# Weights of the export's own iSTFT (a fixed ConvTranspose basis): not parameters; KModel's
# TorchSTFT computes the same inverse transform with torch.istft.
OUTSIDE_KMODEL = re.compile(r"^decoder\.decoder\.generator\.stft\.")
GATES_TO_TORCH = (0, 2, 3, 1)  # ONNX i, o, f, c -> PyTorch i, f, g, o
BIAS_QUANTIZATION = ("Reshape", "Cast", "Floor", "Div")  # a bias added in the int32 domain
HOPS_TO_BIAS = 3  # MatMulInteger -> Cast -> Mul (scale) -> Add(bias): the bias is this near
Shapes = Mapping[str, Mapping[str, tuple[int, ...]]]
StateDicts = dict[str, dict[str, np.ndarray]]


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


def _to_kmodel(module: str) -> tuple[str, str] | None:
    """An ONNX module path as (KModel part, module path inside it)."""
    for part, prefix in ONNX_PREFIX.items():
        if module == prefix[:-1]:
            return part, ""
        if module.startswith(prefix):
            return part, module[len(prefix) :]
    return None


def _key(inner: str, name: str) -> str:
    return f"{inner}.{name}" if inner else name


def _fits(shapes: Shapes, part: str, inner: str, tensors: Mapping[str, np.ndarray]) -> bool:
    """Whether KModel has these tensors at ``inner`` (a weight as ``weight`` or ``weight_v``)."""
    expected = shapes[part]
    for name, value in tensors.items():
        key = _key(inner, name)
        if key not in expected and name == "weight":
            key = _key(inner, "weight_v")
        if expected.get(key) != tuple(value.shape):
            return False
    return True


def _weight_norm(value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(weight_g, weight_v)`` whose weight norm (dim 0) is ``value``.

    A channel that int8 rounded to all zeros (up to 52 of a conv's 256 here) would give
    ``0 * 0 / |0|``, NaN: its ``weight_v`` is ones instead, with ``weight_g`` 0, which is 0.
    """
    norm = np.sqrt((value.reshape(value.shape[0], -1).astype(np.float64) ** 2).sum(axis=1))
    direction = value.copy()
    direction[norm == 0] = 1.0
    return norm.astype(np.float32).reshape(-1, *([1] * (value.ndim - 1))), direction


def _place(
    state: StateDicts, shapes: Shapes, part: str, inner: str, tensors: dict[str, np.ndarray]
) -> list[str]:
    """Put ``tensors`` under ``part``/``inner`` (a weight-norm weight as g and v); returns the
    keys that were already filled (two nodes claiming one module)."""
    placed: dict[str, np.ndarray] = {}
    for name, value in tensors.items():
        key = _key(inner, name)
        if key not in shapes[part] and name == "weight":
            placed[_key(inner, "weight_g")], placed[_key(inner, "weight_v")] = _weight_norm(value)
        else:
            placed[key] = value
    twice = [f"{part}.{key}" for key in placed if key in state[part]]
    state[part].update(placed)
    return twice


def convert(model_path: Path, shapes: Shapes) -> StateDicts:
    """``{part: state_dict}`` (float32 NumPy) for a ``KModel`` whose parameter shapes are
    ``shapes``, read from the ONNX model at ``model_path``.

    ``ImportFailure`` lists every parameter it could not fill, and every weight whose module
    it could not place.
    """
    try:
        import onnx
    except ImportError as exc:
        raise ImportFailure("the onnx package is needed to import the ONNX weights") from exc
    try:
        graph = Graph(onnx.load(str(model_path)))
    except Exception as exc:  # onnx raises DecodeError, OSError, ... on a bad file
        raise ImportFailure(f"cannot read the ONNX model {model_path}: {exc}") from exc
    state: StateDicts = {part: {} for part in PARTS}
    problems: list[str] = []
    for found in find_weights(graph):
        fitting = {
            placed
            for module in found.modules
            if (placed := _to_kmodel(module)) is not None and _fits(shapes, *placed, found.tensors)
        }
        if len(fitting) != 1:
            problems.append(
                f"{found.node}: {len(fitting)} KModel modules fit "
                f"(candidates: {', '.join(sorted(found.modules)) or 'none'})"
            )
            continue
        twice = _place(state, shapes, *fitting.pop(), found.tensors)
        if twice:
            problems.append(f"{found.node}: {', '.join(twice)} filled by two nodes")
    _named_tensors(graph, shapes, state)
    _identities(shapes, state)
    missing = [f"{part}.{key}" for part in PARTS for key in shapes[part] if key not in state[part]]
    if missing or problems:
        raise ImportFailure(
            f"{model_path} does not yield every KModel parameter: "
            f"{len(missing)} missing ({', '.join(missing) or 'none'}); "
            f"{len(problems)} unplaced weights ({'; '.join(problems) or 'none'})"
        )
    return state


def _named_tensors(graph: Graph, shapes: Shapes, state: StateDicts) -> None:
    """Float initializers that kept their KModel names (biases, norms, Snake alphas, ...)."""
    for part, prefix in ONNX_PREFIX.items():
        for key, shape in shapes[part].items():
            if key in state[part]:
                continue
            name = prefix + key
            if graph.is_initializer(name):
                value = graph.array(name).astype(np.float32)
                if tuple(value.shape) == shape:
                    state[part][key] = value


def _identities(shapes: Shapes, state: StateDicts) -> None:
    """The parameters ``IDENTITY_RULES`` explain, where the graph did not fill them."""
    for parts, pattern, _reason in IDENTITY_RULES:
        for part in parts:
            for key, shape in shapes[part].items():
                if key in state[part] or not pattern.search(key):
                    continue
                fill = np.ones if key.endswith("norm.weight") else np.zeros
                state[part][key] = fill(shape, dtype=np.float32)


def parameter_shapes(model: Any) -> dict[str, dict[str, tuple[int, ...]]]:
    """``{part: {key: shape}}`` of a ``KModel``'s state dicts."""
    return {
        part: {key: tuple(value.shape) for key, value in getattr(model, part).state_dict().items()}
        for part in PARTS
    }
