"""``voice-agent deploy`` against botocore-stubbed clients: every call is checked against the
service's own model (botocore's ``Stubber`` validates parameters and responses), in order.
No credentials, no network: the clients carry fake static keys and never send anything."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import ANY
from botocore.validate import validate_parameters

from deploy.cli import add_arguments, run
from deploy.plan import SCALING_METRIC
from tests.deploy.stubs import (
    ENDPOINT_ARN,
    IMAGE,
    NOW,
    RESOURCE,
    ROLE,
    RUNTIME_ARN,
    Stubbed,
    describe,
    no_endpoint,
    runtimes,
)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


def expect_model_and_config(aws: Stubbed) -> None:
    aws["sagemaker"].add_response(
        "create_model",
        {"ModelArn": "arn:aws:sagemaker:us-east-1:111122223333:model/kokoro-tts-x"},
        {
            "ModelName": ANY,
            "ExecutionRoleArn": ROLE,
            "PrimaryContainer": {
                "Image": IMAGE,
                "Environment": {"TTS_ENGINE": "torch", "TTS_DEVICE": "cuda"},
                "ModelDataUrl": "s3://bucket/kokoro/model.tar.gz",
            },
        },
    )
    aws["sagemaker"].add_response(
        "create_endpoint_config",
        {"EndpointConfigArn": "arn:aws:sagemaker:us-east-1:111122223333:endpoint-config/x"},
        {"EndpointConfigName": ANY, "ProductionVariants": ANY},
    )


def expect_endpoint(aws: Stubbed, operation: str) -> None:
    """``create_endpoint`` or ``update_endpoint`` of kokoro-tts with this deploy's config."""
    aws["sagemaker"].add_response(
        operation,
        {"EndpointArn": ENDPOINT_ARN},
        {"EndpointName": "kokoro-tts", "EndpointConfigName": ANY},
    )


def expect_scaling(aws: Stubbed) -> None:
    resource = "endpoint/kokoro-tts/variant/AllTraffic"
    aws["application-autoscaling"].add_response(
        "register_scalable_target",
        {},
        {
            "ServiceNamespace": "sagemaker",
            "ResourceId": resource,
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "MinCapacity": 1,
            "MaxCapacity": 4,
        },
    )
    aws["application-autoscaling"].add_response(
        "put_scaling_policy",
        {"PolicyARN": "arn:aws:autoscaling:us-east-1:111122223333:scalingPolicy:x"},
        {
            "PolicyName": "kokoro-tts-concurrent-streams",
            "ServiceNamespace": "sagemaker",
            "ResourceId": resource,
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "TargetValue": 8.0,
                "PredefinedMetricSpecification": {"PredefinedMetricType": SCALING_METRIC},
                "ScaleOutCooldown": 60,
                "ScaleInCooldown": 900,
            },
        },
    )


TTS_ARGS = (
    "tts", "--image", IMAGE, "--role", ROLE, "--model-data", "s3://bucket/kokoro/model.tar.gz",
    "--skip-acceptance",
)  # fmt: skip


def test_tts_creates_when_absent(aws: Stubbed) -> None:
    no_endpoint(aws)
    expect_model_and_config(aws)
    expect_endpoint(aws, "create_endpoint")
    describe(aws, "Creating")
    describe(aws, "InService")
    expect_scaling(aws)
    assert run(parse(*TTS_ARGS), aws.executor) == 0
    assert "  kokoro-tts: Creating after 0 s" in aws.printed
    assert "  kokoro-tts: InService after 30 s" in aws.printed


def test_tts_updates_in_place_when_present(aws: Stubbed) -> None:
    describe(aws, "InService")
    expect_model_and_config(aws)
    expect_endpoint(aws, "update_endpoint")  # never delete_endpoint: it keeps serving
    describe(aws, "Updating")
    describe(aws, "InService", config="kokoro-tts-new")
    expect_scaling(aws)
    assert run(parse(*TTS_ARGS), aws.executor) == 0
    assert [line.strip() for line in aws.printed if "." in line and ":" not in line] == [
        "sagemaker.create_model",
        "sagemaker.create_endpoint_config",
        "sagemaker.update_endpoint",
        "application-autoscaling.register_scalable_target",
        "application-autoscaling.put_scaling_policy",
    ]


