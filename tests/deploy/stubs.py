"""botocore-stubbed boto3 clients for the deploy tests, and the canned AWS state they use.

``Stubber`` validates every request's parameters and every canned response against botocore's
service models; the clients carry fake static keys and never send anything."""

from __future__ import annotations

import datetime
from typing import Any

import boto3
from botocore.stub import Stubber

from deploy.executor import Executor

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
ENDPOINT_ARN = "arn:aws:sagemaker:us-east-1:111122223333:endpoint/kokoro-tts"
ROLE = "arn:aws:iam::111122223333:role/kokoro-tts-endpoint"
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/kokoro-tts:1"
RESOURCE = "endpoint/kokoro-tts/variant/AllTraffic"
RUNTIME_ARN = "arn:aws:bedrock-agentcore:us-east-1:111122223333:runtime/kokoro_voice_agent-abc"


class Stubbed:
    """Stubbed boto3 clients, one per service, made (and activated) when first asked for, all
    from a session with fake static keys; a service never asked for costs nothing."""

    def __init__(self) -> None:
        self.session = boto3.Session(
            aws_access_key_id="AKIDTEST", aws_secret_access_key="secret", region_name="us-east-1"
        )
        self.clients: dict[str, Any] = {}
        self.stubs: dict[str, Stubber] = {}
        self.printed: list[str] = []
        self.executor = Executor(self.client, say=self.printed.append, sleep=lambda s: None)

    def client(self, service: str) -> Any:
        if service not in self.clients:
            self.clients[service] = self.session.client(service)
            self.stubs[service] = Stubber(self.clients[service])
            self.stubs[service].activate()
        return self.clients[service]

    def __getitem__(self, service: str) -> Stubber:
        self.client(service)
        return self.stubs[service]

    def verify(self) -> None:
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()


def no_endpoint(aws: Stubbed) -> None:
    aws["sagemaker"].add_client_error(
        "describe_endpoint",
        service_error_code="ValidationException",
        service_message="Could not find endpoint kokoro-tts.",
        expected_params={"EndpointName": "kokoro-tts"},
    )


def endpoint(status: str, config: str = "kokoro-tts-old", **extra: Any) -> dict[str, Any]:
    return {
        "EndpointName": "kokoro-tts",
        "EndpointArn": ENDPOINT_ARN,
        "EndpointConfigName": config,
        "EndpointStatus": status,
        "CreationTime": NOW,
        "LastModifiedTime": NOW,
        **extra,
    }


def describe(aws: Stubbed, status: str, **extra: Any) -> None:
    aws["sagemaker"].add_response(
        "describe_endpoint", endpoint(status, **extra), {"EndpointName": "kokoro-tts"}
    )


def runtimes(aws: Stubbed, *names: str, token: str | None = None) -> None:
    aws["bedrock-agentcore-control"].add_response(
        "list_agent_runtimes",
        {
            "agentRuntimes": [
                {
                    "agentRuntimeArn": RUNTIME_ARN,
                    "agentRuntimeId": f"{name}-abc",
                    "agentRuntimeVersion": "1",
                    "agentRuntimeName": name,
                    "description": "the voice agent",
                    "lastUpdatedAt": NOW,
                    "status": "READY",
                }
                for name in names
            ]
        },
        {"nextToken": token} if token else {},
    )
