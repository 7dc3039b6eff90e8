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
