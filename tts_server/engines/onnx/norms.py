"""The decoder's instance norms as the split finds them in the graph, or its refusal.

Kokoro's export writes each instance norm out over time: ``ReduceMean`` of ``x`` over the time
axis, ``Sub``, ``Mul`` by itself, ``ReduceMean`` again, both keeping the dimension.
``norm_sites`` finds those pairs for ``split._pool_statistics`` to pool with a prior; a mean
over the channels alone is local to a frame and left as it is; any other statistic over time
(a mean over more axes or computed ones, a normalization op) is refused with an
``EngineError`` naming its node, since a window would not decode as the whole sentence.
"""

from __future__ import annotations

import collections
from typing import Any

from tts_server.engines.base import EngineError

TIME = 2  # the time axis of the decoder's (1, channels, frames) tensors (``split.ASR``'s)
NORM_OPS = ("InstanceNormalization", "GroupNormalization", "LayerNormalization")
POOLED = (
    "the split pools instance norms written out over time (ReduceMean over axis 2 of a "
    "(1, C, T) tensor, Sub, Mul by itself, ReduceMean over axis 2, both keepdims) and leaves "
    "means over the channels alone"
)


def _axes(node: Any, constants: dict[str, Any]) -> tuple[int, ...] | None:
    """The axes a ``ReduceMean`` averages, as written (``()``: all); None where the graph
    computes them."""
    from onnx import numpy_helper  # onnx is there: the graph was read with it

    if len(node.input) > 1 and node.input[1]:
        if node.input[1] not in constants:
            return None
        return tuple(numpy_helper.to_array(constants[node.input[1]]).ravel().tolist())
    return tuple(next((a.ints for a in node.attribute if a.name == "axes"), ()))


def norm_sites(graph: Any) -> list[tuple[Any, Any]]:
    """Each instance norm's two ``ReduceMean`` nodes: of ``x`` and of ``(x - mean) ** 2``,
    both over time (``TIME``), keeping the dimension.

    Means over the channels alone are local to a frame and left as they are; a graph whose
    means reach the time axis otherwise (other axes too, all, computed axes, no dimension
    kept, outside such a norm), or that has normalization ops (``NORM_OPS``, over time), is
    refused with an ``EngineError``: a window would not decode as the whole sentence.
    """
    for node in graph.node:
        if node.op_type in NORM_OPS:
            raise EngineError(
                f"cannot split this decoder: the {node.op_type} making {node.output[0]!r} "
                f"normalizes over time; {POOLED}"
            )
    consumers: dict[str, list[Any]] = collections.defaultdict(list)
    for node in graph.node:
        for name in set(node.input):
            consumers[name].append(node)

    def only(name: str, op: str) -> Any | None:
        found = [node for node in consumers[name] if node.op_type == op]
        return found[0] if len(found) == 1 else None

    means = _means(graph)

    def over_time(node: Any) -> bool:
        return means[node.output[0]] in (((TIME,), 1), ((TIME - 3,), 1))

    sites = []
    for mean in filter(over_time, (node for node in graph.node if node.output[0] in means)):
        centred = only(mean.output[0], "Sub")
        square = centred and only(centred.output[0], "Mul")
        var = square and only(square.output[0], "ReduceMean")
        if (
            var
            and over_time(var)
            and list(centred.input) == [mean.input[0], mean.output[0]]
            and square.input[0] == square.input[1]
        ):
            sites.append((mean, var))
    _refuse_other_means(means, {node.output[0] for site in sites for node in site})
    return sites


def _means(graph: Any) -> dict[str, tuple[tuple[int, ...] | None, int]]:
    """Each ``ReduceMean``'s output: the axes it averages (``_axes``) and its keepdims."""
    constants = {tensor.name: tensor for tensor in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute[0].name == "value":
            constants[node.output[0]] = node.attribute[0].t
    return {
        node.output[0]: (
            _axes(node, constants),
            next((a.i for a in node.attribute if a.name == "keepdims"), 1),
        )
        for node in graph.node
        if node.op_type == "ReduceMean"
    }


def _refuse_other_means(
    means: dict[str, tuple[tuple[int, ...] | None, int]], pooled: set[str]
) -> None:
    """``EngineError`` for a mean that reaches the time axis and is no pooled norm's."""
    for name, (written, kept) in means.items():
        local = written and all(a in (0, 1, -2, -3) for a in written)
        if not local and name not in pooled:
            what = {None: "axes computed in the graph", (): "all axes"}.get(
                written, f"axes {list(written or ())}"
            )
            raise EngineError(
                f"cannot split this decoder: the ReduceMean making {name!r} averages "
                f"{what} (keepdims={kept}); {POOLED}"
            )
