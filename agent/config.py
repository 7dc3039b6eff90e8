"""Agent and listening settings, each declared once: its default, its variable, its help and
how its text is read (the dev server's flags override them).

Each field is one ``env_field``: its variable, default, reader and help; ``from_env`` is
derived from the fields, so a knob is written in one place. A bad value fails at start with
its variable's name. The ground floor: ``agent.browser_leg``, ``tts_client`` and
``tts_protocol`` only.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agent.browser_leg import MIC_SAMPLE_RATE
from tts_client import Transport, WebSocketTransport
from tts_protocol import BYTES_PER_SAMPLE, STREAM_PATH

DEFAULT_TTS_URL = f"ws://127.0.0.1:8080{STREAM_PATH}"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")  # the names a local server answers to
C = TypeVar("C")
T = TypeVar("T")
FACTORY_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")  # package.module:function
ENDPOINTING = ("silence", "turn_model")  # how a turn's end is found (docs/listening.md)
BACKCHANNEL_WORDS = (
    *("mm", "mmm", "mhm", "mmhm", "mmhmm", "hmm", "hm", "uh", "huh", "uh-huh", "uh-uh", "um"),
    *("yeah", "yep", "yes", "okay", "ok", "right", "oh", "ooh", "ah", "aha", "sure", "i see"),
)  # what a user says over a reply without taking the turn (docs/listening.md, "False
# interruptions"): tiny.en writes "mm-hm" as "Mm-hmm", "uh-huh" as "Uh-uh" and "Uh-huh"
BACKCHANNEL_WORD = re.compile(r"[a-z]+(?:[ '-][a-z]+)*")  # one entry of the list


def _positive(text: str, name: str, what: str, most: float = math.inf) -> float:
    """``text`` as a number in (0, ``most``]; raises ``ValueError`` naming the variable: NaN
    and anything past ``most`` (``inf``, or ``1e400``, which reads as it, where ``most`` is the
    largest float) are refused in words."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:  # NaN too
        raise ValueError(f"{name} must be a positive {what}, not {text!r}")
    if not value <= most:
        raise ValueError(f"{name} must be a finite positive {what}, not {text!r}")
    return value


def _number(text: str, name: str) -> float:
    """A positive finite number: at most the largest float; ``inf`` and ``nan`` are refused."""
    return _positive(text, name, "number", most=sys.float_info.max)


def _off_or_number(text: str, name: str) -> float:
    """0 (off) or a positive finite number (any spelling of zero: "0", "0.0", "00")."""
    try:
        off = float(text) == 0
    except ValueError:
        off = False
    return 0.0 if off else _number(text, name)


def _off_or_count(text: str, name: str) -> int:
    """0 (off) or a positive number, in whole units."""
    return int(_off_or_number(text, name))


def _count(text: str, name: str) -> int:
    """A positive number, in whole units (ms, threads)."""
    return int(_number(text, name))


def _seconds(text: str, name: str) -> float:
    """A positive number of seconds; ``inf`` is accepted, and means never (``nan`` is not)."""
    return _positive(text, name, "number of seconds")


def _fraction(text: str, name: str) -> float:
    """A number strictly between 0 and 1."""
    value = _number(text, name)
    if not value < 1:
        raise ValueError(f"{name} must be in (0, 1), not {value}")
    return value


def _off_or_fraction(text: str, name: str) -> float:
    """0 (off) or a number strictly between 0 and 1; anything else (NaN too) is refused."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be 0 (off) or a number in (0, 1), not {text!r}")
    return value


def _listed(text: str, _name: str) -> tuple[str, ...]:
    """Comma-separated entries (none: the default)."""
    return tuple(entry.strip() for entry in text.split(",") if entry.strip())


def _backchannels(text: str, name: str) -> tuple[str, ...]:
    """Comma-separated words or short phrases, lower case (letters, and a space, hyphen or
    apostrophe between them)."""
    entries = tuple(" ".join(entry.lower().split()) for entry in text.split(","))
    bad = [entry for entry in entries if not BACKCHANNEL_WORD.fullmatch(entry)]
    if bad:
        raise ValueError(
            f"{name} must be comma-separated words (letters, and a space, hyphen or apostrophe "
            f"between them), not {bad[0]!r}"
        )
    return entries


def _text(text: str, _name: str) -> str:
    return text


def _switch(text: str, name: str) -> bool:
    """``on`` or ``off``."""
    if text not in ("on", "off"):
        raise ValueError(f"{name} must be on or off, not {text!r}")
    return text == "on"


def _endpointing(text: str, name: str) -> str:
    """How a turn's end is found: ``silence`` or ``turn_model`` (docs/listening.md)."""
    if text not in ENDPOINTING:
        raise ValueError(f"{name} must be one of {', '.join(ENDPOINTING)}, not {text!r}")
    return text


