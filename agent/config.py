"""Agent settings from the environment (the dev server's flags override them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from tts_client import Transport, WebSocketTransport
from tts_protocol import STREAM_PATH

DEFAULT_TTS_URL = f"ws://127.0.0.1:8080{STREAM_PATH}"


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """Which LLM, which speech endpoint."""

    model: str = "demo"  # VOICE_AGENT_MODEL: demo | bedrock:<id> | openai:<base-url>#<model>
    tts_url: str = DEFAULT_TTS_URL  # TTS_URL: a local or remote WebSocket
    sagemaker_endpoint: str | None = None  # TTS_SAGEMAKER_ENDPOINT: wins over TTS_URL
    region: str | None = None  # AWS_REGION

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentConfig:
        env = os.environ if env is None else env
        default = cls()
        return cls(
            model=env.get("VOICE_AGENT_MODEL") or default.model,
            tts_url=env.get("TTS_URL") or default.tts_url,
            sagemaker_endpoint=env.get("TTS_SAGEMAKER_ENDPOINT") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None,
        )

    def transport(self) -> Transport:
        """The TTS transport: SageMaker's bidirectional stream when an endpoint is named."""
        if self.sagemaker_endpoint:
            from tts_client.transports.sagemaker import SageMakerTransport

            return SageMakerTransport(self.sagemaker_endpoint, self.region)
        return WebSocketTransport(self.tts_url)