def test_wait_failure_reports_sagemakers_reason(aws: Stubbed, capsys: Any) -> None:
    no_endpoint(aws)
    expect_model_and_config(aws)
    expect_endpoint(aws, "create_endpoint")
    describe(aws, "Creating")
    describe(aws, "Failed", FailureReason="The primary container did not pass the ping check.")
    assert run(parse(*TTS_ARGS), aws.executor) == 1  # and no autoscaling is registered
    assert "did not pass the ping check" in capsys.readouterr().out


def test_failed_update_rolls_back_and_fails(aws: Stubbed, capsys: Any) -> None:
    describe(aws, "InService")
    expect_model_and_config(aws)
    expect_endpoint(aws, "update_endpoint")
    describe(aws, "RollingBack")
    assert run(parse(*TTS_ARGS), aws.executor) == 1
    assert "RollingBack" in capsys.readouterr().out


def test_dry_run_calls_nothing_and_prints_both_branches(aws: Stubbed, capsys: Any) -> None:
    # nothing is stubbed: any call, even a read, would fail with UnStubbedResponseError
    assert run(parse(*TTS_ARGS, "--dry-run"), aws.executor) == 0
    plans = json.loads(capsys.readouterr().out)
    scaling = ["register_scalable_target", "put_scaling_policy"]
    assert [c["operation"] for c in plans["if_absent"]] == [
        "create_model",
        "create_endpoint_config",
        "create_endpoint",
        *scaling,
    ]
    updated = [c["operation"] for c in plans["if_present"]]
    assert "update_endpoint" in updated and "create_endpoint" not in updated
    assert "delete_endpoint" not in updated and updated[-2:] == scaling
    assert run(parse(*AGENT_ARGS, "--dry-run"), aws.executor) == 0
    agent = json.loads(capsys.readouterr().out)
    assert [c["operation"] for c in agent["if_absent"]] == ["create_agent_runtime"]
    assert [c["operation"] for c in agent["if_present"]] == ["update_agent_runtime"]
    plan = plans["if_absent"]
    variant = plan[1]["params"]["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.g6.xlarge" and variant["InitialInstanceCount"] == 1


AGENT_ARGS = ("agent", "--image", IMAGE, "--role", ROLE, "--tts-endpoint", "kokoro-tts")
AGENT_PARAMS = {
    "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": IMAGE}},
    "roleArn": ROLE,
    "networkConfiguration": {"networkMode": "PUBLIC"},
    "protocolConfiguration": {"serverProtocol": "HTTP"},
    "lifecycleConfiguration": {"idleRuntimeSessionTimeout": 900, "maxLifetime": 28800},
    "environmentVariables": {
        "AWS_REGION": "us-east-1",
        "TTS_SAGEMAKER_ENDPOINT": "kokoro-tts",
        "VOICE_AGENT_MODEL": "bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0",
    },
}
RUNTIME = {"agentRuntimeArn": RUNTIME_ARN, "agentRuntimeId": "kokoro_voice_agent-abc",
           "agentRuntimeVersion": "2", "createdAt": NOW, "status": "CREATING"}  # fmt: skip


def test_agent_creates_the_runtime_and_prints_the_invoke_command(aws: Stubbed, capsys: Any) -> None:
    runtimes(aws, "someone_else")
    aws["bedrock-agentcore-control"].add_response(
        "create_agent_runtime",
        RUNTIME,
        {"agentRuntimeName": "kokoro_voice_agent", **AGENT_PARAMS},
    )
    assert run(parse(*AGENT_ARGS), aws.executor) == 0
    assert f"--agent-arn {RUNTIME_ARN}" in capsys.readouterr().out


def test_agent_updates_the_runtime_with_that_name(aws: Stubbed) -> None:
    runtimes(aws, "kokoro_voice_agent")
    aws["bedrock-agentcore-control"].add_response(
        "update_agent_runtime",
        RUNTIME | {"lastUpdatedAt": NOW},
        {"agentRuntimeId": "kokoro_voice_agent-abc", **AGENT_PARAMS},
    )
    assert run(parse(*AGENT_ARGS), aws.executor) == 0


