"""Reading Kokoro's ONNX graph: where its durations are, a model that outputs them, the
sessions' options, and nodes put in an order a graph edit can run."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

from tts_server.engines.base import EngineError
from tts_server.engines.packaged import PACKAGE_HINT


def duration_output(graph: Any) -> str:
    """The name of the per-token frame-count tensor in a Kokoro ONNX graph.

    Kokoro's forward computes ``round(sum(sigmoid(duration_proj)) / speed)``, clips it to at
    least 1 and casts it to integers: found here as the ``Div`` by the graph input ``speed``,
    then ``Round``, ``Clip``, ``Cast``. ``EngineError`` if the graph has no such chain.
    """
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def follow(name: str, op: str) -> list[str]:
        return [node.output[0] for node in consumers.get(name, []) if node.op_type == op]

    found = [
        cast
        for div in follow("speed", "Div")
        for rounded in follow(div, "Round")
        for clipped in follow(rounded, "Clip")
        for cast in follow(clipped, "Cast")
    ]
    if len(found) != 1:
        raise EngineError(
            "cannot find Kokoro's durations in the ONNX graph (Div by 'speed', Round, Clip, "
            f"Cast; found {len(found)} such chains): word timings need them"
        )
    return found[0]


def with_durations(model_path: Path) -> tuple[bytes, list[str]]:
    """The model at ``model_path`` with its durations as an output; the outputs to fetch.

    Those are the audio (the graph's first output) and the durations, in that order.
    """
    try:
        import onnx
    except ImportError as exc:
        raise EngineError(f"the onnx package is not installed; run: {PACKAGE_HINT}") from exc
    model = onnx.load(str(model_path))
    name = duration_output(model.graph)
    if name not in {output.name for output in model.graph.output}:
        model.graph.output.append(
            onnx.helper.make_tensor_value_info(name, onnx.TensorProto.INT64, None)
        )
    return model.SerializeToString(), [model.graph.output[0].name, name]


def session_options(ort: Any, threads: int | None, spinning: bool) -> Any:
    """onnxruntime session options: ``threads`` intra-op threads (None: one per core), which
    busy-wait for work between operators only with ``spinning`` (docs/tts_server.md, "The
    engine's threads": on shared cores, spinning threads take the time the work needs)."""
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return options


def toposorted(nodes: list[Any], ready: set[str]) -> list[Any]:
    """``nodes`` in an order where every input is ready before its consumer (Kahn)."""
    waiting: dict[str, list[int]] = collections.defaultdict(list)
    missing = []
    for i, node in enumerate(nodes):
        need = {name for name in node.input if name and name not in ready}
        missing.append(len(need))
        for name in need:
            waiting[name].append(i)
    queue = collections.deque(i for i, count in enumerate(missing) if count == 0)
    order = []
    while queue:
        node = nodes[queue.popleft()]
        order.append(node)
        for name in node.output:
            for i in waiting.pop(name, []):
                missing[i] -= 1
                if missing[i] == 0:
                    queue.append(i)
    if len(order) != len(nodes):
        raise EngineError("the decoder graph edit left a cycle or a dangling input")
    return order
