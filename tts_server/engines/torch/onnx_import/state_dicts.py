"""Kokoro-82M's PyTorch checkpoint, read back from its int8 ONNX export.

``convert`` places every weight ``graph_weights`` finds into ``KModel``'s per-part state
dicts, keeping the one module whose parameter has that name and shape.

Weight-norm convolutions were folded by the export (``g * v / |v|``): the folded weight becomes
``weight_v`` and its norm ``weight_g``, which recomputes it exactly, so the checkpoint has the
keys ``KModel`` (and its strict load) expects. Two groups of parameters are not in the graph,
each for a stated reason (``IDENTITY_RULES``); any other parameter not found fails the import,
listing every one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from tts_server.engines.torch.kmodel import PARTS
from tts_server.engines.torch.onnx_import.graph_weights import Graph, ImportFailure, find_weights

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
Shapes = Mapping[str, Mapping[str, tuple[int, ...]]]
StateDicts = dict[str, dict[str, np.ndarray]]


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
