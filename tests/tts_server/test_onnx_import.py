"""The importer: the embedded int8 ONNX model's weights as a strict KModel checkpoint."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from tests.tts_server.conftest import IMPORT_CACHE
from tts_server.engines.packaged import packaged_files
from tts_server.engines.torch.kmodel import PARTS
from tts_server.engines.torch.onnx_import import model_dir
from tts_server.engines.torch.onnx_import.graph_weights import (
    Graph,
    ImportFailure,
    _lstm,
    dequantize,
    find_weights,
)
from tts_server.engines.torch.onnx_import.model_dir import (
    CHECKPOINT,
    cache_key,
    embedded_model_dir,
)
from tts_server.engines.torch.onnx_import.state_dicts import _weight_norm, convert

HIDDEN, INPUTS, STEPS = 4, 3, 5


def test_dequantize_uses_each_channels_own_scale_and_zero_point() -> None:
    quantized = np.array([[10, 20], [30, 40]], dtype=np.uint8)  # (in, out) as MatMulInteger
    per_column = dequantize(quantized, np.array([10, 20]), np.array([0.5, 2.0]), axis=1)
    np.testing.assert_array_equal(per_column, [[0.0, 0.0], [10.0, 40.0]])
    per_tensor = dequantize(quantized, np.array(10), np.array(0.5), axis=0)
    np.testing.assert_array_equal(per_tensor, [[0.0, 5.0], [10.0, 15.0]])


def _conv_integer(zero_point: int) -> onnx.ModelProto:
    """One ``ConvInteger`` as onnxruntime's quantizer writes it: uint8 weights with their zero
    point, the scale stored beside them as ``<name>_scale``."""
    rng = np.random.default_rng(3)
    tensors = {
        "x_zero_point": np.array(7, dtype=np.uint8),
        "conv.weight_quantized": rng.integers(0, 256, size=(4, 3, 5), dtype=np.uint8),
        "conv.weight_zero_point": np.array(zero_point, dtype=np.uint8),
        "conv.weight_scale": np.array(0.02, dtype=np.float32),
    }
    node = helper.make_node(
        "ConvInteger",
        ["X", "conv.weight_quantized", "x_zero_point", "conv.weight_zero_point"],
        ["Y"],
        name="/conv/Conv_quant",
    )
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("X", TensorProto.UINT8, [1, 3, STEPS * 4])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, None)],
        [numpy_helper.from_array(value, name) for name, value in tensors.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("zero_point", [0, 69, 200])
def test_a_conv_integer_weight_computes_in_torch_what_onnxruntime_computes(
    zero_point: int,
) -> None:
    """The weight is ``(q - zero_point) * scale``: the real model's are uint8 around 60-70."""
    model = _conv_integer(zero_point)
    x = np.random.default_rng(4).integers(0, 256, size=(1, 3, STEPS * 4), dtype=np.uint8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"X": x})  # sum of (x - x_zero_point) * (q - zero_point)
    (found,) = find_weights(Graph(model))
    assert found.modules == {"conv"}
    weight = torch.from_numpy(found.tensors["weight"])
    ours = torch.nn.functional.conv1d(torch.from_numpy(x.astype(np.float32) - 7), weight)
    np.testing.assert_allclose(ours.numpy(), y * np.float32(0.02), rtol=1e-5, atol=1e-3)


def test_a_folded_weight_comes_back_exactly_through_weight_norm_even_a_zero_channel() -> None:
    weight = np.random.default_rng(0).normal(size=(3, 2, 5)).astype(np.float32)
    weight[1] = 0.0  # int8 rounded this channel away
    g, v = _weight_norm(weight)
    folded = torch._weight_norm(torch.from_numpy(v), torch.from_numpy(g), 0)
    np.testing.assert_allclose(folded.numpy(), weight, atol=1e-6)


def _quantized_lstm() -> onnx.ModelProto:
    """One bidirectional ``DynamicQuantizeLSTM`` (onnxruntime's layout) with random weights."""
    rng = np.random.default_rng(1)
    tensors = {
        "W": rng.integers(-127, 128, size=(2, INPUTS, 4 * HIDDEN), dtype=np.int8),
        "R": rng.integers(-127, 128, size=(2, HIDDEN, 4 * HIDDEN), dtype=np.int8),
        "B": rng.normal(size=(2, 8 * HIDDEN)).astype(np.float32),
        "W_scale": np.array([0.01, 0.02], dtype=np.float32),
        "W_zero_point": np.array([3, -2], dtype=np.int8),
        "R_scale": np.array([0.015, 0.005], dtype=np.float32),
        "R_zero_point": np.array([0, 1], dtype=np.int8),
    }
    names = ["X", "W", "R", "B", "", "", "", "", "W_scale", "W_zero_point", "R_scale"]
    node = helper.make_node(
        "DynamicQuantizeLSTM",
        [*names, "R_zero_point"],
        ["Y"],
        domain="com.microsoft",
        hidden_size=HIDDEN,
        direction="bidirectional",
        name="/encoder/text_encoder/lstm/LSTM_quant",
    )
    graph = helper.make_graph(
        [node],
        "lstm",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [STEPS, 1, INPUTS])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(value, name) for name, value in tensors.items()],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)