def _factory_spec(text: str, name: str) -> str:
    """``package.module:function``."""
    if not FACTORY_SPEC.fullmatch(text.strip()):
        raise ValueError(f"{name} must be package.module:function, not {text!r}")
    return text.strip()


def env_field(
    names: str | tuple[str, ...], default: T, read: Callable[[str, str], Any], help_text: str
) -> T:
    """A setting's one declaration: its default, the variables that set it (the first set wins),
    its reader and what it does (docs/agent.md, docs/listening.md); ``from_env`` reads them."""
    env = (names,) if isinstance(names, str) else names
    return field(default=default, metadata={"env": env, "read": read, "help": help_text})


def from_env(cls: type[C], env: Mapping[str, str]) -> C:
    """``cls`` with each field that declares variables read from ``env``; a variable that is
    unset, empty or reads as nothing keeps the field's default."""
    values: dict[str, object] = {}
    for spec in dataclasses.fields(cls):  # type: ignore[arg-type]
        for name in spec.metadata.get("env", ()):
            if raw := env.get(name):
                value = spec.metadata["read"](raw, name)
                if value or value == 0:
                    values[spec.name] = value
                break
    return cls(**values)


@dataclass(frozen=True, slots=True)
class ListeningConfig:
    """How a socket listens (docs/listening.md)."""

    vad_threshold: float = env_field(
        "VOICE_AGENT_VAD_THRESHOLD", 0.5, _fraction, "Silero's speech probability"
    )
    onset_ms: int = env_field(
        "VOICE_AGENT_LISTEN_ONSET_MS", 64, _count, "speech this long starts a turn"
    )
    silence_ms: int = env_field(
        "VOICE_AGENT_LISTEN_SILENCE_MS", 500, _count, "silence this long ends the turn"
    )
    endpointing: str = env_field(
        "VOICE_AGENT_ENDPOINTING",
        "turn_model",
        _endpointing,
        "silence | turn_model (Smart Turn v3.2)",
    )
    pause_ms: int = env_field(
        "VOICE_AGENT_TURN_PAUSE_MS", 160, _count, "a pause this long asks the turn model"
    )
    turn_wait_ms: int = env_field(
        "VOICE_AGENT_TURN_WAIT_MS",
        1000,
        _count,
        "silence that ends a turn the model called unfinished",
    )
    eager_asr: bool = env_field(
        "VOICE_AGENT_EAGER_ASR", True, _switch, "on: recognize at the turn model's pause, not after"
    )
    eager_start: bool = env_field(
        "VOICE_AGENT_EAGER_START",
        True,
        _switch,
        "on: start the reply on the eager transcript while an unfinished turn waits, "
        "its audio held",
    )
    turn_threshold: float = env_field(
        "VOICE_AGENT_TURN_THRESHOLD", 0.5, _fraction, "the model's score that ends a turn"
    )
    turn_recheck_ms: int = env_field(
        "VOICE_AGENT_TURN_RECHECK_MS",
        224,
        _off_or_count,
        "silence at which the model is asked once more (0: asked once per pause)",
    )
    turn_recheck_threshold: float = env_field(
        "VOICE_AGENT_TURN_RECHECK_THRESHOLD",
        0.85,
        _fraction,
        "the score that ends a turn when the model is asked once more",
    )
    barge_in_ms: int = env_field(
        "VOICE_AGENT_BARGE_IN_MS",
        200,
        _count,
        "speech this long over a reply pauses it (hands-free; push-to-talk cuts at once)",
    )
    interrupt_ms: int = env_field(
        "VOICE_AGENT_INTERRUPT_MS",
        1000,
        _count,
        "speech this long over a paused reply cuts it without waiting for its words "
        "(at most VOICE_AGENT_BARGE_IN_MS: every barge-in cuts at once)",
    )
    resume_ms: int = env_field(
        "VOICE_AGENT_RESUME_MS",
        1500,
        _count,
        "a paused reply with no words over it this long after the pause plays on",
    )
    backchannels: tuple[str, ...] = env_field(
        "VOICE_AGENT_BACKCHANNELS",
        BACKCHANNEL_WORDS,
        _backchannels,
        "words said over a reply that resume it (comma-separated): a transcript of only "
        "these, or of nothing, is no prompt",
    )
    preroll_ms: int = env_field(
        "VOICE_AGENT_LISTEN_PREROLL_MS", 192, _count, "audio kept from before the onset"
    )
    max_utterance_s: float = env_field(
        "VOICE_AGENT_LISTEN_MAX_S", 20.0, _number, "an utterance is cut here"
    )
    burst_s: float = env_field(
        "VOICE_AGENT_LISTEN_BURST_S", 2.0, _number, "how far ahead of real time audio may run"
    )
    max_frame_ms: int = 100  # a MIC frame holds at most this much audio (20-32 ms is usual)
    asr_model: str | None = env_field(
        "VOICE_AGENT_ASR_MODEL", None, _text, "a CTranslate2 Whisper folder"
    )
    asr_context_s: float = env_field(
        "VOICE_AGENT_ASR_CONTEXT_S",
        8.0,
        _off_or_number,
        "silence after the utterance Whisper's encoder reads (0: its whole 30 s window)",
    )
    asr_phases: int = env_field(
        "VOICE_AGENT_ASR_PHASES",
        4,
        _count,
        "the most readings of each utterance, shifted by parts of an encoder frame; the surest "
        "is kept",
    )
    asr_first: int = env_field(
        "VOICE_AGENT_ASR_FIRST",
        2,
        _count,
        "readings read first; the other phases only where they disagree or are unsure "
        "(VOICE_AGENT_ASR_PHASES or more: all at once)",
    )
    asr_sure: float = env_field(
        "VOICE_AGENT_ASR_SURE",
        0.0,
        _off_or_fraction,
        "the mean token probability under which the first readings are unsure (0: any)",
    )
    asr_murmurs: bool = env_field(
        "VOICE_AGENT_ASR_MURMURS",
        True,
        _switch,
        "on: an utterance over a paused reply that Whisper reads unsure is read again after a "
        "prompt of murmurs and short commands, and a reading of only murmurs ('Mm-hmm.') is "
        "its transcript",
    )
    asr_threads: int = env_field(
        "VOICE_AGENT_ASR_THREADS", 2, _count, "CPU threads per recognition"
    )
    asr_concurrency: int = env_field(
        "VOICE_AGENT_ASR_CONCURRENCY", 1, _count, "recognitions at once, per process"
    )
    asr_max_queue: int = env_field(
        "VOICE_AGENT_ASR_MAX_QUEUE", 8, _count, "more waiting is refused (asr_busy)"
    )

    @property
    def max_frame_bytes(self) -> int:
        return MIC_SAMPLE_RATE * self.max_frame_ms // 1000 * BYTES_PER_SAMPLE

    @property
    def max_utterance_bytes(self) -> int:
        return int(self.max_utterance_s * MIC_SAMPLE_RATE) * BYTES_PER_SAMPLE


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Which agent and LLM, which speech endpoint; which origins and host names, how long /ws
    may idle."""

    model: str = env_field(
        "VOICE_AGENT_MODEL", "demo", _text, "demo | bedrock:<model-id> | openai:<base-url>#<model>"
    )
    tts_url: str = env_field("TTS_URL", DEFAULT_TTS_URL, _text, "a local or remote WebSocket")
    sagemaker_endpoint: str | None = env_field(
        "TTS_SAGEMAKER_ENDPOINT", None, _text, "wins over TTS_URL"
    )
    region: str | None = env_field(
        ("AWS_REGION", "AWS_DEFAULT_REGION"), None, _text, "the AWS region"
    )
    allow_origins: tuple[str, ...] = env_field(
        "VOICE_AGENT_ALLOW_ORIGINS",
        (),
        _listed,
        "foreign origins the dev server lets in, besides its own (agent/doors/origins.py);"
        ' "*" lets in any',
    )
    allow_hosts: tuple[str, ...] = env_field(
        "VOICE_AGENT_ALLOW_HOSTS",
        LOOPBACK_HOSTS,
        _listed,
        "the names the dev server answers to (its Host header), against DNS rebinding;"
        ' "*" answers to any; `voice-agent dev --host` adds its own',
    )
    agent_factory: str | Callable[..., Any] | None = env_field(  # noqa: RUF009 (a field())
        "VOICE_AGENT_FACTORY",
        None,
        _factory_spec,
        "package.module:function that builds your strands Agent (docs/your_agent.md); "
        "in code, the function itself",
    )
    tool_filler: str = env_field(
        "VOICE_AGENT_TOOL_FILLER", "", _text, 'said once a tool has run long, e.g. "One moment."'
    )
    tool_filler_s: float = env_field(
        "VOICE_AGENT_TOOL_FILLER_S", 1.5, _seconds, "how long is long, for the filler"
    )
    ws_idle_s: float = env_field(
        "VOICE_AGENT_WS_IDLE_S", 300.0, _seconds, "/ws closes after this long unused"
    )
    listening: ListeningConfig = field(default_factory=ListeningConfig)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentConfig:
        """The settings the environment names; raises ``ValueError`` naming a bad variable."""
        env = os.environ if env is None else env
        return dataclasses.replace(from_env(cls, env), listening=from_env(ListeningConfig, env))

    def transport(self) -> Transport:
        """The TTS transport: SageMaker's bidirectional stream when an endpoint is named."""
        if self.sagemaker_endpoint:
            from tts_client.transports.sagemaker import SageMakerTransport

            return SageMakerTransport(self.sagemaker_endpoint, self.region)
        return WebSocketTransport(self.tts_url)
