"""Server settings, each declared once: its default, its help, and how its text is read.

A field ``max_queue`` is the flag ``--max-queue`` and the environment variable
``TTS_MAX_QUEUE``; a flag wins over the variable, which wins over the default. This module is
a leaf (the standard library and ``tts_protocol`` only), so that every other module may read
its defaults.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tts_protocol import DEFAULT_MAX_QUEUE, DEFAULT_MAX_TEXT_CHARS

EngineName = Literal["onnx", "torch"]
DeviceName = Literal["cpu", "cuda"]
SAGEMAKER_MODEL_DIR = Path("/opt/ml/model")
DEFAULT_BATCH_WAIT_MS = 2.0  # a few ms: small beside one forward pass, enough to gather peers
ENV_PREFIX = "TTS_"


def _seconds(value: str | float) -> float:
    """A positive number of seconds."""
    seconds = float(value)
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds")
    return seconds


@dataclass(frozen=True, slots=True)
class Option:
    """How one setting is read from the command line and the environment."""

    help: str
    parse: Callable[[str], Any] = str  # text (a flag's or a variable's) to the value
    choices: tuple[str, ...] | None = None


def _option(
    help_text: str, parse: Callable[[str], Any] = str, choices: tuple[str, ...] | None = None
) -> dict[str, Option]:
    """A ``Settings`` field's metadata: how it is read."""
    return {"option": Option(help_text, parse, choices)}


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the server needs to start."""

    host: str = field(default="127.0.0.1", metadata=_option("address to listen on"))
    port: int = field(default=8080, metadata=_option("port to listen on", int))
    engine: EngineName = field(
        default="onnx", metadata=_option("the Kokoro engine", choices=typing.get_args(EngineName))
    )
    model_dir: Path | None = field(
        default=None,
        metadata=_option(
            f"model files (onnx: the embedded model; torch: {SAGEMAKER_MODEL_DIR} if present, "
            "else the embedded model's weights, imported once)",
            Path,
        ),
    )
    import_cache: Path | None = field(
        default=None,
        metadata=_option(
            "torch only: where the weights imported from the embedded ONNX model are cached, "
            "used without --model-dir and /opt/ml/model (default: ~/.cache/kokoro-voice-agent/"
            "torch-import)",
            Path,
        ),
    )
    device: DeviceName | None = field(
        default=None,
        metadata=_option("torch only; CUDA when available", choices=typing.get_args(DeviceName)),
    )
    max_queue: int = field(
        default=DEFAULT_MAX_QUEUE, metadata=_option("segments queued per connection", int)
    )
    max_text_chars: int = field(
        default=DEFAULT_MAX_TEXT_CHARS, metadata=_option("characters per segment", int)
    )
    max_batch: int | None = field(
        default=None,
        metadata=_option("pieces per forward pass (default: 32 for torch on CUDA, else 1)", int),
    )
    batch_wait_ms: float = field(
        default=DEFAULT_BATCH_WAIT_MS,
        metadata=_option("longest wait for a batch to fill once a piece is ready", float),
    )
    onnx_workers: int = field(
        default=1,
        metadata=_option("onnx only: sessions side by side, the cores split between them", int),
    )
    onnx_threads: int | None = field(
        default=None,
        metadata=_option(
            "onnx only: intra-op threads of each worker's session (default: the cores shared "
            "out between the workers)",
            int,
        ),
    )
    onnx_spinning: bool = field(
        default=False,
        metadata=_option(
            "onnx only: the engine's threads busy-wait for work between operators (faster on "
            "idle cores, much slower on shared ones)"
        ),
    )
    onnx_narrow: bool = field(
        default=True,
        metadata=_option(
            "onnx only: a worker with more than one thread also holds a one-thread session, "
            "which it runs while another worker runs (two-thread sessions side by side on "
            "shared cores waste them)"
        ),
    )
    phoneme_table: Path | None = field(
        default=None, metadata=_option("a JSON {text: phonemes} consulted before G2P", Path)
    )
    fold_weight_norm: bool = field(
        default=True, metadata=_option("torch only: weight norm folded into the weights")
    )
    fuse_styles: bool = field(
        default=True, metadata=_option("torch only: all style projections as one matrix product")
    )
    # The windows' settings: read only by ``engines/windows.py`` (``window_plan``), which holds
    # each engine's defaults (``WINDOW_DEFAULTS``) that these help texts quote.
    windows: bool | None = field(
        default=None,
        metadata=_option(
            "decode each sentence in windows, its first audio sent before the rest is decoded "
            "(default: on for onnx, off for torch; onnx decodes a voice's first sentence whole, "
            "to learn its statistics)"
        ),
    )
    window_first: int | None = field(
        default=None,
        metadata=_option(
            "frames of a sentence's first window, after its leading silence (default: 8)", int
        ),
    )
    window_size: int | None = field(
        default=None,
        metadata=_option("frames of the largest later window (default: onnx 240, torch 40)", int),
    )
    window_context: int | None = field(
        default=None,
        metadata=_option(
            "frames decoded each side of a window for context, then dropped "
            "(default: onnx 4, torch 16)",
            int,
        ),
    )
    window_growth: float | None = field(
        default=None,
        metadata=_option(
            "each later window this many times the one before, at most --window-size "
            "(default: onnx 3, torch 5)",
            float,
        ),
    )
    window_pace: bool = field(
        default=False,
        metadata=_option(
            "size each window from the engine's measured decode rate and the audio the listener "
            "has buffered (off: the static plan, so a text always decodes to the same audio and "
            "a segment resumed after a reconnect splices bit-exactly; voice-agent dev turns it on)"
        ),
    )
    window_listener_lead: float | None = field(
        default=None,
        metadata=_option(
            "seconds a listener's player waits before a reply's first chunk, as the windows' "
            "pace models it: later windows grow with the audio buffered (default: 0.1)",
            float,
        ),
    )
    window_trace: Path | None = field(
        default=None,
        metadata=_option(
            "append each paced window and each wait of a listener the pace's model met to this "
            "file, one JSON object a line (a benchmark's view of the server's windows)",
            Path,
        ),
    )
    max_sessions: int | None = field(
        default=None,
        metadata=_option(
            "sessions with work at once, server-wide (default: per engine and device)", int
        ),
    )
    max_queued: int | None = field(
        default=None,
        metadata=_option("queued segments, server-wide (default: 4 per allowed session)", int),
    )
    max_connections: int | None = field(
        default=None,
        metadata=_option("open WebSockets, idle included (default: 16 per allowed session)", int),
    )
    drain_s: float = field(
        default=20.0,
        metadata=_option("on SIGTERM: how long open sessions may finish their queue", _seconds),
    )
    send_timeout_s: float = field(
        default=30.0,
        metadata=_option("a client that takes no frame this long is cut (1008)", _seconds),
    )
    idle_timeout_s: float = field(
        default=300.0,
        metadata=_option("a connection with no frame and no work this long is closed", _seconds),
    )
    max_frame_bytes: int = field(
        default=1 << 20,
        metadata=_option("a client frame beyond it closes the connection (1009)", int),
    )
    log_level: str = field(default="info", metadata=_option("uvicorn's and the server's log level"))
    banner: bool = field(
        default=True, metadata=_option("print the start banner: the URLs and curl hints")
    )


def env_name(field: str) -> str:
    """The environment variable of a ``Settings`` field: ``max_queue`` -> ``TTS_MAX_QUEUE``."""
    return ENV_PREFIX + field.upper()


def parse_settings(
    argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Flags win over ``TTS_*`` environment variables, which win over the defaults.

    Each flag is taken only as it is spelled in full (no ``--no-ban`` for ``--no-banner``): the
    entry point reads ``--banner`` / ``--no-banner`` before this parser is imported, and an
    abbreviation it cannot see would let the two disagree; a full name also keeps working when a
    new flag would make its abbreviation ambiguous.
    """
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(
        prog="tts-server", description="Kokoro-82M speech server", allow_abbrev=False
    )
    parser.add_argument("command", nargs="?", choices=["serve"], help="SageMaker passes 'serve'")
    for setting in dataclasses.fields(Settings):
        option: Option = setting.metadata["option"]
        flag = "--" + setting.name.replace("_", "-")
        default = _from_env(setting, option, env)
        help_text = f"{option.help} (env {env_name(setting.name)})"
        if _is_flag(setting):
            action = argparse.BooleanOptionalAction
            parser.add_argument(flag, action=action, default=default, help=help_text)
        else:
            parser.add_argument(
                flag, type=option.parse, choices=option.choices, default=default, help=help_text
            )
    args = parser.parse_args(argv)
    names = [setting.name for setting in dataclasses.fields(Settings)]
    return Settings(**{name: getattr(args, name) for name in names})


