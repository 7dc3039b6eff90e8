"""The pure plan builders: names, the container's environment, what each call carries."""

from __future__ import annotations

from deploy.plan import (
    SCALING_METRIC,
    TTSSpec,
    container_environment,
    scaling_calls,
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