def teardown_state(aws: Stubbed) -> None:
    describe(aws, "InService", config="kokoro-tts-20260101")
    aws["sagemaker"].add_response(
        "describe_endpoint_config",
        {
            "EndpointConfigName": "kokoro-tts-20260101",
            "EndpointConfigArn": "arn:aws:sagemaker:us-east-1:111122223333:endpoint-config/x",
            "ProductionVariants": [{"VariantName": "AllTraffic", "ModelName": "kokoro-tts-m"}],
            "CreationTime": NOW,
        },
        {"EndpointConfigName": "kokoro-tts-20260101"},
    )
    aws["application-autoscaling"].add_response(
        "describe_scalable_targets",
        {"ScalableTargets": [{
            "ServiceNamespace": "sagemaker",
            "ResourceId": "endpoint/kokoro-tts/variant/AllTraffic",
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "MinCapacity": 1, "MaxCapacity": 4, "RoleARN": ROLE, "CreationTime": NOW,
        }]},
        {"ServiceNamespace": "sagemaker", "ResourceIds": [RESOURCE]},
    )  # fmt: skip
    runtimes(aws, "kokoro_voice_agent")


def test_teardown_without_confirmation_deletes_nothing(aws: Stubbed, capsys: Any) -> None:
    teardown_state(aws)
    assert run(parse("teardown"), aws.executor) == 1
    assert "--yes-delete" in capsys.readouterr().out


def test_teardown_removes_everything_by_name(aws: Stubbed) -> None:
    teardown_state(aws)
    aws["application-autoscaling"].add_response(
        "deregister_scalable_target",
        {},
        {
            "ServiceNamespace": "sagemaker",
            "ResourceId": "endpoint/kokoro-tts/variant/AllTraffic",
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
        },
    )
    aws["sagemaker"].add_response("delete_endpoint", {}, {"EndpointName": "kokoro-tts"})
    aws["sagemaker"].add_response(
        "delete_endpoint_config", {}, {"EndpointConfigName": "kokoro-tts-20260101"}
    )
    aws["sagemaker"].add_response("delete_model", {}, {"ModelName": "kokoro-tts-m"})
    aws["bedrock-agentcore-control"].add_response(
        "delete_agent_runtime", {"status": "DELETING"}, {"agentRuntimeId": "kokoro_voice_agent-abc"}
    )
    assert run(parse("teardown", "--yes-delete"), aws.executor) == 0


def test_iam_policies_name_only_the_endpoint_and_the_model(capsys: Any) -> None:
    assert run(parse("iam", "--account", "111122223333")) == 0
    policies = json.loads(capsys.readouterr().out)
    resources = {
        role: {s["Sid"]: s["Resource"] for s in policies[role]["permissions"]["Statement"]}
        for role in ("agent_role", "endpoint_role")
    }
    model = "anthropic.claude-haiku-4-5-20251001-v1:0"  # the default, a US inference profile
    assert resources["agent_role"] == {
        "PullTheImage": "arn:aws:ecr:us-east-1:111122223333:repository/kokoro-voice-agent",
        "EcrLogin": "*",
        "SpeakThroughTheTTSEndpoint": ENDPOINT_ARN,
        "StreamFromTheModel": [
            f"arn:aws:bedrock:us-east-1:111122223333:inference-profile/us.{model}",
            f"arn:aws:bedrock:*::foundation-model/{model}",
        ],
        "WriteLogs": (
            "arn:aws:logs:us-east-1:111122223333:log-group:/aws/bedrock-agentcore/runtimes/*"
        ),
    }
    assert resources["endpoint_role"] == {
        "PullTheImage": "arn:aws:ecr:us-east-1:111122223333:repository/kokoro-tts",
        "EcrLogin": "*",  # ecr:GetAuthorizationToken takes no resource
        "WriteLogs": "arn:aws:logs:us-east-1:111122223333:log-group:/aws/sagemaker/Endpoints/*",
    }
    agent_trust = policies["agent_role"]["trust"]["Statement"][0]["Principal"]
    assert agent_trust == {"Service": "bedrock-agentcore.amazonaws.com"}
    trust = policies["endpoint_role"]["trust"]["Statement"][0]["Principal"]
    assert trust == {"Service": "sagemaker.amazonaws.com"}


