"""The agent image, built in AWS CodeBuild (no Docker engine here), as data: each call with its
exact parameters, in ``deploy/plan.py``'s style.

The context (``deploy/package.py``) goes to S3 as ``<agent-name>/<tag>.zip``; a CodeBuild
project ``<agent-name>-image`` on an ARM64 machine builds its ``your-agent`` stage and pushes
``<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>``. The ECR repository, the
bucket and the project are created when absent; the project is updated when present.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from deploy.plan import ROLE_ARN, ROLE_HINT, Call

DEFAULT_REPOSITORY = "kokoro-voice-agent"
BUILD_IMAGE = "aws/codebuild/amazonlinux-aarch64-standard:3.0"  # ARM64, Docker inside
COMPUTE_TYPE = "BUILD_GENERAL1_MEDIUM"
BUILD_TIMEOUT_MIN = 30  # CodeBuild stops the build after this; the executor waits a bit longer
ACCOUNT_PLACEHOLDER = "<account>"  # a dry run's account: it calls nothing, not even STS
FAILED_BUILD = ("FAILED", "FAULT", "STOPPED", "TIMED_OUT")
# The names AWS accepts (ECR's and S3's rules), checked before any call.
REPOSITORY = re.compile(r"(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*")
BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
PROJECT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{1,254}")


@dataclass(frozen=True, slots=True)
class ImageBuild:
    """Where the image of one agent is built and pushed."""

    agent_name: str
    region: str
    build_role: str
    tag: str
    repository: str = DEFAULT_REPOSITORY
    bucket_name: str | None = None  # None: kokoro-voice-agent-builds-<account>-<region>
    account: str = ACCOUNT_PLACEHOLDER

    def problems(self) -> list[str]:
        """What AWS would refuse in these flags, in words (empty: nothing)."""
        problems = []
        if not self.build_role:
            problems.append(
                "--build-role ARN: building the image needs CodeBuild's service role "
                "(`deploy iam` prints its policies)"
            )
        elif not ROLE_ARN.fullmatch(self.build_role):
            problems.append(
                f"--build-role {self.build_role!r} is not an IAM role ARN ({ROLE_HINT}; "
                "`deploy iam` prints its policies)"
            )
        if not (2 <= len(self.repository) <= 256 and REPOSITORY.fullmatch(self.repository)):
            problems.append(
                f"--repository {self.repository!r} is not an ECR repository name (lower-case "
                "letters, digits, . _ - and / between them)"
            )
        if self.bucket_name is not None and not BUCKET.fullmatch(self.bucket_name):
            problems.append(f"--build-bucket {self.bucket_name!r} is not an S3 bucket name")
        if not PROJECT.fullmatch(self.project):
            problems.append(f"--agent-name {self.agent_name!r} cannot name a CodeBuild project")
        return problems

    @property
    def bucket(self) -> str:
        return self.bucket_name or f"kokoro-voice-agent-builds-{self.account}-{self.region}"

    @property
    def key(self) -> str:
        return f"{self.agent_name}/{self.tag}.zip"

    @property
    def project(self) -> str:
        return f"{self.agent_name}-image"

    @property
    def registry(self) -> str:
        return f"{self.account}.dkr.ecr.{self.region}.amazonaws.com"

    @property
    def image(self) -> str:
        return f"{self.registry}/{self.repository}:{self.tag}"


def identity() -> Call:
    return Call("sts", "get_caller_identity", {}, "the account: the registry, the bucket's name")


def repository_read(build: ImageBuild) -> Call:
    return Call(
        "ecr",
        "describe_repositories",
        {"repositoryNames": [build.repository]},
        "RepositoryNotFoundException: create it",
    )


def repository_create(build: ImageBuild) -> Call:
    return Call(
        "ecr",
        "create_repository",
        {"repositoryName": build.repository, "imageScanningConfiguration": {"scanOnPush": True}},
        "only if absent",
    )


def bucket_read(build: ImageBuild) -> Call:
    return Call(
        "s3",
        "head_bucket",
        {"Bucket": build.bucket, "ExpectedBucketOwner": build.account},
        "404: create it; 403: another account's",
    )


def bucket_create(build: ImageBuild) -> Call:
    params: dict[str, Any] = {"Bucket": build.bucket}
    if build.region != "us-east-1":  # the one region S3 refuses a LocationConstraint for
        params["CreateBucketConfiguration"] = {"LocationConstraint": build.region}
    return Call("s3", "create_bucket", params, "only if absent")


def upload(build: ImageBuild, body: bytes | str) -> Call:
    """The context's zip (a dry run passes its description in place of the bytes)."""
    params = {
        "Bucket": build.bucket,
        "Key": build.key,
        "Body": body,
        "ContentType": "application/zip",
        "ExpectedBucketOwner": build.account,
    }
    return Call("s3", "put_object", params)


