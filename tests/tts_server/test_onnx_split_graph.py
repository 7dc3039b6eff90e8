"""``split.py``'s contract on a tiny Kokoro-shaped graph (``tiny_onnx_graph.py``), real ONNX on
onnxruntime in milliseconds a test, so that mutation testing can run it for every mutant;
``test_onnx_split.py`` proves the same cut on the packaged model (seconds a test).

Each test splits the graph itself (the fixtures that call ``split.py`` are per test): mutmut
runs, for a mutant, only the tests it saw call the mutated function, and a shared fixture
would be seen only by the first test that asked for it.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.tts_server.tiny_onnx_graph import (
    HIDDEN,
    SOURCE,
    STYLE,
    TAPS,
    TinyKokoro,
    tiny_kokoro,
)
from tts_server.engines.base import EngineError
from tts_server.engines.onnx.norms import POOLED
from tts_server.engines.onnx.split import (
    ASR,
    ENERGY,
    F0,
    FIXED,
    Features,
    SplitKokoro,
    Stats,
    as_prior,
    average,
    duration_output,
    split_graph,
)
from tts_server.engines.windows import SAMPLES_PER_FRAME, Window, WindowPlan

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

TOKENS = [3, 5, 7, 1, 9, 2, 11, 4]
SPEED = 0.8  # 21 frames; 18 at speed 1
PLAN = WindowPlan(first=4, size=6, context=2, min_last=2)
STAT_NAMES = (
    *(f"norm{k}.{part}" for k in (0, 1) for part in ("mean", "var", "n")),
    *(f"quant{k}.{part}" for k in (0, 1) for part in ("low", "high")),
)
RATES = {"norm0": 1, "norm1": 2}  # each norm's steps per frame
Reference = Callable[[Window], tuple[np.ndarray, dict[str, np.ndarray]]]


@pytest.fixture(scope="module")
def tiny() -> TinyKokoro:
    return tiny_kokoro()


@pytest.fixture
def split(tiny: TinyKokoro) -> SplitKokoro:
    return SplitKokoro(split_graph(tiny.model, duration_output(tiny.model.graph)), threads=1)


@pytest.fixture(scope="module")
def style() -> np.ndarray:
    return np.random.default_rng(1).normal(size=STYLE).astype(np.float32)


@pytest.fixture
def features(split: SplitKokoro, style: np.ndarray) -> Features:
    return split.text(TOKENS, style, SPEED)


def reference_of(decoder: onnx.ModelProto, features: Features) -> Reference:
    """The unsplit ``decoder`` on a window's frames, sliced here: its audio and its ``TAPS``."""
    session = ort.InferenceSession(decoder.SerializeToString())

    def run(window: Window) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        a, b = window.first, window.last
        feed = {
            ASR: features.asr[:, :, a:b],
            F0: features.f0[:, 2 * a : 2 * b],
            ENERGY: features.energy[:, 2 * a : 2 * b],
            "style": features.style,
            SOURCE: features.source[:, a * SAMPLES_PER_FRAME : b * SAMPLES_PER_FRAME],
        }
        audio, *taps = session.run(None, feed)
        return audio, dict(zip(TAPS, taps, strict=True))

    return run


@pytest.fixture
def reference(tiny: TinyKokoro, features: Features) -> Reference:
    return reference_of(tiny.decoder, features)