def test_iam_policies_follow_the_model_endpoint_and_model_data_asked_for(capsys: Any) -> None:
    argv = ["iam", "--account", "111122223333", "--region", "eu-west-1", "--tts-endpoint", "tts"]
    argv += ["--model", "bedrock:amazon.nova-pro-v1:0", "--model-data", "s3://b/k/model.tar.gz"]
    argv += ["--ecr-repository", "images"]
    assert run(parse(*argv)) == 0
    policies = json.loads(capsys.readouterr().out)
    agent = {s["Sid"]: s["Resource"] for s in policies["agent_role"]["permissions"]["Statement"]}
    assert agent["SpeakThroughTheTTSEndpoint"] == (
        "arn:aws:sagemaker:eu-west-1:111122223333:endpoint/tts"
    )
    assert agent["StreamFromTheModel"] == [
        "arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-pro-v1:0"
    ]
    endpoint = {
        s["Sid"]: s["Resource"] for s in policies["endpoint_role"]["permissions"]["Statement"]
    }
    assert endpoint["ReadTheModelData"] == "arn:aws:s3:::b/k/model.tar.gz"
    assert endpoint["PullTheImage"] == "arn:aws:ecr:eu-west-1:111122223333:repository/images"


def valid_for_botocore(aws: Stubbed, calls: list[dict[str, Any]]) -> bool:
    """Every printed call names a real operation and its parameters fit the service model."""
    for call in calls:
        client = aws.client(call["service"])
        name = client.meta.method_to_api_mapping[call["operation"]]
        shape = client.meta.service_model.operation_model(name).input_shape
        validate_parameters(call["params"], shape)  # raises ParamValidationError
    return True


def test_status_and_teardown_dry_runs_call_nothing_not_even_a_read(
    aws: Stubbed, capsys: Any
) -> None:
    # nothing is stubbed: any call would fail with UnStubbedResponseError
    assert run(parse("status", "--dry-run"), aws.executor) == 0
    reads = json.loads(capsys.readouterr().out)
    assert [c["operation"] for c in reads] == [
        "describe_endpoint",
        "describe_endpoint_config",
        "describe_scalable_targets",
        "list_agent_runtimes",
    ]
    assert run(parse("teardown", "--dry-run", "--yes-delete"), aws.executor) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["reads"] == reads
    assert [c["operation"] for c in plan["deletes"]] == [
        "deregister_scalable_target",
        "delete_endpoint",
        "delete_endpoint_config",
        "delete_model",
        "delete_agent_runtime",
    ]
    assert plan["deletes"][-1]["params"] == {"agentRuntimeId": "<id of kokoro_voice_agent>"}
    assert valid_for_botocore(aws, plan["reads"] + plan["deletes"])
    aws.verify()


def test_dry_run_refuses_an_image_and_a_role_aws_would_refuse(aws: Stubbed, capsys: Any) -> None:
    assert run(parse("tts", "--image", "foo", "--role", "bar", "--dry-run"), aws.executor) == 3
    out = capsys.readouterr().out
    assert "--image 'foo' is not an ECR image URI" in out
    assert "--role 'bar' is not an IAM role ARN" in out
    assert "[" not in out.splitlines()[0] and '"operation"' not in out  # no plan printed


def test_dry_run_refuses_capacity_bounds_out_of_order(aws: Stubbed, capsys: Any) -> None:
    argv = ("tts", "--image", IMAGE, "--role", ROLE, "--min", "5", "--max", "2", "--dry-run")
    assert run(parse(*argv), aws.executor) == 3
    assert "--max 2 is below --min 5" in capsys.readouterr().out
    assert run(parse(*argv[:5], "--min", "0", "--dry-run"), aws.executor) == 3
    assert "--min 0: an endpoint runs at least 1 instance" in capsys.readouterr().out


