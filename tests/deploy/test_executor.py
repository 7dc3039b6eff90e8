"""The executor on botocore-stubbed clients: state reads, refusals, the wait's limit."""

from __future__ import annotations

import pytest

from deploy.executor import DeployFailed
from deploy.plan import Call
from tests.deploy.stubs import ROLE, Stubbed, describe, runtimes


def test_wait_gives_up_after_its_limit(aws: Stubbed) -> None:
    describe(aws, "Creating")
    describe(aws, "Creating")
    with pytest.raises(DeployFailed, match="still Creating after 30 s"):
        aws.executor.wait_in_service("kokoro-tts", limit_s=30)
    assert aws.printed == ["  kokoro-tts: Creating after 0 s", "  kokoro-tts: Creating after 30 s"]


def test_a_refused_call_stops_the_run(aws: Stubbed) -> None:
    aws["sagemaker"].add_client_error(
        "create_model", service_error_code="ResourceLimitExceeded", service_message="quota"
    )
    calls = [
        Call("sagemaker", "create_model",
             {"ModelName": "m", "ExecutionRoleArn": ROLE, "PrimaryContainer": {"Image": "i"}}),
        Call("sagemaker", "delete_model", {"ModelName": "never-sent"}),
    ]  # fmt: skip
    with pytest.raises(DeployFailed, match="ResourceLimitExceeded"):
        aws.executor.run(calls)


def test_runtime_lookup_follows_pages(aws: Stubbed) -> None:
    stub = aws["bedrock-agentcore-control"]
    stub.add_response("list_agent_runtimes", {"agentRuntimes": [], "nextToken": "page2"}, {})
    runtimes(aws, "kokoro_voice_agent", token="page2")
    assert aws.executor.runtime_id("kokoro_voice_agent") == "kokoro_voice_agent-abc"