def test_a_quantized_lstm_runs_in_torch_as_in_onnxruntime() -> None:
    """Gate order i, o, f, c to i, f, g, o; (in, 4h) to (4h, in); both biases from one row."""
    model = _quantized_lstm()
    x = np.random.default_rng(2).normal(size=(STEPS, 1, INPUTS)).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"X": x})  # (steps, dirs, batch, hidden)
    expected = y.transpose(0, 2, 1, 3).reshape(STEPS, 1, 2 * HIDDEN)
    lstm = torch.nn.LSTM(INPUTS, HIDDEN, bidirectional=True)
    state = {k: torch.from_numpy(v) for k, v in _lstm(Graph(model), model.graph.node[0]).items()}
    lstm.load_state_dict(state, strict=True)
    with torch.no_grad():
        ours = lstm(torch.from_numpy(x))[0].numpy()
    # onnxruntime quantizes the input and hidden state to uint8 on the fly, which these
    # large random weights amplify: 0.011 apart on average here, where any other gate order
    # is 0.2 or more apart.
    assert np.abs(ours - expected).mean() < 0.03
    assert np.abs(expected).mean() > 0.1  # the comparison is not between near-zeros


@pytest.mark.parametrize("source", ["graph_weights.py", "state_dicts.py", "model_dir.py"])
def test_the_cache_key_changes_with_any_of_the_importers_source(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An importer that changes (a fix, a bug) never reads the checkpoint an earlier one made."""
    onnx_file = tmp_path / "model.onnx"
    onnx_file.write_bytes(b"the same ONNX model")
    inputs = (onnx_file, {"a": 1}, {"af": np.zeros((2, 3), dtype=np.float32)})
    importer = tmp_path / "onnx_import"
    shutil.copytree(model_dir.IMPORTER, importer, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(model_dir, "IMPORTER", importer)
    before = cache_key(*inputs)
    assert cache_key(*inputs) == before
    with (importer / source).open("a", encoding="utf-8") as handle:
        handle.write("# one more line\n")
    assert cache_key(*inputs) != before
    assert cache_key(*inputs).startswith(before.split("-")[0])  # the model's checksum: the same


def test_a_changed_importer_imports_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    onnx_file = tmp_path / "model.onnx"
    onnx_file.write_bytes(b"the same ONNX model")
    inputs = (onnx_file, {"a": 1}, {"af": np.zeros((2, 3), dtype=np.float32)})
    monkeypatch.setattr(model_dir, "packaged_files", lambda: inputs)
    imports: list[Path] = []

    def import_model_dir(model: Path, vocab: object, voices: object, out: Path) -> Path:
        imports.append(out)
        (out / CHECKPOINT).write_bytes(b"weights")
        return out

    monkeypatch.setattr(model_dir, "import_model_dir", import_model_dir)
    cache = tmp_path / "cache"
    first = embedded_model_dir(cache)
    assert embedded_model_dir(cache) == first and len(imports) == 1  # cached
    importer = tmp_path / "onnx_import"
    shutil.copytree(model_dir.IMPORTER, importer, ignore=shutil.ignore_patterns("__pycache__"))
    (importer / "graph_weights.py").write_text("# a fixed importer\n", encoding="utf-8")
    monkeypatch.setattr(model_dir, "IMPORTER", importer)
    second = embedded_model_dir(cache)
    assert second != first and len(imports) == 2
    assert (first / CHECKPOINT).is_file() and (second / CHECKPOINT).is_file()


def test_the_import_is_cached_by_the_onnx_models_checksum_and_its_producer(
    imported_model_dir: Path,
) -> None:
    assert imported_model_dir == IMPORT_CACHE / cache_key(*packaged_files())
    written = (imported_model_dir / CHECKPOINT).stat().st_mtime_ns
    assert embedded_model_dir(IMPORT_CACHE) == imported_model_dir
    assert (imported_model_dir / CHECKPOINT).stat().st_mtime_ns == written  # not imported again
    assert sorted(p.name for p in (imported_model_dir / "voices").iterdir()) == [
        f"{name}.pt" for name in sorted(packaged_files()[2])
    ]


def test_the_checkpoint_is_every_kmodel_part_in_float32_and_finite(
    imported_model_dir: Path,
) -> None:
    checkpoint = torch.load(imported_model_dir / CHECKPOINT, weights_only=True)
    assert tuple(checkpoint) == PARTS
    assert sum(len(state) for state in checkpoint.values()) == 688
    for state in checkpoint.values():
        for key, value in state.items():
            assert value.dtype == torch.float32 and bool(torch.isfinite(value).all()), key


def test_a_parameter_the_onnx_model_lacks_fails_the_import_naming_it(
    imported_model_dir: Path,
) -> None:
    checkpoint = torch.load(imported_model_dir / CHECKPOINT, weights_only=True)
    shapes = {
        part: {k: tuple(v.shape) for k, v in state.items()} for part, state in checkpoint.items()
    }
    shapes["decoder"]["generator.extra.weight"] = (3, 3)
    shapes["bert"]["encoder.extra.bias"] = (7,)
    with pytest.raises(ImportFailure) as failure:
        convert(packaged_files()[0], shapes)
    message = str(failure.value)
    assert "2 missing (bert.encoder.extra.bias, decoder.generator.extra.weight)" in message
    assert "0 unplaced weights" in message


def test_without_a_model_dir_sagemakers_wins_then_the_import(
    imported_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sagemaker = tmp_path / "opt-ml-model"
    monkeypatch.setattr(model_dir, "SAGEMAKER_MODEL_DIR", sagemaker)
    assert model_dir.default_model_dir(IMPORT_CACHE) == imported_model_dir
    sagemaker.mkdir()
    assert model_dir.default_model_dir(IMPORT_CACHE) == sagemaker
