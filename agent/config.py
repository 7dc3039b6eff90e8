"""Agent settings from the environment (the dev server's flags override them)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from tts_client import Transport, WebSocketTransport
from tts_protocol import STREAM_PATH

DEFAULT_TTS_URL = f"ws://127.0.0.1:8080{STREAM_PATH}"


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Which LLM, which speech endpoint; which browser origins, how long an idle socket lives."""

    model: str = "demo"  # VOICE_AGENT_MODEL: demo | bedrock:<id> | openai:<base-url>#<model>
    tts_url: str = DEFAULT_TTS_URL  # TTS_URL: a local or remote WebSocket
    sagemaker_endpoint: str | None = None  # TTS_SAGEMAKER_ENDPOINT: wins over TTS_URL
    region: str | None = None  # AWS_REGION
    # VOICE_AGENT_ALLOW_ORIGINS (comma-separated): foreign origins the dev server lets in, besides
    # its own (agent/origins.py); "*" lets in any
    allow_origins: tuple[str, ...] = ()
    ws_idle_s: float = 300.0  # VOICE_AGENT_WS_IDLE_S: /ws closes after this long without use

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentConfig:
        env = os.environ if env is None else env
        default = cls()
        return cls(
            model=env.get("VOICE_AGENT_MODEL") or default.model,
            tts_url=env.get("TTS_URL") or default.tts_url,
            sagemaker_endpoint=env.get("TTS_SAGEMAKER_ENDPOINT") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
            allow_origins=tuple(
                origin.strip()
                for origin in env.get("VOICE_AGENT_ALLOW_ORIGINS", "").split(",")
                if origin.strip()
            ),
            ws_idle_s=_seconds(env, "VOICE_AGENT_WS_IDLE_S", default.ws_idle_s),
        )

    def transport(self) -> Transport:
        """The TTS transport: SageMaker's bidirectional stream when an endpoint is named."""
        if self.sagemaker_endpoint:
            from tts_client.transports.sagemaker import SageMakerTransport

            return SageMakerTransport(self.sagemaker_endpoint, self.region)
        return WebSocketTransport(self.tts_url)


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
