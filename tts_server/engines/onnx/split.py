"""The int8 Kokoro ONNX graph cut in two, so that its decoder can run over windows of frames.

``split_graph`` cuts the packaged graph into a text side (tokens, style, speed -> the aligned
text features, the F0 and energy curves, the harmonic source and the durations) and a decoder
(those -> audio). The cut is after the harmonic source: the source's phase is a cumulative sum
over the whole sentence, so it is computed once, on the text side, and each window is fed its
slice (the phase stays continuous across windows). The export has no random nodes (no noise,
zero initial phases): both halves are deterministic and together equal the whole graph.

The decoder is not local in two ways: its 54 instance norms take their statistics over the
whole time axis, and its 68 ``DynamicQuantizeLinear`` nodes take their int8 range from the
whole tensor. ``split_graph`` rewrites both (``_pool_statistics``) to pool the window's own
statistics with a prior fed as inputs (``Stats``): a mean, variance and count per norm, a low
and high per quantizer. The decoder takes the graph's ``style`` input as it is (it slices the
rows it uses itself, in a node the two halves share). A decoder whose statistics over time
take any other form is refused (``norms.norm_sites``).
With a zero prior a window decodes exactly as the original graph; the pooled statistics come
back as outputs, to carry to the next window (running statistics) or to reuse (a fixed prior).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tts_server.engines.base import EngineError
from tts_server.engines.onnx.graph import duration_output, session_options, toposorted
from tts_server.engines.onnx.norms import norm_sites
from tts_server.engines.windows import SAMPLES_PER_FRAME, Window, WindowPlan

ASR = "/encoder/MatMul_1_output_0"  # aligned text features (1, 512, frames)
F0 = "/encoder/Reshape_output_0"  # F0 curve (1, 2 * frames)
ENERGY = "/encoder/Reshape_1_output_0"  # energy curve (1, 2 * frames)
SOURCE_OP = "Tanh"  # the harmonic source's last node: (1, frames * 600, 1)
STEPS_PER_FRAME = 2  # F0 and energy run at twice the frame rate


@dataclass(frozen=True)
class SplitGraphs:
    """The text side and the (stat-pooling) decoder, and the names of the tensors between."""

    text: Any  # onnx.ModelProto
    decoder: Any  # onnx.ModelProto
    source: str
    durations: str
    stat_names: tuple[str, ...]  # the decoder's prior inputs, in the order of its extra outputs


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:
        raise EngineError("the onnx package is not installed; run: pip install onnx") from exc
    return onnx


def _reachable(graph: Any, stop: set[str], outputs: Iterable[str]) -> list[Any]:
    """The nodes that ``outputs`` depend on, not looking past ``stop``, in graph order."""
    producer = {name: i for i, node in enumerate(graph.node) for name in node.output}
    seen: set[int] = set()
    stack = list(outputs)
    while stack:
        name = stack.pop()
        if name in stop or name not in producer or producer[name] in seen:
            continue
        seen.add(producer[name])
        stack.extend(i for i in graph.node[producer[name]].input if i)
    return [graph.node[i] for i in sorted(seen)]


def _subgraph(model: Any, inputs: list[str], outputs: dict[str, int], name: str) -> Any:
    """A model of the nodes between ``inputs`` and ``outputs`` (name -> element type)."""
    onnx = _onnx()
    helper = onnx.helper
    graph = model.graph
    nodes = _reachable(graph, set(inputs), outputs)
    used = {i for node in nodes for i in node.input}
    declared = {value.name: value for value in graph.input}
    sub = helper.make_graph(
        nodes,
        name,
        [
            declared.get(i) or helper.make_tensor_value_info(i, onnx.TensorProto.FLOAT, None)
            for i in inputs
        ],
        [helper.make_tensor_value_info(o, kind, None) for o, kind in outputs.items()],
        [tensor for tensor in graph.initializer if tensor.name in used],
    )
    return helper.make_model(sub, opset_imports=model.opset_import, ir_version=model.ir_version)


def split_graph(model: Any, durations: str) -> SplitGraphs:
    """Cut a Kokoro ONNX model into its text side and a stat-pooling decoder."""
    onnx = _onnx()
    graph = model.graph
    tanh = [node.output[0] for node in graph.node if node.op_type == SOURCE_OP]
    produced = {name for node in graph.node for name in node.output}
    missing = [name for name in (ASR, F0, ENERGY) if name not in produced]
    if len(tanh) != 1 or missing or graph.output[0].name != "audio":
        raise EngineError(
            f"not the Kokoro int8 ONNX graph this split knows ({len(tanh)} Tanh nodes, "
            f"missing {missing}, first output {graph.output[0].name!r})"
        )
    source = tanh[0]
    float_type, int_type = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64
    text_outputs = {ASR: float_type, F0: float_type, ENERGY: float_type, source: float_type}
    text = _subgraph(
        model, ["tokens", "style", "speed"], {**text_outputs, durations: int_type}, "text"
    )
    decoder = _subgraph(model, [ASR, F0, ENERGY, "style", source], {"audio": float_type}, "decoder")
    stat_names = _pool_statistics(decoder)
    return SplitGraphs(text, decoder, source, durations, stat_names)


Pooling = tuple[list[Any], list[str], list[str]]  # nodes added, prior inputs, pooled outputs


def _pool_statistics(decoder: Any) -> tuple[str, ...]:
    """Rewrite ``decoder`` in place to pool its norms' and quantizers' statistics with a prior.

    Norm ``k``: inputs ``norm{k}.mean``/``.var`` ``(1, C, 1)`` and ``.n`` ``(1,)`` (the
    prior's frames at that layer's rate); the pooled mean is the count-weighted mean, the
    pooled variance the parallel-variance formula. Quantizer ``k``: inputs ``quant{k}.low``/
    ``.high`` (scalars); the range is their min/max with the window's (and with 0, as
    ``DynamicQuantizeLinear``), then the same scale and zero point as that op. The pooled
    values are added as outputs, after the audio, in the order of the returned input names.
    """
    onnx = _onnx()
    helper, kind = onnx.helper, onnx.TensorProto
    graph = decoder.graph
    norms, norm_names, norm_outputs = _pool_norms(graph, helper, kind)
    quants, quant_names, quant_outputs = _pool_quantizers(graph, helper, kind)
    names, outputs = norm_names + quant_names, norm_outputs + quant_outputs
    kept = [node for node in graph.node if node.op_type != "DynamicQuantizeLinear"]
    ready = {v.name for v in graph.input} | {t.name for t in graph.initializer} | set(names)
    graph.input.extend(helper.make_tensor_value_info(n, kind.FLOAT, None) for n in names)
    graph.output.extend(helper.make_tensor_value_info(n, kind.FLOAT, None) for n in outputs)
    order = toposorted(kept + norms + quants, ready)
    del graph.node[:]
    graph.node.extend(order)
    return tuple(names)


def _pool_norms(graph: Any, helper: Any, kind: Any) -> Pooling:
    """Each instance norm's mean and variance pooled with the prior's (``_pool_statistics``)."""
    make = helper.make_node
    added: list[Any] = []
    names: list[str] = []
    outputs: list[str] = []
    for k, (mean, var) in enumerate(norm_sites(graph)):
        p = f"norm{k}"
        x, pooled_mean, pooled_var = mean.input[0], mean.output[0], var.output[0]
        mean.output[0], var.output[0] = f"{p}/own_mean", f"{p}/own_var"
        pm, pv, pn = f"{p}.mean", f"{p}.var", f"{p}.n"
        added += [
            make("Shape", [x], [f"{p}/len"], start=-1),
            make("Cast", [f"{p}/len"], [f"{p}/own_n"], to=kind.FLOAT),
            make("Add", [pn, f"{p}/own_n"], [f"{p}/n"]),
            make("Mul", [pn, pm], [f"{p}/prior_sum"]),
            make("Mul", [f"{p}/own_n", f"{p}/own_mean"], [f"{p}/own_sum"]),
            make("Add", [f"{p}/prior_sum", f"{p}/own_sum"], [f"{p}/sum"]),
            make("Div", [f"{p}/sum", f"{p}/n"], [pooled_mean]),
            # own_var is already centred on the pooled mean: add the prior's spread about it
            make("Sub", [pm, pooled_mean], [f"{p}/shift"]),
            make("Mul", [f"{p}/shift", f"{p}/shift"], [f"{p}/shift2"]),
            make("Add", [pv, f"{p}/shift2"], [f"{p}/prior_m2"]),
            make("Mul", [pn, f"{p}/prior_m2"], [f"{p}/prior_ss"]),
            make("Mul", [f"{p}/own_n", f"{p}/own_var"], [f"{p}/own_ss"]),
            make("Add", [f"{p}/prior_ss", f"{p}/own_ss"], [f"{p}/ss"]),
            make("Div", [f"{p}/ss", f"{p}/n"], [pooled_var]),
        ]
        names += [pm, pv, pn]
        outputs += [pooled_mean, pooled_var, f"{p}/n"]
    return added, names, outputs


def _pool_quantizers(graph: Any, helper: Any, kind: Any) -> Pooling:
    """Each ``DynamicQuantizeLinear``'s range pooled with the prior's, as a ``QuantizeLinear``
    after nodes that compute its scale and zero point (``_pool_statistics``)."""
    make = helper.make_node
    added: list[Any] = []
    names: list[str] = []
    outputs: list[str] = []
    graph.initializer.extend(
        [
            helper.make_tensor("quant/zero", kind.FLOAT, [], [0.0]),
            helper.make_tensor("quant/levels", kind.FLOAT, [], [255.0]),
        ]
    )
    quantizers = [node for node in graph.node if node.op_type == "DynamicQuantizeLinear"]
    for k, node in enumerate(quantizers):
        p = f"quant{k}"
        x, (y, scale, zero_point) = node.input[0], node.output
        added += [
            make("ReduceMin", [x], [f"{p}/own_low"], keepdims=0),
            make("ReduceMax", [x], [f"{p}/own_high"], keepdims=0),
            make("Min", [f"{p}/own_low", f"{p}.low", "quant/zero"], [f"{p}/low"]),
            make("Max", [f"{p}/own_high", f"{p}.high", "quant/zero"], [f"{p}/high"]),
            make("Sub", [f"{p}/high", f"{p}/low"], [f"{p}/range"]),
            make("Div", [f"{p}/range", "quant/levels"], [scale]),
            make("Div", [f"{p}/low", scale], [f"{p}/low_steps"]),
            make("Neg", [f"{p}/low_steps"], [f"{p}/zero_float"]),
            make("Clip", [f"{p}/zero_float", "quant/zero", "quant/levels"], [f"{p}/clipped"]),
            make("Round", [f"{p}/clipped"], [f"{p}/rounded"]),
            make("Cast", [f"{p}/rounded"], [zero_point], to=kind.UINT8),
            make("QuantizeLinear", [x, scale, zero_point], [y]),
        ]
        names += [f"{p}.low", f"{p}.high"]
        outputs += [f"{p}/low", f"{p}/high"]
    return added, names, outputs


Stats = dict[str, np.ndarray]  # a decoder prior (or pooled statistics), by input name
FIXED = 1e30  # a prior's weight that outweighs any window: its statistics are used as they are


def as_prior(stats: Stats, weight: float = FIXED) -> Stats:
    """``stats`` as a prior counting ``weight`` times its frames (``FIXED``: used as is)."""
    return {name: value * weight if name.endswith(".n") else value for name, value in stats.items()}


def average(runs: list[Stats]) -> Stats:
    """The statistics of several sentences pooled: as if decoded as one (ranges: the widest)."""
    if not runs:
        raise ValueError("average needs at least one sentence's statistics")
    out: Stats = {}
    for name in runs[0]:
        values = [run[name] for run in runs]
        if name.endswith(".low"):
            out[name] = np.asarray(np.min(values, axis=0), dtype=np.float32)
        elif name.endswith(".high"):
            out[name] = np.asarray(np.max(values, axis=0), dtype=np.float32)
        elif name.endswith(".n"):
            out[name] = np.asarray(np.sum(values, axis=0), dtype=np.float32)
    for name in [n.removesuffix(".mean") for n in runs[0] if n.endswith(".mean")]:
        counts = np.array([run[f"{name}.n"] for run in runs], dtype=np.float64)[:, :, None, None]
        means = np.array([run[f"{name}.mean"] for run in runs], dtype=np.float64)
        squares = np.array([run[f"{name}.var"] for run in runs], dtype=np.float64) + means**2
        total = counts.sum(axis=0)
        mean = (counts * means).sum(axis=0) / total
        out[f"{name}.mean"] = mean.astype(np.float32)
        variance = (counts * squares).sum(axis=0) / total - mean**2
        out[f"{name}.var"] = variance.astype(np.float32)
    return out


@dataclass(frozen=True)
class Features:
    """A sentence's text side: what the decoder needs, and the durations (word timings)."""

    asr: np.ndarray  # (1, 512, frames)
    f0: np.ndarray  # (1, 2 * frames)
    energy: np.ndarray  # (1, 2 * frames)
    source: np.ndarray  # (1, frames * SAMPLES_PER_FRAME, 1)
    style: np.ndarray  # (1, 256)
    durations: np.ndarray  # frames per token, pads included

    @property
    def frames(self) -> int:
        """The sentence's decoder frames."""
        return int(self.asr.shape[-1])

    def span(self, first: int, last: int) -> dict[str, np.ndarray]:
        """The decoder's feed for frames ``[first, last)``."""
        steps = slice(first * STEPS_PER_FRAME, last * STEPS_PER_FRAME)
        return {
            ASR: self.asr[:, :, first:last],
            F0: self.f0[:, steps],
            ENERGY: self.energy[:, steps],
            "style": self.style,
        }


