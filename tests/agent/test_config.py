"""Agent settings from the environment, and the transport they choose."""

from __future__ import annotations

import sys

import pytest

from agent.config import DEFAULT_TTS_URL, AgentConfig
from tts_client import TransportUnavailable, WebSocketTransport


def test_defaults_are_the_offline_local_stack() -> None:
    config = AgentConfig.from_env({})
    assert config == AgentConfig(model="demo", tts_url=DEFAULT_TTS_URL)
    transport = config.transport()
    assert isinstance(transport, WebSocketTransport) and transport.url == DEFAULT_TTS_URL


def test_environment_names_model_speech_and_region() -> None:
    env = {
        "VOICE_AGENT_MODEL": "bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0",
        "TTS_URL": "ws://10.0.0.5:8080/ws",
        "TTS_SAGEMAKER_ENDPOINT": "kokoro-tts",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    config = AgentConfig.from_env(env)
    assert config.model.startswith("bedrock:") and config.tts_url.endswith("/ws")
    assert (config.sagemaker_endpoint, config.region) == ("kokoro-tts", "eu-west-1")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="on 3.12 the SDK may be installed")
def test_sagemaker_endpoint_needs_the_312_sdk_here() -> None:
    config = AgentConfig(sagemaker_endpoint="kokoro-tts", region="us-east-1")
    with pytest.raises(TransportUnavailable, match=r"3\.12"):
        config.transport()


def test_environment_names_allowed_origins_and_the_idle_time() -> None:
    env = {
        "VOICE_AGENT_ALLOW_ORIGINS": " https://app.example.com, ,http://localhost:5173 ",
        "VOICE_AGENT_WS_IDLE_S": "42.5",
    }
    config = AgentConfig.from_env(env)
    assert config.allow_origins == ("https://app.example.com", "http://localhost:5173")
    assert config.ws_idle_s == 42.5
    assert AgentConfig.from_env({}).allow_origins == ()  # same origin only


def test_environment_names_the_hosts_served_loopback_by_default() -> None:
    config = AgentConfig.from_env({"VOICE_AGENT_ALLOW_HOSTS": "voice.lan, 10.0.0.5"})
    assert config.allow_hosts == ("voice.lan", "10.0.0.5")
    assert AgentConfig.from_env({}).allow_hosts == ("localhost", "127.0.0.1", "::1")


@pytest.mark.parametrize("idle", ["soon", "0", "-1", "nan"])
def test_a_bad_idle_time_fails_at_start_with_its_name(idle: str) -> None:
    with pytest.raises(ValueError, match="VOICE_AGENT_WS_IDLE_S must be a positive"):
        AgentConfig.from_env({"VOICE_AGENT_WS_IDLE_S": idle})