def whole_graph(model: onnx.ModelProto, extra: dict[str, int]) -> ort.InferenceSession:
    """The unsplit graph with ``extra`` tensors (name -> element type) as outputs after the
    audio."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    value = onnx.helper.make_tensor_value_info
    copy.graph.output.extend(value(name, kind, None) for name, kind in extra.items())
    return ort.InferenceSession(copy.SerializeToString())


def test_text_side_and_decoder_equal_the_whole_graph(
    tiny: TinyKokoro, split: SplitKokoro, features: Features, style: np.ndarray
) -> None:
    durations = duration_output(tiny.model.graph)
    feed = {
        "tokens": np.array([[0, *TOKENS, 0]], dtype=np.int64),
        "style": style.reshape(1, -1),
        "speed": np.array([SPEED], dtype=np.float32),
    }
    extra = {durations: onnx.TensorProto.INT64, SOURCE: 1, ASR: 1, F0: 1, ENERGY: 1}
    audio, frames, source, *curves = whole_graph(tiny.model, extra).run(None, feed)
    assert not np.array_equal(frames.ravel(), split.text(TOKENS, style, 1.0).durations)  # speed
    np.testing.assert_array_equal(features.durations, frames.ravel())
    np.testing.assert_array_equal(features.source, source)  # the whole sentence's phase
    for got, want in zip((features.asr, features.f0, features.energy), curves, strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(features.style, feed["style"])
    again = split.text(TOKENS, [float(value) for value in style], SPEED)  # any array-like row
    assert again.style.dtype == np.float32
    np.testing.assert_array_equal(again.asr, features.asr)
    whole, _ = split.whole(features)
    np.testing.assert_allclose(whole, audio, rtol=0, atol=1e-6)
    assert features.frames == frames.sum() == features.asr.shape[-1] == 21
    assert features.f0.shape == features.energy.shape == (1, 2 * features.frames)
    assert whole.shape == (features.frames * SAMPLES_PER_FRAME,)


def test_the_halves_keep_the_models_opsets_and_quantizers_and_the_source_is_cut_once(
    tiny: TinyKokoro,
) -> None:
    model = tiny.model
    before = model.SerializeToString()
    durations = duration_output(model.graph)
    graphs = split_graph(model, durations)
    assert model.SerializeToString() == before  # the model given is left as it was
    text, decoder = graphs.text, graphs.decoder
    for half in (text, decoder):
        assert half.ir_version == model.ir_version
        assert list(half.opset_import) == list(model.opset_import)
    assert (graphs.source, graphs.durations, graphs.stat_names) == (SOURCE, durations, STAT_NAMES)
    inputs = {value.name: value.type.tensor_type.elem_type for value in text.graph.input}
    assert inputs == {"tokens": onnx.TensorProto.INT64, "style": 1, "speed": 1}
    outputs = {value.name: value.type.tensor_type.elem_type for value in text.graph.output}
    assert outputs == {ASR: 1, F0: 1, ENERGY: 1, SOURCE: 1, durations: onnx.TensorProto.INT64}
    assert [value.name for value in decoder.graph.input] == [
        ASR,
        F0,
        ENERGY,
        "style",
        SOURCE,
        *STAT_NAMES,
    ]
    assert decoder.graph.output[0].name == "audio"
    assert len(decoder.graph.output) == 1 + len(STAT_NAMES)
    ops = Counter(node.op_type for node in text.graph.node)
    assert ops["DynamicQuantizeLinear"] == ops["MatMulInteger"] == 1
    assert (ops["Tanh"], ops["Sin"], ops["Slice"]) == (1, 2, 1)  # the source, the style's slice
    ops = Counter(node.op_type for node in decoder.graph.node)
    assert ops["DynamicQuantizeLinear"] + ops["Tanh"] + ops["Sin"] + ops["CumSum"] == 0
    assert ops["QuantizeLinear"] == ops["ConvInteger"] == 2
    assert (ops["Slice"], ops["ReduceSum"]) == (1, 1)  # the style's slice; a near miss
    assert ops["ReduceMean"] == 2 * 2 + 3  # the norms', the near misses' kept
    text_weights = {t.name for t in text.graph.initializer}
    decoder_weights = {t.name for t in decoder.graph.initializer}
    assert "embedding" in text_weights and "post.w" not in text_weights
    assert "post.w" in decoder_weights and "embedding" not in decoder_weights


def own_statistics(taps: dict[str, np.ndarray]) -> Stats:
    """What a window's own frames give each norm and quantizer, computed here."""
    stats: Stats = {}
    for name in ("norm0", "norm1"):
        x = taps[name].astype(np.float64)
        stats[f"{name}.mean"] = x.mean(axis=-1, keepdims=True)
        stats[f"{name}.var"] = x.var(axis=-1, keepdims=True)
        stats[f"{name}.n"] = np.array([x.shape[-1]], dtype=np.float32)
    for name in ("quant0", "quant1"):
        stats[f"{name}.low"] = np.array(min(taps[name].min(), 0.0), dtype=np.float32)
        stats[f"{name}.high"] = np.array(max(taps[name].max(), 0.0), dtype=np.float32)
    return stats


