"""Runs plans on boto3 clients: the only place where ``voice-agent deploy`` talks to AWS.

It reads the current state (does the endpoint exist, which runtime has this name), runs the
calls in order, and waits for the endpoint with progress lines. Every client comes from one
factory, so the tests hand it botocore-stubbed clients.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import ClientError

from deploy.plan import VARIANT, Call

ClientFactory = Callable[[str], Any]
POLL_S = 30.0
WAIT_LIMIT_S = 45 * 60.0  # a GPU endpoint typically takes 5 to 15 minutes
TERMINAL_FAILURES = ("Failed", "RollingBack", "OutOfService")


class DeployFailed(RuntimeError):
    """AWS refused a call, or the endpoint did not reach InService."""


class Executor:
    """Runs ``Call`` lists; ``say`` prints progress."""

    def __init__(
        self,
        clients: ClientFactory,
        say: Callable[[str], None] = print,
        sleep: Callable[[float], None] = time.sleep,
        poll_s: float = POLL_S,
    ) -> None:
        self._clients: dict[str, Any] = {}
        self._factory = clients
        self._say = say
        self._sleep = sleep
        self._poll_s = poll_s

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self._factory(service)
        return self._clients[service]

    def run(self, calls: Iterable[Call]) -> list[dict[str, Any]]:
        """Each call in order; a refusal stops the run with ``DeployFailed``."""
        responses = []
        for call in calls:
            self._say(f"  {call.service}.{call.operation}")
            try:
                responses.append(getattr(self.client(call.service), call.operation)(**call.params))
            except ClientError as exc:
                raise DeployFailed(f"{call.service}.{call.operation}: {exc}") from exc
        return responses

    # --- state ---------------------------------------------------------------------------

    def endpoint(self, name: str) -> dict[str, Any] | None:
        """``DescribeEndpoint``, or None when there is no such endpoint."""
        try:
            return dict(self.client("sagemaker").describe_endpoint(EndpointName=name))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ValidationException":
                return None
            raise DeployFailed(f"sagemaker.describe_endpoint: {exc}") from exc

    def endpoint_models(self, endpoint_config: str) -> list[str]:
        """The models an endpoint config serves."""
        config = self.client("sagemaker").describe_endpoint_config(
            EndpointConfigName=endpoint_config
        )
        return [variant["ModelName"] for variant in config["ProductionVariants"]]

    def scaled(self, name: str) -> bool:
        """Is the endpoint's variant registered with Application Auto Scaling?"""
        found = self.client("application-autoscaling").describe_scalable_targets(
            ServiceNamespace="sagemaker", ResourceIds=[f"endpoint/{name}/variant/{VARIANT}"]
        )
        return bool(found["ScalableTargets"])

    def runtime_id(self, name: str) -> str | None:
        """The id of the AgentCore runtime named ``name``, or None."""
        control = self.client("bedrock-agentcore-control")
        token: str | None = None
        while True:
            page = control.list_agent_runtimes(**({"nextToken": token} if token else {}))
            for runtime in page["agentRuntimes"]:
                if runtime["agentRuntimeName"] == name:
                    return str(runtime["agentRuntimeId"])
            token = page.get("nextToken")
            if not token:
                return None

    # --- waiting -------------------------------------------------------------------------

    def wait_in_service(self, name: str, limit_s: float = WAIT_LIMIT_S) -> dict[str, Any]:
        """Poll until InService; ``DeployFailed`` with SageMaker's reason otherwise."""
        waited = 0.0
        while True:
            endpoint = self.endpoint(name)
            if endpoint is None:
                raise DeployFailed(f"endpoint {name} disappeared while waiting")
            status = endpoint["EndpointStatus"]
            self._say(f"  {name}: {status} after {waited:.0f} s")
            reason = endpoint.get("FailureReason", "no reason given")
            if status == "InService" and "FailureReason" in endpoint:  # a rolled-back update
                raise DeployFailed(f"update of {name} failed, previous config serving: {reason}")
            if status == "InService":
                return endpoint
            if status in TERMINAL_FAILURES:
                raise DeployFailed(f"endpoint {name} is {status}: {reason}")
            if waited >= limit_s:
                raise DeployFailed(f"endpoint {name} still {status} after {limit_s:.0f} s")
            self._sleep(self._poll_s)
            waited += self._poll_s
