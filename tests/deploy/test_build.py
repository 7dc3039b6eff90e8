"""The image build's calls as data, and the executor's wait on a build (botocore-stubbed)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from deploy.build import ImageBuild, bucket_create, build_failure, project_write, start
from deploy.executor import DeployFailed
from tests.deploy.stubs import Stubbed

BUILD = ImageBuild(
    "kokoro_voice_agent", "us-east-1", "arn:aws:iam::111122223333:role/b", "0123456789ab",
    account="111122223333",
)  # fmt: skip
LINK = "https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#logEvent:group=x"


def test_the_names_follow_the_agent_the_account_and_the_tag() -> None:
    assert BUILD.bucket == "kokoro-voice-agent-builds-111122223333-us-east-1"
    assert BUILD.key == "kokoro_voice_agent/0123456789ab.zip"
    assert BUILD.project == "kokoro_voice_agent-image"
    assert BUILD.image == (
        "111122223333.dkr.ecr.us-east-1.amazonaws.com/kokoro-voice-agent:0123456789ab"
    )
    assert replace(BUILD, bucket_name="mine").bucket == "mine"


def test_a_bucket_outside_us_east_1_names_its_region() -> None:
    assert "CreateBucketConfiguration" not in bucket_create(BUILD).params
    eu = replace(BUILD, region="eu-west-1")
    assert bucket_create(eu).params["CreateBucketConfiguration"] == {
        "LocationConstraint": "eu-west-1"
    }


def test_the_project_builds_on_arm64_with_docker_and_each_build_pins_its_inputs() -> None:
    project = project_write(BUILD, exists=False).params
    assert project["environment"]["type"] == "ARM_CONTAINER"
    assert project["environment"]["privilegedMode"] is True
    assert project["source"]["location"] == f"{BUILD.bucket}/{BUILD.key}"
    assert project_write(BUILD, exists=True).operation == "update_project"
    started = start(BUILD).params
    assert started["sourceLocationOverride"] == project["source"]["location"]
    assert started["environmentVariablesOverride"] == project["environment"]["environmentVariables"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"build_role": ""}, "--build-role ARN: building the image needs CodeBuild's"),
        ({"build_role": "builder"}, "--build-role 'builder' is not an IAM role ARN"),
        ({"repository": "Kokoro"}, "--repository 'Kokoro' is not an ECR repository name"),
        ({"bucket_name": "My_Bucket"}, "--build-bucket 'My_Bucket' is not an S3 bucket name"),
        ({"agent_name": "a" * 300}, "cannot name a CodeBuild project"),
    ],
)
def test_each_flag_aws_would_refuse_is_named(change: dict[str, Any], says: str) -> None:
    assert BUILD.problems() == []
    problems = replace(BUILD, **change).problems()
    assert len(problems) == 1 and says in problems[0]


def finished(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "kokoro_voice_agent-image:b1", "buildStatus": status, **extra}


def test_a_failure_names_the_build_its_phase_the_reason_and_the_logs() -> None:
    failed = finished(
        "FAILED",
        currentPhase="COMPLETED",
        phases=[
            {"phaseType": "PRE_BUILD", "phaseStatus": "SUCCEEDED"},
            {"phaseType": "BUILD", "phaseStatus": "FAILED", "contexts": [
                {"statusCode": "COMMAND_EXECUTION_ERROR", "message": "docker build: exit 1"}]},
        ],
        logs={"deepLink": LINK},
    )  # fmt: skip
    assert build_failure(failed) == (
        f"image build kokoro_voice_agent-image:b1 FAILED in BUILD (docker build: exit 1); "
        f"logs: {LINK}"
    )
    assert build_failure(finished("STOPPED", currentPhase="BUILD")) == (
        "image build kokoro_voice_agent-image:b1 STOPPED in BUILD; no logs link "
        "(see the CodeBuild console)"
    )


def poll(aws: Stubbed, status: str, phase: str = "BUILD", **extra: Any) -> None:
    aws["codebuild"].add_response(
        "batch_get_builds",
        {"builds": [finished(status, currentPhase=phase, **extra)]},
        {"ids": ["kokoro_voice_agent-image:b1"]},
    )


def test_the_wait_prints_a_phase_a_poll_and_gives_up_at_its_limit(aws: Stubbed) -> None:
    poll(aws, "IN_PROGRESS", "PROVISIONING")
    poll(aws, "IN_PROGRESS", "BUILD")
    with pytest.raises(DeployFailed, match="still BUILD after 30 s"):
        aws.executor.wait_build("kokoro_voice_agent-image:b1", limit_s=30)
    assert aws.printed == [
        "  build kokoro_voice_agent-image:b1: PROVISIONING (IN_PROGRESS) after 0 s",
        "  build kokoro_voice_agent-image:b1: BUILD (IN_PROGRESS) after 30 s",
    ]


@pytest.mark.parametrize("status", ["FAILED", "FAULT", "STOPPED", "TIMED_OUT"])
def test_every_unsuccessful_end_fails_the_deploy(aws: Stubbed, status: str) -> None:
    poll(aws, status, logs={"deepLink": LINK})
    with pytest.raises(DeployFailed, match=f"b1 {status} in BUILD; logs: "):
        aws.executor.wait_build("kokoro_voice_agent-image:b1")


def test_a_build_that_is_not_found_fails(aws: Stubbed) -> None:
    aws["codebuild"].add_response(
        "batch_get_builds", {"builds": [], "buildsNotFound": ["x:1"]}, {"ids": ["x:1"]}
    )
    with pytest.raises(DeployFailed, match="image build x:1 not found"):
        aws.executor.wait_build("x:1")