def assert_statistics(got: Stats, expected: Stats) -> None:
    assert list(got) == list(STAT_NAMES)
    for name in STAT_NAMES:
        assert got[name].dtype == np.float32, name
        assert got[name].shape == np.shape(expected[name]), name
        np.testing.assert_allclose(got[name], expected[name], rtol=2e-6, atol=1e-6, err_msg=name)


def test_a_window_with_a_zero_prior_decodes_as_the_whole_graph_on_its_frames(
    split: SplitKokoro, features: Features, reference: Reference
) -> None:
    windows = PLAN.windows(features.frames)
    assert len(windows) > 3 and windows[0].left == windows[-1].right == 0
    assert windows[1].left and windows[1].right  # context both sides
    for window in [*windows, Window.whole(features.frames)]:
        audio, stats = split.decode(features, window)
        expected, taps = reference(window)
        np.testing.assert_allclose(audio, expected[window.kept_samples], rtol=0, atol=1e-6)
        assert audio.size == window.frames * SAMPLES_PER_FRAME
        assert_statistics(stats, own_statistics(taps))
        for name, rate in RATES.items():
            assert stats[f"{name}.n"][0] == rate * window.decoded_frames
        neutral, _ = split.decode(features, window, split.neutral())
        np.testing.assert_array_equal(neutral, audio)


def test_the_neutral_prior_is_zeros_that_broadcast_to_the_statistics_shapes(
    split: SplitKokoro,
) -> None:
    neutral = split.neutral()
    assert split.stat_names == STAT_NAMES == tuple(neutral)
    for name, value in neutral.items():
        assert value.dtype == np.float32 and not value.any(), name
        shape = {"mean": (1, HIDDEN, 1), "var": (1, HIDDEN, 1), "n": (1,)}.get(
            name.rpartition(".")[2], ()
        )
        assert np.broadcast_shapes(value.shape, shape) == shape, name


def test_statistics_pooled_with_a_prior_are_those_of_the_frames_as_one_run(
    split: SplitKokoro, features: Features, reference: Reference
) -> None:
    # the whole sentence's inputs span the window's: the first quantizer's range stays its
    # own, so the first norm's input is the whole graph's (the second's reads the first norm)
    first, whole = Window(0, 6, 0, 2), Window.whole(features.frames)
    _, prior = split.decode(features, first)
    _, pooled = split.decode(features, whole, prior)
    taps = [reference(window)[1] for window in (first, whole)]
    both = own_statistics({name: np.concatenate([t[name] for t in taps], -1) for name in TAPS})
    for name in ("norm0.mean", "norm0.var", "norm0.n", "quant0.low", "quant0.high"):
        np.testing.assert_allclose(pooled[name], both[name], rtol=2e-6, atol=1e-6, err_msg=name)
    assert pooled["norm1.n"] == prior["norm1.n"] + 2 * whole.decoded_frames
    assert pooled["quant1.low"] == 0 and pooled["quant1.high"] >= prior["quant1.high"]


@pytest.mark.parametrize(("low", "high"), [(-100.0, 0.5), (-0.1, 100.0)])
def test_a_quantizer_takes_the_widest_of_its_range_and_the_priors(
    split: SplitKokoro, features: Features, low: float, high: float
) -> None:
    window = Window(6, 12, 2, 2)
    audio, own = split.decode(features, window)
    assert own["quant0.low"] < -0.1 and own["quant0.high"] > 0.5
    prior = split.neutral() | {
        "quant0.low": np.array(low, np.float32),
        "quant0.high": np.array(high, np.float32),
    }
    widened, pooled = split.decode(features, window, prior)
    assert pooled["quant0.low"] == min(low, own["quant0.low"])
    assert pooled["quant0.high"] == max(high, own["quant0.high"])
    assert np.abs(widened - audio).max() > 1e-3  # the coarser steps reach the audio
    ranged = split.neutral() | {"quant0.low": own["quant0.low"], "quant0.high": own["quant0.high"]}
    np.testing.assert_array_equal(split.decode(features, window, ranged)[0], audio)


