"""Least-privilege IAM policy documents for the two roles ``voice-agent deploy`` uses."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

Policy = dict[str, Any]


def _policy(*statements: Policy) -> Policy:
    return {"Version": "2012-10-17", "Statement": list(statements)}


PROFILE_PREFIXES = ("us", "eu", "apac", "global")  # cross-region inference profiles


def agent_policy(
    region: str, account: str, tts_endpoint: str, model_id: str, model_region: str | None = None
) -> Policy:
    """The agent runtime's role: stream from one endpoint, call one model, write its logs.

    A cross-region inference profile (``us.…``) also needs the foundation model it routes to,
    in any of the profile's regions.
    """
    endpoint_arn = f"arn:aws:sagemaker:{region}:{account}:endpoint/{tts_endpoint.lower()}"
    model_arns = [f"arn:aws:bedrock:{model_region or region}::foundation-model/{model_id}"]
    prefix, _, base = model_id.partition(".")
    if prefix in PROFILE_PREFIXES:
        if not base:
            raise ValueError(
                f"model {model_id!r} names an inference profile's region but no model "
                "(e.g. us.anthropic.claude-haiku-4-5-20251001-v1:0)"
            )
        model_arns = [
            f"arn:aws:bedrock:{region}:{account}:inference-profile/{model_id}",
            f"arn:aws:bedrock:*::foundation-model/{base}",
        ]
    return _policy(
        {
            "Sid": "SpeakThroughTheTTSEndpoint",
            "Effect": "Allow",
            "Action": "sagemaker:InvokeEndpointWithBidirectionalStream",
            "Resource": endpoint_arn,
        },
        {
            "Sid": "StreamFromTheModel",
            "Effect": "Allow",
            "Action": "bedrock:InvokeModelWithResponseStream",
            "Resource": model_arns,
        },
        _logs(region, account, "/aws/bedrock-agentcore/runtimes/*"),
    )


def endpoint_policy(
    region: str, account: str, model_data: str | None, ecr_repository: str
) -> Policy:
    """The SageMaker execution role: pull its image, read its model data, write its logs."""
    statements: list[Policy] = [
        {
            "Sid": "PullTheImage",
            "Effect": "Allow",
            "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": f"arn:aws:ecr:{region}:{account}:repository/{ecr_repository}",
        },
        {
            "Sid": "EcrLogin",
            "Effect": "Allow",
            "Action": "ecr:GetAuthorizationToken",
            "Resource": "*",
        },  # the action supports no resource-level scoping
    ]
    if model_data:
        parts = urlsplit(model_data)
        statements.append(
            {
                "Sid": "ReadTheModelData",
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": f"arn:aws:s3:::{parts.netloc}{parts.path}",
            }
        )
    statements.append(_logs(region, account, "/aws/sagemaker/Endpoints/*"))
    return _policy(*statements)


def _logs(region: str, account: str, group: str) -> Policy:
    return {
        "Sid": "WriteLogs",
        "Effect": "Allow",
        "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
        "Resource": f"arn:aws:logs:{region}:{account}:log-group:{group}",
    }


def trust_policy(service: str) -> Policy:
    """Who may assume the role: ``sagemaker.amazonaws.com`` or
    ``bedrock-agentcore.amazonaws.com``."""
    return _policy(
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    )
