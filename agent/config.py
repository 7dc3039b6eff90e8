"""Agent settings from the environment (the dev server's flags override them)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from agent.listening.settings import ListeningConfig
from tts_client import Transport, WebSocketTransport
from tts_protocol import STREAM_PATH

DEFAULT_TTS_URL = f"ws://127.0.0.1:8080{STREAM_PATH}"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")  # the names a local server answers to


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Which LLM, which speech endpoint; which origins and host names, how long /ws may idle."""

    model: str = "demo"  # VOICE_AGENT_MODEL: demo | bedrock:<id> | openai:<base-url>#<model>
    tts_url: str = DEFAULT_TTS_URL  # TTS_URL: a local or remote WebSocket
    sagemaker_endpoint: str | None = None  # TTS_SAGEMAKER_ENDPOINT: wins over TTS_URL
    region: str | None = None  # AWS_REGION
    # VOICE_AGENT_ALLOW_ORIGINS (comma-separated): foreign origins the dev server lets in, besides
    # its own (agent/origins.py); "*" lets in any
    allow_origins: tuple[str, ...] = ()
    # VOICE_AGENT_ALLOW_HOSTS (comma-separated): the names the dev server answers to (its Host
    # header), against DNS rebinding; "*" answers to any. `voice-agent dev --host` adds its own.
    allow_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    ws_idle_s: float = 300.0  # VOICE_AGENT_WS_IDLE_S: /ws closes after this long without use
    listening: ListeningConfig = field(default_factory=ListeningConfig)  # see listening_from_env

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentConfig:
        env = os.environ if env is None else env
        default = cls()
        return cls(
            model=env.get("VOICE_AGENT_MODEL") or default.model,
            tts_url=env.get("TTS_URL") or default.tts_url,
            sagemaker_endpoint=env.get("TTS_SAGEMAKER_ENDPOINT") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            allow_origins=_listed(env, "VOICE_AGENT_ALLOW_ORIGINS", ()),
            allow_hosts=_listed(env, "VOICE_AGENT_ALLOW_HOSTS", default.allow_hosts),
            ws_idle_s=_seconds(env, "VOICE_AGENT_WS_IDLE_S", default.ws_idle_s),
            listening=listening_from_env(env),
        )

    def transport(self) -> Transport:
        """The TTS transport: SageMaker's bidirectional stream when an endpoint is named."""
        if self.sagemaker_endpoint:
            from tts_client.transports.sagemaker import SageMakerTransport

            return SageMakerTransport(self.sagemaker_endpoint, self.region)
        return WebSocketTransport(self.tts_url)


def listening_from_env(env: Mapping[str, str]) -> ListeningConfig:
    """``ListeningConfig`` from the ``VOICE_AGENT_LISTEN_*``, ``_VAD_*``, ``_BARGE_IN_MS`` and
    ``_ASR_*`` variables (docs/listening.md); raises ``ValueError`` naming a bad one."""
    d = ListeningConfig()
    threshold = _number(env, "VOICE_AGENT_VAD_THRESHOLD", d.vad_threshold)
    if not 0 < threshold < 1:
        raise ValueError(f"VOICE_AGENT_VAD_THRESHOLD must be in (0, 1), not {threshold}")
    return ListeningConfig(
        vad_threshold=threshold,
        onset_ms=int(_number(env, "VOICE_AGENT_LISTEN_ONSET_MS", d.onset_ms)),
        silence_ms=int(_number(env, "VOICE_AGENT_LISTEN_SILENCE_MS", d.silence_ms)),
        barge_in_ms=int(_number(env, "VOICE_AGENT_BARGE_IN_MS", d.barge_in_ms)),
        preroll_ms=int(_number(env, "VOICE_AGENT_LISTEN_PREROLL_MS", d.preroll_ms)),
        max_utterance_s=_number(env, "VOICE_AGENT_LISTEN_MAX_S", d.max_utterance_s),
        burst_s=_number(env, "VOICE_AGENT_LISTEN_BURST_S", d.burst_s),
        asr_model=env.get("VOICE_AGENT_ASR_MODEL") or None,
        asr_threads=int(_number(env, "VOICE_AGENT_ASR_THREADS", d.asr_threads)),
        asr_concurrency=int(_number(env, "VOICE_AGENT_ASR_CONCURRENCY", d.asr_concurrency)),
        asr_max_queue=int(_number(env, "VOICE_AGENT_ASR_MAX_QUEUE", d.asr_max_queue)),
    )


def _listed(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """The comma-separated entries of ``env[name]``, or ``default`` when it names none."""
    entries = tuple(entry.strip() for entry in env.get(name, "").split(",") if entry.strip())
    return entries or default


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds from ``env[name]``; raises ``ValueError`` naming it."""
    raw = env.get(name)
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = math.nan
    if not value > 0:  # NaN too
        raise ValueError(f"{name} must be a positive number of seconds, not {raw!r}")
    return value


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive finite number from ``env[name]``; raises ``ValueError`` naming it."""
    raw = env.get(name)
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:  # NaN too
        raise ValueError(f"{name} must be a positive number, not {raw!r}")
    return value
