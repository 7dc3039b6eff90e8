"""Runs plans on boto3 clients: the only place where ``voice-agent deploy`` talks to AWS.

It reads the current state (does the endpoint exist, which runtime has this name), runs the
calls in order, and waits for the endpoint with progress lines. Every client comes from one
factory, so the tests hand it botocore-stubbed clients.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from deploy import build as image
from deploy.plan import VARIANT, Call

ClientFactory = Callable[[str], Any]
POLL_S = 30.0
WAIT_LIMIT_S = 45 * 60.0  # a GPU endpoint typically takes 5 to 15 minutes
TERMINAL_FAILURES = ("Failed", "RollingBack", "OutOfService")
BUILD_WAIT_S = (image.BUILD_TIMEOUT_MIN + 15) * 60.0  # CodeBuild's own limit, and its queue


class DeployFailed(RuntimeError):
    """AWS refused a call, the image build failed, or the endpoint did not reach InService."""


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

    def read(
        self, call: Call, absent: Iterable[str] = (), refusals: Mapping[str, str] | None = None
    ) -> dict[str, Any] | None:
        """One read; None when AWS answers with an error code in ``absent``. A refusal is
        ``DeployFailed``, in the words ``refusals`` gives its code, if any."""
        try:
            return dict(getattr(self.client(call.service), call.operation)(**call.params))
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in absent:
                return None
            reason = (refusals or {}).get(code, str(exc))
            raise DeployFailed(f"{call.service}.{call.operation}: {reason}") from exc

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

    def wait_build(self, build_id: str, limit_s: float = BUILD_WAIT_S) -> dict[str, Any]:
        """Poll the build until it succeeds, with its phase on a line per poll;
        ``DeployFailed`` with its failing phase and logs link when it does not."""
        waited = 0.0
        while True:
            found = self.read(image.poll(build_id)) or {}
            if not found.get("builds"):
                raise DeployFailed(f"image build {build_id} not found")
            build = found["builds"][0]
            status, phase = build["buildStatus"], build.get("currentPhase", "?")
            self._say(f"  build {build_id}: {phase} ({status}) after {waited:.0f} s")
            if status == "SUCCEEDED":
                return dict(build)
            if status in image.FAILED_BUILD:
                raise DeployFailed(image.build_failure(build))
            if waited >= limit_s:
                raise DeployFailed(f"image build {build_id} still {phase} after {limit_s:.0f} s")
            self._sleep(self._poll_s)
            waited += self._poll_s

    # --- building ------------------------------------------------------------------------

    def build_image(self, build: image.ImageBuild, archive: bytes) -> image.ImageBuild:
        """Repository, bucket, upload, CodeBuild project, the build; ``build`` with the
        account filled in (its ``image`` is the pushed image)."""
        (who,) = self.run([image.identity()])
        build = replace(build, account=who["Account"])
        if self.read(image.repository_read(build), ("RepositoryNotFoundException",)) is None:
            self.run([image.repository_create(build)])
        other = {"403": f"bucket {build.bucket} is another account's, or not readable by you: "
                 "name one of yours with --build-bucket"}  # fmt: skip
        if self.read(image.bucket_read(build), ("404", "NoSuchBucket"), other) is None:
            self.run([image.bucket_create(build)])
        self.run([image.upload(build, archive)])
        projects = self.read(image.project_read(build)) or {}
        self.run([image.project_write(build, exists=bool(projects.get("projects")))])
        (started,) = self.run([image.start(build)])
        self._say(f"deploy agent: building {build.image}")
        self.wait_build(started["build"]["id"])
        return build