def read_split_graph(path: Path) -> SplitGraphs:
    """Read the Kokoro ONNX model at ``path`` and cut it (``split_graph``)."""
    model = _onnx().load(str(path))
    return split_graph(model, duration_output(model.graph))


class SplitKokoro:
    """The two halves of a Kokoro ONNX model (``graphs``) on onnxruntime sessions (CPU)."""

    def __init__(
        self, graphs: SplitGraphs, threads: int | None = None, spinning: bool = False
    ) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise EngineError("onnxruntime is not installed") from exc
        options = session_options(ort, threads, spinning)
        providers = ["CPUExecutionProvider"]
        self._text = ort.InferenceSession(
            graphs.text.SerializeToString(), sess_options=options, providers=providers
        )
        self._decoder = ort.InferenceSession(
            graphs.decoder.SerializeToString(), sess_options=options, providers=providers
        )
        self._source = graphs.source
        self._text_outputs = [ASR, F0, ENERGY, graphs.source, graphs.durations]
        self.stat_names = graphs.stat_names

    @classmethod
    def load(cls, path: Path, threads: int | None = None, spinning: bool = False) -> SplitKokoro:
        """Read and split the model at ``path``."""
        return cls(read_split_graph(path), threads, spinning)

    def text(
        self, tokens: list[int], style: np.ndarray, speed: float, options: Any = None
    ) -> Features:
        """Run the text side over ``tokens`` (pads added here) with a ``(256,)`` style row.

        ``options`` (here and below): onnxruntime ``RunOptions``, e.g. to ``terminate`` a run.
        """
        style = np.asarray(style, dtype=np.float32).reshape(1, -1)
        feed = {
            "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
            "style": style,
            "speed": np.array([speed], dtype=np.float32),
        }
        asr, f0, energy, source, durations = self._text.run(
            self._text_outputs, feed, run_options=options
        )
        return Features(asr, f0, energy, source, style, np.asarray(durations).ravel())

    def neutral(self) -> Stats:
        """The prior that changes nothing: each window's own statistics, as the whole graph."""
        return {
            name: np.zeros((1, 1, 1) if name.endswith((".mean", ".var")) else (1,), np.float32)
            if name.startswith("norm")
            else np.zeros((), np.float32)
            for name in self.stat_names
        }

    def decode(
        self, features: Features, window: Window, prior: Stats | None = None, options: Any = None
    ) -> tuple[np.ndarray, Stats]:
        """The kept audio of ``window``, and the statistics pooled over it and ``prior``."""
        first, last = window.first, window.last
        feed = features.span(first, last)
        samples = slice(first * SAMPLES_PER_FRAME, last * SAMPLES_PER_FRAME)
        feed[self._source] = features.source[:, samples]
        feed.update(prior or self.neutral())
        audio, *stats = self._decoder.run(None, feed, run_options=options)
        audio = np.asarray(audio, dtype=np.float32).ravel()[window.kept_samples]
        return audio, dict(zip(self.stat_names, stats, strict=True))

    def whole(self, features: Features, options: Any = None) -> tuple[np.ndarray, Stats]:
        """The sentence decoded in one window: the whole graph's audio, and its statistics."""
        return self.decode(features, Window.whole(features.frames), None, options)

    def stream(
        self,
        features: Features,
        plan: WindowPlan,
        prior: Stats | None = None,
        running: bool = False,
        options: Any = None,
    ) -> Iterator[np.ndarray]:
        """Each window's kept audio, in order, as soon as it is decoded.

        Every window pools its statistics with ``prior`` (None: each window's own); with
        ``running``, a window's pooled statistics become the next window's prior.
        """
        stats = prior
        for window in plan.windows(features.frames):
            audio, pooled = self.decode(features, window, stats, options)
            if running:
                stats = pooled
            yield audio
