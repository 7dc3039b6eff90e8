"""The IAM policy documents, statement by statement: each names exactly one resource set.

The expected ARNs are written out in full, so a widened resource (``foundation-model/*``, a
log group of any service) or a dropped statement fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from deploy.build import ImageBuild
from deploy.iam import agent_policy, build_policy, endpoint_policy, trust_policy

MODEL = "anthropic.claude-haiku-4-5-20251001-v1:0"


def by_sid(policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    assert policy["Version"] == "2012-10-17"
    statements = policy["Statement"]
    assert all(s["Effect"] == "Allow" for s in statements)
    sids = [s.get("Sid") for s in statements]
    assert len(set(sids)) == len(sids)
    return {
        s["Sid"]: {k: v for k, v in s.items() if k not in ("Sid", "Effect")} for s in statements
    }


def test_the_agent_role_may_pull_its_image_use_one_endpoint_and_one_model_and_log() -> None:
    policy = agent_policy("us-east-1", "111122223333", "Kokoro-TTS", MODEL)
    assert by_sid(policy) == {
        "PullTheImage": {
            "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": "arn:aws:ecr:us-east-1:111122223333:repository/kokoro-voice-agent",
        },
        "EcrLogin": {"Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        "SpeakThroughTheTTSEndpoint": {
            "Action": "sagemaker:InvokeEndpointWithBidirectionalStream",
            "Resource": "arn:aws:sagemaker:us-east-1:111122223333:endpoint/kokoro-tts",
        },
        "StreamFromTheModel": {
            "Action": "bedrock:InvokeModelWithResponseStream",
            "Resource": [f"arn:aws:bedrock:us-east-1::foundation-model/{MODEL}"],
        },
        "WriteLogs": {
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": (
                "arn:aws:logs:us-east-1:111122223333:log-group:/aws/bedrock-agentcore/runtimes/*"
            ),
        },
    }


def test_a_model_in_another_region_is_named_in_that_region() -> None:
    policy = agent_policy("us-east-1", "111122223333", "kokoro-tts", MODEL, "us-west-2")
    resource = by_sid(policy)["StreamFromTheModel"]["Resource"]
    assert resource == [f"arn:aws:bedrock:us-west-2::foundation-model/{MODEL}"]


def test_an_inference_profile_names_the_profile_and_its_one_foundation_model() -> None:
    for prefix in ("us", "eu", "apac", "global"):
        policy = agent_policy("eu-west-1", "111122223333", "kokoro-tts", f"{prefix}.{MODEL}")
        assert by_sid(policy)["StreamFromTheModel"]["Resource"] == [
            f"arn:aws:bedrock:eu-west-1:111122223333:inference-profile/{prefix}.{MODEL}",
            f"arn:aws:bedrock:*::foundation-model/{MODEL}",  # any of the profile's regions
        ]


def test_a_model_id_that_only_looks_like_a_profile_is_a_foundation_model() -> None:
    for model_id in ("usx.model-v1", "amazon.nova-pro-v1:0"):
        policy = agent_policy("us-east-1", "111122223333", "kokoro-tts", model_id)
        assert by_sid(policy)["StreamFromTheModel"]["Resource"] == [
            f"arn:aws:bedrock:us-east-1::foundation-model/{model_id}"
        ]


def test_the_endpoint_role_may_pull_its_image_read_its_model_data_and_write_its_logs() -> None:
    policy = endpoint_policy(
        "us-east-1", "111122223333", "s3://weights-bucket/kokoro/model.tar.gz", "kokoro-tts"
    )
    assert by_sid(policy) == {
        "PullTheImage": {
            "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": "arn:aws:ecr:us-east-1:111122223333:repository/kokoro-tts",
        },
        "EcrLogin": {"Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        "ReadTheModelData": {
            "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::weights-bucket/kokoro/model.tar.gz",
        },
        "WriteLogs": {
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": "arn:aws:logs:us-east-1:111122223333:log-group:/aws/sagemaker/Endpoints/*",
        },
    }
    assert [s["Sid"] for s in policy["Statement"]][-1] == "WriteLogs"


def test_without_model_data_the_endpoint_role_reads_no_bucket() -> None:
    for model_data in (None, ""):
        policy = endpoint_policy("eu-west-1", "111122223333", model_data, "tts")
        assert list(by_sid(policy)) == ["PullTheImage", "EcrLogin", "WriteLogs"]
        assert by_sid(policy)["PullTheImage"]["Resource"] == (
            "arn:aws:ecr:eu-west-1:111122223333:repository/tts"
        )


def test_the_trust_policy_names_one_service_principal() -> None:
    assert trust_policy("sagemaker.amazonaws.com") == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "sagemaker.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }


def test_the_build_role_may_read_its_contexts_push_to_one_repository_and_log() -> None:
    build = ImageBuild("shop", "eu-west-1", "", "", "team/shop", None, "111122223333")
    logs = "arn:aws:logs:eu-west-1:111122223333:log-group:/aws/codebuild/shop-image"
    assert by_sid(build_policy(build)) == {
        "ReadTheBuildContext": {
            "Action": ["s3:GetObject", "s3:GetObjectVersion"],
            "Resource": "arn:aws:s3:::kokoro-voice-agent-builds-111122223333-eu-west-1/shop/*",
        },
        "PushTheImage": {
            "Action": [
                "ecr:BatchCheckLayerAvailability",
                "ecr:BatchGetImage",
                "ecr:CompleteLayerUpload",
                "ecr:GetDownloadUrlForLayer",
                "ecr:InitiateLayerUpload",
                "ecr:PutImage",
                "ecr:UploadLayerPart",
            ],
            "Resource": "arn:aws:ecr:eu-west-1:111122223333:repository/team/shop",
        },
        "EcrLogin": {"Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        "WriteLogs": {
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": [logs, f"{logs}:*"],
        },
    }
    assert trust_policy("codebuild.amazonaws.com")["Statement"][0]["Principal"] == {
        "Service": "codebuild.amazonaws.com"
    }


def test_a_profile_prefix_without_a_model_is_refused_with_an_example() -> None:
    with pytest.raises(ValueError) as refused:
        agent_policy("us-east-1", "111122223333", "kokoro-tts", "us.")
    assert str(refused.value) == (
        "model 'us.' names an inference profile's region but no model "
        "(e.g. us.anthropic.claude-haiku-4-5-20251001-v1:0)"
    )