def test_running_statistics_carry_from_window_to_window(
    split: SplitKokoro, features: Features
) -> None:
    _, start = split.decode(features, Window(0, 6, 0, 2))
    for prior in (None, start):
        expected, stats = [], prior
        for window in PLAN.windows(features.frames):
            audio, stats = split.decode(features, window, stats)
            expected.append(audio)
        running = list(split.stream(features, PLAN, prior, running=True))
        assert len(running) == len(expected)
        for got, want in zip(running, expected, strict=True):
            np.testing.assert_array_equal(got, want)
        alone = list(split.stream(features, PLAN, prior))
        assert any(not np.array_equal(a, b) for a, b in zip(alone, running, strict=True))
    decoded = sum(window.decoded_frames for window in PLAN.windows(features.frames))
    assert stats["norm0.n"] == start["norm0.n"] + decoded  # every window's frames, counted


def test_a_fixed_prior_is_used_for_every_window_and_the_sentences_own_decodes_it_whole(
    split: SplitKokoro, features: Features
) -> None:
    whole, stats = split.whole(features)
    prior = as_prior(stats)
    windows = PLAN.windows(features.frames)
    chunks = list(split.stream(features, PLAN, prior))
    assert [chunk.size for chunk in chunks] == [w.frames * SAMPLES_PER_FRAME for w in windows]
    for chunk, window in zip(chunks, windows, strict=True):
        audio, pooled = split.decode(features, window, prior)
        np.testing.assert_array_equal(chunk, audio)
        np.testing.assert_allclose(pooled["norm1.mean"], stats["norm1.mean"], rtol=1e-6)
    np.testing.assert_allclose(np.concatenate(chunks), whole, rtol=0, atol=1e-6)
    alone = np.concatenate(list(split.stream(features, PLAN)))
    assert np.abs(alone - whole).max() > 0.1  # each window's own statistics: not the sentence


def test_a_sentence_shorter_than_the_first_window_is_decoded_whole(
    split: SplitKokoro, features: Features
) -> None:
    plan = WindowPlan(first=features.frames + 1, size=40, context=8)
    (chunk,) = split.stream(features, plan)
    np.testing.assert_array_equal(chunk, split.whole(features)[0])


RUNS: dict[str, Callable[[SplitKokoro, Features, object], object]] = {
    "text": lambda split, features, options: split.text(TOKENS, features.style, SPEED, options),
    "decode": lambda split, features, options: split.decode(
        features, Window(0, 4, 0, 2), None, options
    ),
    "whole": lambda split, features, options: split.whole(features, options),
    "stream": lambda split, features, options: next(
        split.stream(features, PLAN, None, False, options)
    ),
}


@pytest.mark.parametrize("run", RUNS)
def test_run_options_reach_every_run(split: SplitKokoro, features: Features, run: str) -> None:
    stop = ort.RunOptions()
    stop.terminate = True
    with pytest.raises(Exception, match="terminate flag"):
        RUNS[run](split, features, stop)


def rename_output(graph: onnx.GraphProto, name: str) -> None:
    """The node that made ``name`` makes another tensor (its consumers left dangling)."""
    node = next(node for node in graph.node if name in node.output)
    node.output[list(node.output).index(name)] = f"{name}/renamed"


def add_tanh(graph: onnx.GraphProto) -> None:
    graph.node.append(onnx.helper.make_node("Tanh", [ASR], ["/another/Tanh"]))


def drop_tanh(graph: onnx.GraphProto) -> None:
    next(node for node in graph.node if node.op_type == "Tanh").op_type = "Sigmoid"


def rename_audio(graph: onnx.GraphProto) -> None:
    graph.output[0].name = "wav"


def rename_text_features(graph: onnx.GraphProto) -> None:
    for name in (ENERGY, ASR, F0):
        rename_output(graph, name)