def project_read(build: ImageBuild) -> Call:
    return Call("codebuild", "batch_get_projects", {"names": [build.project]}, "absent: create it")


def _variables(build: ImageBuild) -> list[dict[str, str]]:
    return [
        {"name": "IMAGE", "value": build.image, "type": "PLAINTEXT"},
        {"name": "REGISTRY", "value": build.registry, "type": "PLAINTEXT"},
    ]


def project_write(build: ImageBuild, exists: bool) -> Call:
    """Create the CodeBuild project, or update the one with that name."""
    params = {
        "name": build.project,
        "description": f"voice-agent deploy agent: the image of {build.agent_name}",
        "source": {
            "type": "S3",
            "location": f"{build.bucket}/{build.key}",
            "buildspec": "buildspec.yml",
        },
        "artifacts": {"type": "NO_ARTIFACTS"},
        "environment": {
            "type": "ARM_CONTAINER",
            "image": BUILD_IMAGE,
            "computeType": COMPUTE_TYPE,
            "privilegedMode": True,  # the Docker daemon inside the build
            "environmentVariables": _variables(build),
        },
        "serviceRole": build.build_role,
        "timeoutInMinutes": BUILD_TIMEOUT_MIN,
    }
    if exists:
        return Call("codebuild", "update_project", params, "only if present")
    return Call("codebuild", "create_project", params, "only if absent")


def start(build: ImageBuild) -> Call:
    """This build's own source and image, whatever the project holds by the time it runs."""
    params = {
        "projectName": build.project,
        "sourceLocationOverride": f"{build.bucket}/{build.key}",
        "environmentVariablesOverride": _variables(build),
    }
    return Call("codebuild", "start_build", params)


def poll(build_id: str) -> Call:
    return Call("codebuild", "batch_get_builds", {"ids": [build_id]}, "every 30 s until SUCCEEDED")


def build_template(build: ImageBuild, body: str) -> list[Call]:
    """Every call of a build, reads and both branches of each create-or-update, in order
    (what a dry run prints)."""
    return [
        identity(),
        repository_read(build),
        repository_create(build),
        bucket_read(build),
        bucket_create(build),
        upload(build, body),
        project_read(build),
        project_write(build, exists=False),
        project_write(build, exists=True),
        start(build),
        poll(f"{build.project}:<build id>"),
    ]


def build_failure(build: dict[str, Any]) -> str:
    """Why a finished build failed, in one line: its id, status, the failing phase's message
    and the deep link to its CloudWatch logs when CodeBuild gives one."""
    status, phase = build["buildStatus"], build.get("currentPhase", "?")
    failed = [p for p in build.get("phases", []) if p.get("phaseStatus") in FAILED_BUILD]
    if failed:
        phase = failed[0]["phaseType"]
        messages = [c["message"] for c in failed[0].get("contexts", []) if c.get("message")]
        phase += f" ({'; '.join(messages)})" if messages else ""
    link = build.get("logs", {}).get("deepLink")
    logs = f"; logs: {link}" if link else "; no logs link (see the CodeBuild console)"
    return f"image build {build['id']} {status} in {phase}{logs}"
