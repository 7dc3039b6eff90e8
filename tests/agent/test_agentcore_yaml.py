"""agentcore.yaml validates against the starter toolkit's schema and matches ``deploy agent``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml
from bedrock_agentcore_starter_toolkit.utils.runtime.schema import BedrockAgentCoreConfigSchema

from deploy.cli import DEFAULT_AGENT_NAME
from deploy.plan import AgentSpec, agent_calls

ROOT = Path(__file__).resolve().parents[2]


def test_agentcore_yaml_matches_the_toolkit_schema() -> None:
    config = BedrockAgentCoreConfigSchema.model_validate(
        yaml.safe_load((ROOT / "agentcore.yaml").read_text())
    )
    agent = config.get_agent_config()
    assert agent.validate(for_local=True) == []
    assert agent.platform == "linux/arm64" and agent.deployment_type == "container"
    assert agent.aws.protocol_configuration.server_protocol == "HTTP"
    assert agent.aws.observability.enabled
    assert agent.aws.lifecycle_configuration.idle_runtime_session_timeout
    entry = ROOT / agent.entrypoint
    assert entry.exists() and "BedrockAgentCoreApp" in entry.read_text()


def test_agentcore_yaml_matches_what_deploy_agent_creates() -> None:
    """``voice-agent deploy agent`` and ``agentcore launch`` make the same runtime."""
    config = BedrockAgentCoreConfigSchema.model_validate(
        yaml.safe_load((ROOT / "agentcore.yaml").read_text())
    )
    agent = config.get_agent_config()
    spec = AgentSpec("n", "image", "role", tts_endpoint="kokoro-tts", region=agent.aws.region)
    (call,) = agent_calls(replace(spec, name=agent.name), runtime_id=None)
    assert call.params["agentRuntimeName"] == agent.name == DEFAULT_AGENT_NAME
    lifecycle = agent.aws.lifecycle_configuration
    assert call.params["lifecycleConfiguration"] == {
        "idleRuntimeSessionTimeout": lifecycle.idle_runtime_session_timeout,
        "maxLifetime": lifecycle.max_lifetime,
    }
    assert call.params["networkConfiguration"]["networkMode"] == (
        agent.aws.network_configuration.network_mode
    )
    assert call.params["protocolConfiguration"]["serverProtocol"] == (
        agent.aws.protocol_configuration.server_protocol
    )
    text = (ROOT / "agentcore.yaml").read_text()
    for name in spec.environment():  # the yaml documents the same environment
        assert f"#   {name}=" in text, name
    assert f"VOICE_AGENT_MODEL={spec.model}" in text