REFUSED = {  # an edit of the tiny graph, and what the refusal says of the graph
    "a second Tanh": (add_tanh, "2 Tanh nodes, missing [], first output 'audio'"),
    "no Tanh": (drop_tanh, "0 Tanh nodes, missing [], first output 'audio'"),
    "no ASR": (
        lambda g: rename_output(g, ASR),
        f"1 Tanh nodes, missing ['{ASR}'], first output 'audio'",
    ),
    "no F0": (
        lambda g: rename_output(g, F0),
        f"1 Tanh nodes, missing ['{F0}'], first output 'audio'",
    ),
    "no energy": (
        lambda g: rename_output(g, ENERGY),
        f"1 Tanh nodes, missing ['{ENERGY}'], first output 'audio'",
    ),
    "none of the three": (
        rename_text_features,
        f"1 Tanh nodes, missing ['{ASR}', '{F0}', '{ENERGY}'], first output 'audio'",
    ),
    "another first output": (rename_audio, "1 Tanh nodes, missing [], first output 'wav'"),
}


@pytest.mark.parametrize("edit", REFUSED)
def test_a_graph_that_is_not_kokoro_is_refused_saying_why(tiny: TinyKokoro, edit: str) -> None:
    change, why = REFUSED[edit]
    said = f"not the Kokoro int8 ONNX graph this split knows ({why})"
    with pytest.raises(EngineError, match=f"^{re.escape(said)}$"):
        split_graph(edited(tiny.model, change), duration_output(tiny.model.graph))


def edited(model: onnx.ModelProto, change: Callable[[onnx.GraphProto], None]) -> onnx.ModelProto:
    """A copy of ``model`` with ``change`` made to its graph."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    change(copy.graph)
    return copy


def producer(graph: onnx.GraphProto, name: str) -> onnx.NodeProto:
    return next(node for node in graph.node if name in node.output)


NORM0, NORM1 = "/decoder/norm0", "/decoder/norm1"  # the tiny graph's two instance norms
MEAN, VAR = "ReduceMean_output_0", "ReduceMean_2_output_0"  # each norm's two means
GATE = "/decoder/gate"  # the near misses: means over the channels


def averaging(output: str, *axes: int) -> Callable[[onnx.GraphProto], None]:
    """The ``ReduceMean`` making ``output`` averages ``axes`` (none: all)."""

    def change(graph: onnx.GraphProto) -> None:
        node = producer(graph, output)
        del node.input[1:]
        if axes:
            name = f"{output}/axes"
            graph.initializer.append(onnx.numpy_helper.from_array(np.array(axes, np.int64), name))
            node.input.append(name)

    return change


def both(*changes: Callable[[onnx.GraphProto], None]) -> Callable[[onnx.GraphProto], None]:
    def change(graph: onnx.GraphProto) -> None:
        for each in changes:
            each(graph)

    return change


def computed_axes(graph: onnx.GraphProto) -> None:
    """norm0's mean takes its axes from a node, not a constant."""
    node = producer(graph, f"{NORM0}/{MEAN}")
    graph.node.append(onnx.helper.make_node("Identity", [node.input[1]], ["/computed/axes"]))
    node.input[1] = "/computed/axes"


def kept_no_dimension(graph: onnx.GraphProto) -> None:
    mean = producer(graph, f"{NORM0}/{MEAN}")
    next(a for a in mean.attribute if a.name == "keepdims").i = 0


def centred_elsewhere(graph: onnx.GraphProto) -> None:
    """norm0's difference is of the conv before its bias, not of the tensor averaged."""
    producer(graph, f"{NORM0}/Sub_output_0").input[0] = "/decoder/conv0/Mul_output_0"


def not_squared(graph: onnx.GraphProto) -> None:
    """norm0's difference is multiplied by the tensor averaged, not by itself."""
    producer(graph, f"{NORM0}/Mul_2_output_0").input[1] = TAPS["norm0"]