def from_env(name: str, env: Mapping[str, str] | None = None) -> Any:
    """Setting ``name``'s value from its ``TTS_*`` variable, else its default (no flags read);
    ``SystemExit`` with one line for a value that its rule refuses."""
    setting = next(setting for setting in dataclasses.fields(Settings) if setting.name == name)
    return _from_env(setting, setting.metadata["option"], os.environ if env is None else env)


def _from_env(setting: dataclasses.Field[Any], option: Option, env: Mapping[str, str]) -> Any:
    """The field's value from its variable, else its default (the flag's default, then).

    An empty variable is unset for a boolean and for a setting whose default is None. A value
    its rule refuses is ``SystemExit`` with one line naming the variable, as a bad flag is.
    """
    name = env_name(setting.name)
    value = env.get(name)
    if _is_flag(setting):
        return _flag(value, setting.default, name)
    if value is None or (not value and setting.default is None):
        return setting.default
    if option.choices is not None and value not in option.choices:
        raise SystemExit(f"tts-server: {name}={value!r} is not one of {', '.join(option.choices)}")
    try:
        return option.parse(value)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise SystemExit(f"tts-server: {name}={value!r} is refused: {exc}") from None


def _is_flag(setting: dataclasses.Field[Any]) -> bool:
    """Whether the field is a boolean (``--x`` / ``--no-x``), perhaps unset by default."""
    return setting.type in ("bool", "bool | None")


def _flag(value: str | None, default: bool | None, name: str) -> bool | None:
    """A boolean environment variable (1/0, true/false, yes/no, on/off), or ``default``."""
    if not value:
        return default
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SystemExit(f"tts-server: {name}={value!r} is not a boolean (use 1/0, true/false)")
