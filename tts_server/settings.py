"""Server settings: CLI flags, each mirrored by an environment variable."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tts_protocol import DEFAULT_MAX_TEXT_CHARS
from tts_server.connection import DEFAULT_MAX_QUEUE

EngineName = Literal["onnx", "torch"]
DeviceName = Literal["cpu", "cuda"]
SAGEMAKER_MODEL_DIR = Path("/opt/ml/model")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the server needs to start."""

    host: str = "127.0.0.1"
    port: int = 8080
    engine: EngineName = "onnx"
    model_dir: Path | None = None  # onnx: the embedded model; torch: SAGEMAKER_MODEL_DIR
    device: DeviceName | None = None  # torch only; None picks CUDA when available
    max_queue: int = DEFAULT_MAX_QUEUE
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    log_level: str = "info"


def parse_settings(
    argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Flags win over ``TTS_*`` environment variables, which win over the defaults."""
    env = os.environ if env is None else env
    d = Settings()
    parser = argparse.ArgumentParser(prog="tts-server", description="Kokoro-82M speech server")
    parser.add_argument("command", nargs="?", choices=["serve"], help="SageMaker passes 'serve'")
    parser.add_argument("--host", default=env.get("TTS_HOST", d.host))
    parser.add_argument("--port", type=int, default=int(env.get("TTS_PORT", d.port)))
    parser.add_argument(
        "--engine", choices=["onnx", "torch"], default=env.get("TTS_ENGINE", d.engine)
    )
    parser.add_argument("--model-dir", type=Path, default=env.get("TTS_MODEL_DIR") or None)
    parser.add_argument("--device", choices=["cpu", "cuda"], default=env.get("TTS_DEVICE") or None)
    parser.add_argument("--max-queue", type=int, default=int(env.get("TTS_MAX_QUEUE", d.max_queue)))
    parser.add_argument(
        "--max-text-chars", type=int, default=int(env.get("TTS_MAX_TEXT_CHARS", d.max_text_chars))
    )
    parser.add_argument("--log-level", default=env.get("TTS_LOG_LEVEL", d.log_level))
    args = parser.parse_args(argv)
    return Settings(
        host=args.host,
        port=args.port,
        engine=args.engine,
        model_dir=Path(args.model_dir) if args.model_dir else None,
        device=args.device,
        max_queue=args.max_queue,
        max_text_chars=args.max_text_chars,
        log_level=args.log_level,
    )
