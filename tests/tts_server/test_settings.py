"""CLI flags and their TTS_* environment mirrors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tts_server.settings import Settings, parse_settings


def test_defaults_are_loopback_8080_and_the_embedded_engine() -> None:
    assert parse_settings([], env={}) == Settings()
    assert Settings().host == "127.0.0.1" and Settings().engine == "onnx"


def test_environment_mirrors_flags() -> None:
    env = {
        "TTS_HOST": "0.0.0.0",
        "TTS_PORT": "9000",
        "TTS_ENGINE": "torch",
        "TTS_MODEL_DIR": "/models/kokoro",
        "TTS_DEVICE": "cuda",
        "TTS_MAX_QUEUE": "8",
        "TTS_MAX_TEXT_CHARS": "500",
    }
    settings = parse_settings([], env=env)
    assert settings == Settings(
        host="0.0.0.0",
        port=9000,
        engine="torch",
        model_dir=Path("/models/kokoro"),
        device="cuda",
        max_queue=8,
        max_text_chars=500,
    )


def test_flags_win_over_environment_and_serve_is_accepted() -> None:
    argv = ["serve", "--port", "8081", "--engine", "onnx", "--device", "cpu", "--model-dir", "m"]
    settings = parse_settings(argv, env={"TTS_PORT": "9000", "TTS_ENGINE": "torch"})
    assert (settings.port, settings.engine, settings.device) == (8081, "onnx", "cpu")
    assert settings.model_dir == Path("m")


def test_bad_flags_are_rejected() -> None:
    with pytest.raises(SystemExit):
        parse_settings(["--engine", "tensorflow"], env={})


def test_batching_workers_table_and_speed_ups_from_flags_and_environment() -> None:
    env = {
        "TTS_MAX_BATCH": "16",
        "TTS_BATCH_WAIT_MS": "5",
        "TTS_ONNX_WORKERS": "2",
        "TTS_PHONEME_TABLE": "/data/phonemes.json",
        "TTS_FOLD_WEIGHT_NORM": "0",
        "TTS_FUSE_STYLES": "false",
    }
    settings = parse_settings([], env=env)
    assert (settings.max_batch, settings.batch_wait_ms, settings.onnx_workers) == (16, 5.0, 2)
    assert settings.phoneme_table == Path("/data/phonemes.json")
    assert not settings.fold_weight_norm and not settings.fuse_styles
    flags = ["--max-batch", "4", "--fold-weight-norm", "--fuse-styles", "--onnx-workers", "1"]
    settings = parse_settings(flags, env=env)
    assert (settings.max_batch, settings.onnx_workers) == (4, 1)
    assert settings.fold_weight_norm and settings.fuse_styles


def test_batching_defaults() -> None:
    settings = parse_settings([], env={})
    assert settings.max_batch is None  # per engine and device: 32 for torch on CUDA, else 1
    assert settings.phoneme_table is None
    assert settings.fold_weight_norm and settings.fuse_styles


def test_a_bad_boolean_environment_variable_is_refused() -> None:
    with pytest.raises(SystemExit, match="TTS_FUSE_STYLES"):
        parse_settings([], env={"TTS_FUSE_STYLES": "maybe"})


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"TTS_ONNX_WORKERS": "two"}, "TTS_ONNX_WORKERS='two' is refused: invalid literal"),
        ({"TTS_ONNX_WORKERS": ""}, "TTS_ONNX_WORKERS='' is refused: invalid literal"),
        ({"TTS_MAX_QUEUE": "8.5"}, "TTS_MAX_QUEUE='8.5' is refused: invalid literal"),
        ({"TTS_ENGINE": "tensorflow"}, "TTS_ENGINE='tensorflow' is not one of onnx, torch"),
    ],
)
def test_a_bad_environment_value_is_one_line_naming_its_variable(
    env: dict[str, str], said: str
) -> None:
    """As a bad flag is refused in words: no traceback, and no engine nobody asked for."""
    with pytest.raises(SystemExit) as refused:
        parse_settings([], env=env)
    assert str(refused.value).startswith(f"tts-server: {said}")
