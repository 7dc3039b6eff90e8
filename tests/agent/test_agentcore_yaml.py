"""agentcore.yaml validates against the starter toolkit's own schema."""

from __future__ import annotations

from pathlib import Path

import yaml
from bedrock_agentcore_starter_toolkit.utils.runtime.schema import BedrockAgentCoreConfigSchema

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
