"""The pure plan builders: names, the container's environment, what each call carries."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from deploy.plan import (
    SCALING_METRIC,
    AgentSpec,
    Call,
    TTSSpec,
    agent_calls,
    container_environment,
    image_and_role_problems,
    scaling_calls,
    state_reads,
    tts_calls,
    tts_teardown_calls,
)

SPEC = TTSSpec(name="kokoro-tts", image="img", model_data=None, role_arn="role")


def test_versioned_names_fit_sagemakers_limit() -> None:
    long = TTSSpec(name="k" * 60, image="img", model_data=None, role_arn="role")
    assert SPEC.versioned("20260101-000000") == "kokoro-tts-20260101-000000"
    assert len(long.versioned("20260101-000000")) == 63


def test_model_data_is_optional_and_the_environment_is_passed() -> None:
    spec = TTSSpec(
        name="kokoro-tts",
        image="img",
        model_data=None,
        role_arn="role",
        environment=container_environment("onnx", "cpu", max_sessions=4),
    )
    model, config, endpoint = tts_calls(spec, "s", endpoint_exists=False)
    assert model.params["PrimaryContainer"] == {
        "Image": "img",
        "Environment": {"TTS_ENGINE": "onnx", "TTS_DEVICE": "cpu", "TTS_MAX_SESSIONS": "4"},
    }
    assert config.params["ProductionVariants"][0]["ModelName"] == "kokoro-tts-s"
    assert endpoint.operation == "create_endpoint"


def test_an_existing_endpoint_is_updated_never_deleted() -> None:
    calls = tts_calls(SPEC, "s", endpoint_exists=True)
    assert [c.operation for c in calls] == [
        "create_model",
        "create_endpoint_config",
        "update_endpoint",
    ]
    assert calls[-1].params == {"EndpointName": "kokoro-tts", "EndpointConfigName": "kokoro-tts-s"}
    assert calls[-1].note == "in place: the endpoint keeps serving"


def test_the_container_defaults_to_the_gpu_engine_and_gets_ten_minutes_to_start() -> None:
    assert container_environment() == {"TTS_ENGINE": "torch", "TTS_DEVICE": "cuda"}
    _, config, _ = tts_calls(SPEC, "s", endpoint_exists=False)
    variant = config.params["ProductionVariants"][0]
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 600  # model load, warm-up


def test_scaling_tracks_open_streams_per_instance() -> None:
    target, policy = scaling_calls(SPEC)
    assert (target.params["MinCapacity"], target.params["MaxCapacity"]) == (1, 4)
    tracking = policy.params["TargetTrackingScalingPolicyConfiguration"]
    assert tracking["PredefinedMetricSpecification"]["PredefinedMetricType"] == SCALING_METRIC
    assert tracking["ScaleInCooldown"] > tracking["ScaleOutCooldown"]


def test_teardown_order_scaling_first_models_last() -> None:
    calls = tts_teardown_calls("kokoro-tts", "cfg", ["m1", "m2"], scaled=True)
    assert [c.operation for c in calls] == [
        "deregister_scalable_target",
        "delete_endpoint",
        "delete_endpoint_config",
        "delete_model",
        "delete_model",
    ]


@pytest.mark.parametrize(
    "image",
    [
        "111122223333.dkr.ecr.us-east-1.amazonaws.com/kokoro-tts",
        "111122223333.dkr.ecr.eu-west-2.amazonaws.com/team/kokoro-tts:v1.2",
        "111122223333.dkr.ecr.cn-north-1.amazonaws.com.cn/kokoro@sha256:" + "a" * 64,
    ],
)
def test_ecr_image_uris_pass(image: str) -> None:
    assert image_and_role_problems(image, "arn:aws:iam::111122223333:role/path/r") == []


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"image": "kokoro-tts:1"}, "--image 'kokoro-tts:1' is not an ECR image URI"),
        ({"image": "11112222333.dkr.ecr.us-east-1.amazonaws.com/k"}, "--image"),
        ({"role_arn": "arn:aws:iam::111122223333:user/me"}, "--role"),
        (
            {"name": "kokoro_tts"},
            "--name 'kokoro_tts' is not an endpoint name (letters, digits and hyphens, at most "
            "63, starting with a letter or digit)",
        ),
        ({"model_data": "/tmp/model.tar.gz"}, "--model-data '/tmp/model.tar.gz'"),
        (
            {"min_instances": 0, "max_instances": 0},
            "--min 0: an endpoint runs at least 1 instance (the initial count and the "
            "autoscaling floor)",
        ),
        (
            {"min_instances": 5, "max_instances": 2},
            "--max 2 is below --min 5: autoscaling needs min <= max",
        ),
        ({"target_streams": 0.0}, "--target-streams 0 must be above 0"),
        ({"instance_type": "ml.banana.xlarge"}, "not a SageMaker endpoint instance type"),
        (
            {"environment": container_environment("torch"), "instance_type": "ml.c7i.xlarge"},
            "--device cuda on ml.c7i.xlarge: not an NVIDIA GPU instance (ml.g*, ml.p*)",
        ),
        ({"environment": container_environment("onnx", "cuda")}, "--device cuda with --engine"),
    ],
)
def test_each_flag_aws_would_refuse_is_named(spec: dict[str, Any], says: str) -> None:
    valid = replace(
        SPEC,
        image="111122223333.dkr.ecr.us-east-1.amazonaws.com/kokoro-tts:1",
        role_arn="arn:aws:iam::111122223333:role/kokoro-tts-endpoint",
    )
    assert valid.problems() == []
    assert replace(valid, target_streams=0.5).problems() == []  # a fraction of a stream is fine
    problems = replace(valid, **spec).problems()
    assert len(problems) == 1 and says in problems[0]


def test_the_state_reads_name_what_each_one_is_for() -> None:
    """What a ``status`` or ``teardown`` dry run prints in place of its reads, in full."""
    reads = [call.to_json() for call in state_reads("kokoro-tts", "kokoro_voice_agent")]
    assert reads == [
        {
            "service": "sagemaker",
            "operation": "describe_endpoint",
            "params": {"EndpointName": "kokoro-tts"},
            "note": "absent: no TTS calls",
        },
        {
            "service": "sagemaker",
            "operation": "describe_endpoint_config",
            "params": {"EndpointConfigName": "<EndpointConfigName of kokoro-tts>"},
            "note": "the models it serves",
        },
        {
            "service": "application-autoscaling",
            "operation": "describe_scalable_targets",
            "params": {
                "ServiceNamespace": "sagemaker",
                "ResourceIds": ["endpoint/kokoro-tts/variant/AllTraffic"],
            },
            "note": "registered?",
        },
        {
            "service": "bedrock-agentcore-control",
            "operation": "list_agent_runtimes",
            "params": {},
            "note": "the id of kokoro_voice_agent",
        },
    ]


def test_a_call_without_a_note_prints_none() -> None:
    assert Call("sagemaker", "describe_endpoint", {"EndpointName": "e"}).to_json() == {
        "service": "sagemaker",
        "operation": "describe_endpoint",
        "params": {"EndpointName": "e"},
    }


def test_an_existing_runtime_is_updated_in_place_and_says_so() -> None:
    spec = AgentSpec(name="agent", image="img", role_arn="role", tts_endpoint="tts", region="r")
    (create,) = [call.to_json() for call in agent_calls(spec, None)]
    assert create["operation"] == "create_agent_runtime" and "note" not in create
    assert create["params"]["agentRuntimeName"] == "agent"
    (update,) = [call.to_json() for call in agent_calls(spec, "agent-abc")]
    assert (update["operation"], update["params"]["agentRuntimeId"]) == (
        "update_agent_runtime",
        "agent-abc",
    )
    assert update["note"] == "a new runtime version; the endpoint DEFAULT follows it"
    assert {k: v for k, v in update["params"].items() if k != "agentRuntimeId"} == {
        k: v for k, v in create["params"].items() if k != "agentRuntimeName"
    }
