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
from tts_server.drain import DEFAULT_DRAIN_S
from tts_server.scheduler import DEFAULT_BATCH_WAIT_MS

EngineName = Literal["onnx", "torch"]
DeviceName = Literal["cpu", "cuda"]
SAGEMAKER_MODEL_DIR = Path("/opt/ml/model")
DEFAULT_SEND_TIMEOUT_S = 30.0  # a client that takes no frame this long is cut (1008)
DEFAULT_IDLE_TIMEOUT_S = 300.0  # a connection with no frame and no work this long is closed
DEFAULT_MAX_FRAME_BYTES = 1 << 20  # a client frame beyond it: close 1009 (uvicorn's ws_max_size)


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
    max_batch: int | None = None  # pieces per forward pass; None: 32 for torch on CUDA, else 1
    batch_wait_ms: float = (
        DEFAULT_BATCH_WAIT_MS  # longest wait for a batch to fill once a piece is ready
    )
    onnx_workers: int = 1  # onnx only: sessions side by side, the cores split between them
    phoneme_table: Path | None = None  # JSON {text: phonemes} consulted before G2P
    fold_weight_norm: bool = True  # torch only: weight norm folded into the weights at load
    fuse_styles: bool = True  # torch only: all style projections as one matrix product
    max_sessions: int | None = None  # open WebSockets, server-wide; None: per engine and device
    max_queued: int | None = None  # queued segments, server-wide; None: 4 per allowed session
    drain_s: float = DEFAULT_DRAIN_S  # on SIGTERM: how long open sessions may finish their queue
    send_timeout_s: float = DEFAULT_SEND_TIMEOUT_S
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
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
    parser.add_argument("--max-batch", type=int, default=_optional_int(env.get("TTS_MAX_BATCH")))
    parser.add_argument(
        "--batch-wait-ms", type=float, default=float(env.get("TTS_BATCH_WAIT_MS", d.batch_wait_ms))
    )
    parser.add_argument(
        "--onnx-workers", type=int, default=int(env.get("TTS_ONNX_WORKERS", d.onnx_workers))
    )
    parser.add_argument("--phoneme-table", type=Path, default=env.get("TTS_PHONEME_TABLE") or None)
    for flag, default in (("fold-weight-norm", d.fold_weight_norm), ("fuse-styles", d.fuse_styles)):
        variable = "TTS_" + flag.upper().replace("-", "_")
        parser.add_argument(
            f"--{flag}",
            action=argparse.BooleanOptionalAction,
            default=_flag(env.get(variable), default, variable),
        )
    parser.add_argument(
        "--max-sessions", type=int, default=_optional_int(env.get("TTS_MAX_SESSIONS"))
    )
    parser.add_argument("--max-queued", type=int, default=_optional_int(env.get("TTS_MAX_QUEUED")))
    for flag, default in (
        ("drain-s", d.drain_s),
        ("send-timeout-s", d.send_timeout_s),
        ("idle-timeout-s", d.idle_timeout_s),
    ):
        variable = "TTS_" + flag.upper().replace("-", "_")
        seconds = _seconds(env.get(variable, default))
        parser.add_argument(f"--{flag}", type=_seconds, default=seconds)
    parser.add_argument(
        "--max-frame-bytes",
        type=int,
        default=int(env.get("TTS_MAX_FRAME_BYTES", d.max_frame_bytes)),
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
        max_batch=args.max_batch,
        batch_wait_ms=args.batch_wait_ms,
        onnx_workers=args.onnx_workers,
        phoneme_table=Path(args.phoneme_table) if args.phoneme_table else None,
        fold_weight_norm=args.fold_weight_norm,
        fuse_styles=args.fuse_styles,
        max_sessions=args.max_sessions,
        max_queued=args.max_queued,
        drain_s=args.drain_s,
        send_timeout_s=args.send_timeout_s,
        idle_timeout_s=args.idle_timeout_s,
        max_frame_bytes=args.max_frame_bytes,
        log_level=args.log_level,
    )


def _seconds(value: str | float) -> float:
    """A positive number of seconds."""
    seconds = float(value)
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return seconds


def _optional_int(value: str | None) -> int | None:
    """An integer environment variable, or None when it is unset or empty."""
    return int(value) if value else None


def _flag(value: str | None, default: bool, name: str) -> bool:
    """A boolean environment variable (1/0, true/false, yes/no, on/off), or ``default``."""
    if not value:
        return default
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SystemExit(f"tts-server: {name}={value!r} is not a boolean (use 1/0, true/false)")