def test_agent_refuses_an_image_that_is_not_in_ecr(aws: Stubbed, capsys: Any) -> None:
    argv = ("agent", "--image", "docker.io/me/agent:1", "--role", ROLE, "--tts-endpoint", "k")
    assert run(parse(*argv, "--dry-run"), aws.executor) == 3
    assert "not an ECR image URI" in capsys.readouterr().out


def test_iam_refuses_a_model_that_is_only_a_profile_region(capsys: Any) -> None:
    for model in ("bedrock:us", "bedrock:eu."):
        assert run(parse("iam", "--account", "111122223333", "--model", model)) == 3
        out = capsys.readouterr().out
        assert "invalid flags, nothing called" in out and "names an inference profile" in out


def test_dry_run_refuses_a_model_spec_the_runtime_could_not_start(
    aws: Stubbed, capsys: Any
) -> None:
    argv = ("agent", "--image", IMAGE, "--role", ROLE, "--tts-endpoint", "k", "--model", "gpt4")
    assert run(parse(*argv, "--dry-run"), aws.executor) == 3
    assert "--model: unknown model spec 'gpt4'" in capsys.readouterr().out


def test_dry_run_refuses_an_engine_device_and_instance_type_that_cannot_run(
    aws: Stubbed, capsys: Any
) -> None:
    argv = ("tts", "--image", IMAGE, "--role", ROLE, "--engine", "onnx", "--device", "cuda")
    assert run(parse(*argv, "--instance-type", "ml.banana.xlarge", "--dry-run"), aws.executor) == 3
    out = capsys.readouterr().out
    assert "--instance-type 'ml.banana.xlarge' is not a SageMaker endpoint instance type" in out
    assert "--device cuda with --engine onnx: only torch runs on CUDA" in out
    assert '"operation"' not in out  # no plan printed


def test_onnx_runs_on_the_cpu_unless_told_otherwise(aws: Stubbed, capsys: Any) -> None:
    argv = ("tts", "--image", IMAGE, "--role", ROLE, "--engine", "onnx", "--dry-run")
    assert run(parse(*argv), aws.executor) == 0
    (model, *_) = json.loads(capsys.readouterr().out)["if_absent"]
    assert model["params"]["PrimaryContainer"]["Environment"] == {
        "TTS_ENGINE": "onnx",
        "TTS_DEVICE": "cpu",
    }


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The standard chain finds nothing: no keys, no files, no instance or container metadata."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.parametrize("argv", [("status",), ("teardown", "--yes-delete")])
def test_no_credentials_is_one_line_and_exit_1(
    no_credentials: None, argv: tuple[str, ...], capsys: Any
) -> None:
    assert run(parse(*argv)) == 1  # real boto3 clients: they fail before sending anything
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"deploy {argv[0]}: no AWS credentials: set up the standard chain (aws configure, "
        "AWS_PROFILE, AWS_ACCESS_KEY_ID ...)\n"
    )


def test_teardown_without_confirmation_needs_no_credentials(
    no_credentials: None, capsys: Any
) -> None:
    assert run(parse("teardown")) == 1  # nothing deleted, as ever without --yes-delete
    out, err = capsys.readouterr()
    plan = json.loads(out)  # what a dry run prints: every delete the reads could lead to
    assert [c["operation"] for c in plan["deletes"]][-1] == "delete_agent_runtime"
    assert err.count("\n") == 1 and err.startswith("deploy teardown: nothing read, nothing deleted")


def test_agent_names_your_agent_factory_to_the_runtime(aws: Stubbed, capsys: Any) -> None:
    argv = (*AGENT_ARGS, "--agent", "my_agent:create_agent", "--dry-run")
    assert run(parse(*argv), aws.executor) == 0
    [create] = json.loads(capsys.readouterr().out)["if_absent"]
    assert create["params"]["environmentVariables"] == {
        **AGENT_PARAMS["environmentVariables"],  # type: ignore[dict-item]
        "VOICE_AGENT_FACTORY": "my_agent:create_agent",
    }
    assert run(parse(*AGENT_ARGS, "--agent", "my_agent.py", "--dry-run"), aws.executor) == 3
    assert "--agent 'my_agent.py' is not package.module:function" in capsys.readouterr().out