def normalized_first(op_type: str) -> Callable[[onnx.GraphProto], None]:
    """An ``op_type`` node (scale 1, bias 0) between norm0's input and its readers."""

    def change(graph: onnx.GraphProto) -> None:
        x = TAPS["norm0"]
        for node in graph.node:
            node.input[:] = [f"{x}/normalized" if name == x else name for name in node.input]
        weights = [("scale", np.ones), ("bias", np.zeros)]
        graph.initializer.extend(
            onnx.numpy_helper.from_array(make(HIDDEN).astype(np.float32), f"norm.{part}")
            for part, make in weights
        )
        graph.node.append(
            onnx.helper.make_node(op_type, [x, "norm.scale", "norm.bias"], [f"{x}/normalized"])
        )

    return change


NOT_POOLED = {  # an edit of the tiny graph, and what the refusal says of its decoder
    "a norm over time and the channels": (
        both(averaging(f"{NORM0}/{MEAN}", 1, 2), averaging(f"{NORM0}/{VAR}", 1, 2)),
        f"the ReduceMean making '{NORM0}/{MEAN}' averages axes [1, 2] (keepdims=1)",
    ),
    "a norm whose variance averages the channels": (
        averaging(f"{NORM0}/{VAR}", 1),
        f"the ReduceMean making '{NORM0}/{MEAN}' averages axes [2] (keepdims=1)",
    ),
    "a mean over time, centred and weighted, not squared": (
        averaging(f"{GATE}/ReduceMean_1_output_0", 2),
        f"the ReduceMean making '{GATE}/ReduceMean_1_output_0' averages axes [2] (keepdims=1)",
    ),
    "a mean over all axes": (
        averaging(f"{NORM1}/{MEAN}"),
        f"the ReduceMean making '{NORM1}/{MEAN}' averages all axes (keepdims=1)",
    ),
    "a mean over a 4-D tensor's last axis": (
        averaging(f"{GATE}/ReduceMean_2_output_0", 3),
        f"the ReduceMean making '{GATE}/ReduceMean_2_output_0' averages axes [3] (keepdims=1)",
    ),
    "axes computed in the graph": (
        computed_axes,
        f"the ReduceMean making '{NORM0}/{MEAN}' averages axes computed in the graph (keepdims=1)",
    ),
    "a mean over time that keeps no dimension": (
        kept_no_dimension,
        f"the ReduceMean making '{NORM0}/{MEAN}' averages axes [2] (keepdims=0)",
    ),
    "a mean of a product, not of a square": (
        not_squared,
        f"the ReduceMean making '{NORM0}/{MEAN}' averages axes [2] (keepdims=1)",
    ),
    "a difference from another tensor's mean": (
        centred_elsewhere,
        f"the ReduceMean making '{NORM0}/{MEAN}' averages axes [2] (keepdims=1)",
    ),
    **{
        op_type: (
            normalized_first(op_type),
            f"the {op_type} making '{TAPS['norm0']}/normalized' normalizes over time",
        )
        for op_type in ("InstanceNormalization", "GroupNormalization", "LayerNormalization")
    },
}


@pytest.mark.parametrize("edit", NOT_POOLED)
def test_a_decoder_whose_statistics_over_time_the_split_cannot_pool_is_refused_saying_which(
    tiny: TinyKokoro, edit: str
) -> None:
    change, why = NOT_POOLED[edit]
    said = f"cannot split this decoder: {why}; {POOLED}"
    with pytest.raises(EngineError, match=f"^{re.escape(said)}$"):
        split_graph(edited(tiny.model, change), duration_output(tiny.model.graph))


def from_a_constant_node(output: str, *axes: int) -> Callable[[onnx.GraphProto], None]:
    """The ``ReduceMean`` making ``output`` takes ``axes`` from a ``Constant`` node."""

    def change(graph: onnx.GraphProto) -> None:
        value = onnx.numpy_helper.from_array(np.array(axes, np.int64))
        graph.node.append(onnx.helper.make_node("Constant", [], [f"{output}/axes"], value=value))
        producer(graph, output).input[1] = f"{output}/axes"

    return change


def default_keepdims(graph: onnx.GraphProto) -> None:
    """Every ``ReduceMean`` keeps the dimension by ONNX's default, not by an attribute."""
    for node in graph.node:
        if node.op_type == "ReduceMean":
            kept = [a for a in node.attribute if a.name != "keepdims"]
            del node.attribute[:]
            node.attribute.extend(kept)


