"""Least-privilege IAM policy documents for the roles ``voice-agent deploy`` uses: the agent
runtime's, the SageMaker endpoint's and CodeBuild's (``deploy agent`` without ``--image``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from deploy.build import ImageBuild

Policy = dict[str, Any]


def _policy(*statements: Policy) -> Policy:
    return {"Version": "2012-10-17", "Statement": list(statements)}


PROFILE_PREFIXES = ("us", "eu", "apac", "global")  # cross-region inference profiles


def agent_policy(
    region: str,
    account: str,
    tts_endpoint: str,
    model_id: str,
    model_region: str | None = None,
    ecr_repository: str = "kokoro-voice-agent",
) -> Policy:
    """The agent runtime's role: pull its image, stream from one endpoint, call one model,
    write its logs.

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
        *_pull(region, account, ecr_repository),
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
    statements = _pull(region, account, ecr_repository)
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


def build_policy(build: ImageBuild) -> Policy:
    """CodeBuild's service role (``deploy agent --build-role``): read this agent's build
    contexts (``BUCKET/AGENT-NAME/*``), push to one repository, write the project's logs."""
    region, account = build.region, build.account
    return _policy(
        {
            "Sid": "ReadTheBuildContext",
            "Effect": "Allow",
            "Action": ["s3:GetObject", "s3:GetObjectVersion"],
            "Resource": f"arn:aws:s3:::{build.bucket}/{build.agent_name}/*",
        },
        {
            "Sid": "PushTheImage",
            "Effect": "Allow",
            "Action": [
                "ecr:BatchCheckLayerAvailability",
                "ecr:BatchGetImage",
                "ecr:CompleteLayerUpload",
                "ecr:GetDownloadUrlForLayer",
                "ecr:InitiateLayerUpload",
                "ecr:PutImage",
                "ecr:UploadLayerPart",
            ],
            "Resource": _repository(region, account, build.repository),
        },
        _ecr_login(),
        _logs(region, account, f"/aws/codebuild/{build.project}", streams=True),
    )


def _repository(region: str, account: str, name: str) -> str:
    return f"arn:aws:ecr:{region}:{account}:repository/{name}"


def _ecr_login() -> Policy:
    return {
        "Sid": "EcrLogin",
        "Effect": "Allow",
        "Action": "ecr:GetAuthorizationToken",
        "Resource": "*",
    }  # the action supports no resource-level scoping


def _pull(region: str, account: str, ecr_repository: str) -> list[Policy]:
    """Pull one repository's images."""
    pull = {
        "Sid": "PullTheImage",
        "Effect": "Allow",
        "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
        "Resource": _repository(region, account, ecr_repository),
    }
    return [pull, _ecr_login()]


def _logs(region: str, account: str, group: str, streams: bool = False) -> Policy:
    """Write to one log group (``streams``: and its streams, named by their own ARN)."""
    arn = f"arn:aws:logs:{region}:{account}:log-group:{group}"
    return {
        "Sid": "WriteLogs",
        "Effect": "Allow",
        "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
        "Resource": [arn, f"{arn}:*"] if streams else arn,
    }


def trust_policy(service: str) -> Policy:
    """Who may assume the role: ``sagemaker.amazonaws.com``,
    ``bedrock-agentcore.amazonaws.com`` or ``codebuild.amazonaws.com``."""
    return _policy(
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    )