def test_axes_written_as_an_attribute_are_read_as_before_opset_18(tiny: TinyKokoro) -> None:
    """A ``ReduceMean`` of opset 17 or before names its axes in an attribute: the split reads
    them there (only the graph is split here: onnxruntime runs opset 18's form)."""

    def attribute_axes(graph: onnx.GraphProto) -> None:
        for node in graph.node:
            if node.op_type == "ReduceMean":
                written = onnx.numpy_helper.to_array(producer_tensor(graph, node.input[1]))
                del node.input[1:]
                node.attribute.append(onnx.helper.make_attribute("axes", written.tolist()))

    split = split_graph(edited(tiny.model, attribute_axes), duration_output(tiny.model.graph))
    assert split.stat_names == STAT_NAMES


def producer_tensor(graph: onnx.GraphProto, name: str) -> onnx.TensorProto:
    return next(tensor for tensor in graph.initializer if tensor.name == name)


def channel_norm(graph: onnx.GraphProto) -> None:
    """The gate's first near miss made a norm over the channels: its sum a mean."""
    producer(graph, f"{GATE}/ReduceSum_output_0").op_type = "ReduceMean"


@pytest.mark.parametrize(
    "change",
    [
        both(
            from_a_constant_node(f"{NORM1}/{MEAN}", -1),
            averaging(f"{NORM1}/{VAR}", -1),
            averaging(f"{GATE}/ReduceMean_1_output_0", -3, 1),
            averaging(f"{GATE}/ReduceMean_2_output_0", 0, -2),
        ),
        channel_norm,
        default_keepdims,
    ],
    ids=[
        "axes counted from the end, from a Constant node",
        "a norm over the channels",
        "keepdims left to its default",
    ],
)
def test_norms_over_time_are_pooled_however_written_and_means_over_channels_left_alone(
    tiny: TinyKokoro, style: np.ndarray, change: Callable[[onnx.GraphProto], None]
) -> None:
    model = edited(tiny.model, change)
    split = SplitKokoro(split_graph(model, duration_output(model.graph)), threads=1)
    assert split.stat_names == STAT_NAMES
    features = split.text(TOKENS, style, SPEED)
    reference = reference_of(edited(tiny.decoder, change), features)
    for window in PLAN.windows(features.frames):
        audio, stats = split.decode(features, window)
        expected, taps = reference(window)
        np.testing.assert_allclose(audio, expected[window.kept_samples], rtol=0, atol=1e-6)
        assert_statistics(stats, own_statistics(taps))
    _, prior = split.decode(features, Window(0, 6, 0, 2))
    pooled, _ = split.decode(features, Window(6, 12, 2, 2), prior)
    assert pooled.size == 6 * SAMPLES_PER_FRAME  # another window's statistics broadcast


def test_without_onnx_the_split_says_how_to_install_it(
    tiny: TinyKokoro, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny.model, str(path))
    monkeypatch.setitem(sys.modules, "onnx", None)
    said = r"^the onnx package is not installed; run: pip install onnx$"
    with pytest.raises(EngineError, match=said):
        split_graph(tiny.model, duration_output(tiny.model.graph))
    with pytest.raises(EngineError, match=said):
        SplitKokoro.load(path)


def test_without_onnxruntime_the_split_says_so(
    tiny: TinyKokoro, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(EngineError, match=r"^onnxruntime is not installed$"):
        SplitKokoro(split_graph(tiny.model, duration_output(tiny.model.graph)))


def test_both_sessions_run_on_the_cpu_with_the_threads_and_spinning_asked(
    tiny: TinyKokoro, split: SplitKokoro, features: Features, tmp_path: Path
) -> None:
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny.model, str(path))
    graphs = split_graph(tiny.model, duration_output(tiny.model.graph))
    made = {  # (threads, spinning) as the sessions were given them
        (0, "0"): SplitKokoro(graphs),
        (2, "1"): SplitKokoro(graphs, threads=2, spinning=True),
        (3, "0"): SplitKokoro.load(path, threads=3),
        (1, "1"): SplitKokoro.load(path, threads=1, spinning=True),
    }
    for (threads, spinning), made_split in made.items():
        for session in (made_split._text, made_split._decoder):
            options = session.get_session_options()
            assert options.intra_op_num_threads == threads
            assert options.get_session_config_entry("session.intra_op.allow_spinning") == spinning
            assert session.get_providers() == ["CPUExecutionProvider"]
    assert SplitKokoro.load(path).stat_names == STAT_NAMES
    loaded = made[(1, "1")].text(TOKENS, features.style, SPEED)
    np.testing.assert_array_equal(made[(1, "1")].whole(loaded)[0], split.whole(features)[0])


def test_both_halves_ask_for_the_cpu_alone(
    tiny: TinyKokoro, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked, not just given: the CPU wheel falls back to the CPU whatever is named, a GPU
    build would put a session without providers on CUDA first."""
    asked: list[object] = []
    session = ort.InferenceSession

    def asking(model: bytes, **kwargs: object) -> object:
        asked.append(kwargs.get("providers"))
        return session(model, **kwargs)

    monkeypatch.setattr(ort, "InferenceSession", asking)
    SplitKokoro(split_graph(tiny.model, duration_output(tiny.model.graph)))
    assert asked == [["CPUExecutionProvider"], ["CPUExecutionProvider"]]


def test_average_pools_as_if_the_frames_were_one_run() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(1, 2, (3, 50)), rng.normal(-1, 1, (3, 30))

    def stats(x: np.ndarray) -> Stats:
        return {
            "norm0.mean": x.mean(-1).reshape(1, 3, 1),
            "norm0.var": x.var(-1).reshape(1, 3, 1),
            "norm0.n": np.array([x.shape[-1]], dtype=np.float64),
            "quant0.low": np.array(x.min()),
            "quant0.high": np.array(x.max()),
        }

    pooled, both = average([stats(a), stats(b)]), stats(np.concatenate([a, b], axis=-1))
    assert set(pooled) == set(both)
    for name, value in both.items():
        assert pooled[name].dtype == np.float32, name  # a prior the decoder takes
        np.testing.assert_allclose(pooled[name], value, rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(average([stats(a)])["norm0.var"], stats(a)["norm0.var"], rtol=1e-6)
    with pytest.raises(ValueError, match=r"^average needs at least one sentence's statistics$"):
        average([])


def test_average_keeps_the_variance_of_float32_statistics_far_from_zero() -> None:
    """The decoder's statistics are float32: E[x^2] - mean^2 in float32 would lose the
    variance of a channel whose mean is a thousand times its spread."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(1000, 1, (3, 50)), rng.normal(1000.5, 1, (3, 30))

    def stats(x: np.ndarray) -> Stats:
        return {
            "norm0.mean": x.mean(-1).reshape(1, 3, 1).astype(np.float32),
            "norm0.var": x.var(-1).reshape(1, 3, 1).astype(np.float32),
            "norm0.n": np.array([x.shape[-1]], dtype=np.float32),
        }

    pooled = average([stats(a), stats(b)])
    both = np.concatenate([a, b], axis=-1)
    np.testing.assert_allclose(pooled["norm0.var"].ravel(), both.var(-1), rtol=1e-5)


def test_a_prior_counts_its_frames_weight_times_and_keeps_its_values(
    split: SplitKokoro, features: Features
) -> None:
    _, stats = split.whole(features)
    for weight, prior in ((2.0, as_prior(stats, 2.0)), (FIXED, as_prior(stats))):
        assert list(prior) == list(stats)
        for name, value in stats.items():
            scaled = value * weight if name.endswith(".n") else value
            np.testing.assert_array_equal(prior[name], scaled, err_msg=name)
    _, other = split.decode(features, Window(0, 6, 0, 2))
    audio, _ = split.decode(features, Window(4, 10, 2, 2), as_prior(average([stats, other])))
    assert audio.size == 6 * SAMPLES_PER_FRAME  # the average of two runs is a prior it takes
