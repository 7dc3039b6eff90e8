"""``deploy agent`` without ``--image``: package, build in CodeBuild, deploy; on
botocore-stubbed clients that check every call against its service's model, in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deploy.build import ImageBuild, project_write, start
from deploy.cli import run
from deploy.package import build_context
from tests.deploy.stubs import IMAGE, NOW, Stubbed, runtimes
from tests.deploy.test_cli import AGENT_PARAMS, RUNTIME, parse, valid_for_botocore

ACCOUNT = "111122223333"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/kokoro-voice-agent"
BUILD_ROLE = f"arn:aws:iam::{ACCOUNT}:role/kokoro-voice-agent-build"
SPEC = "my_agent:create_agent"
BUCKET = f"kokoro-voice-agent-builds-{ACCOUNT}-us-east-1"
BUILD_ID = "kokoro_voice_agent-image:b1"
LINK = "https://console.aws.amazon.com/cloudwatch/home?region=us-east-1#logEvent:group=x"
REPOSITORY = {
    "repositoryArn": f"arn:aws:ecr:us-east-1:{ACCOUNT}:repository/kokoro-voice-agent",
    "registryId": ACCOUNT,
    "repositoryName": "kokoro-voice-agent",
    "repositoryUri": f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/kokoro-voice-agent",
    "createdAt": NOW,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "my_agent.py").write_text("def create_agent():\n    ...\n")
    return tmp_path


def argv(project: Path, *extra: str) -> tuple[str, ...]:
    return ("agent", "--agent", SPEC, "--role", ROLE, "--build-role", BUILD_ROLE,
            "--tts-endpoint", "kokoro-tts", "--project", str(project), *extra)  # fmt: skip


def expect_build(aws: Stubbed, project: Path, present: bool) -> ImageBuild:
    """STS, ECR, S3, CodeBuild up to the build's start: create what is absent."""
    context = build_context(SPEC, project)
    build = ImageBuild("kokoro_voice_agent", "us-east-1", BUILD_ROLE, context.tag,
                       account=ACCOUNT)  # fmt: skip
    aws["sts"].add_response(
        "get_caller_identity",
        {"UserId": "AIDA", "Account": ACCOUNT, "Arn": f"arn:aws:iam::{ACCOUNT}:user/me"},
        {},
    )
    repository = {"repositoryNames": ["kokoro-voice-agent"]}
    bucket = {"Bucket": BUCKET, "ExpectedBucketOwner": ACCOUNT}
    if present:
        aws["ecr"].add_response("describe_repositories", {"repositories": [REPOSITORY]}, repository)
        aws["s3"].add_response("head_bucket", {}, bucket)
    else:
        aws["ecr"].add_client_error(
            "describe_repositories", "RepositoryNotFoundException", expected_params=repository
        )
        aws["ecr"].add_response(
            "create_repository",
            {"repository": REPOSITORY},
            {"repositoryName": "kokoro-voice-agent",
             "imageScanningConfiguration": {"scanOnPush": True}},
        )  # fmt: skip
        aws["s3"].add_client_error("head_bucket", "404", http_status_code=404,
                                   expected_params=bucket)  # fmt: skip
        aws["s3"].add_response("create_bucket", {"Location": f"/{BUCKET}"}, {"Bucket": BUCKET})
    aws["s3"].add_response(
        "put_object",
        {"ETag": '"e"'},
        {"Bucket": BUCKET, "Key": f"kokoro_voice_agent/{context.tag}.zip",
         "Body": context.archive, "ContentType": "application/zip",
         "ExpectedBucketOwner": ACCOUNT},
    )  # fmt: skip
    project_name = {"name": "kokoro_voice_agent-image"}
    aws["codebuild"].add_response(
        "batch_get_projects",
        {"projects": [project_name]} if present else {"projectsNotFound": [project_name["name"]]},
        {"names": ["kokoro_voice_agent-image"]},
    )
    write = project_write(build, exists=present)
    aws["codebuild"].add_response(write.operation, {"project": project_name}, dict(write.params))
    aws["codebuild"].add_response(
        "start_build", {"build": {"id": BUILD_ID, "buildStatus": "IN_PROGRESS"}},
        dict(start(build).params),
    )  # fmt: skip
    return build


def builds(aws: Stubbed, status: str, phase: str, **extra: Any) -> None:
    aws["codebuild"].add_response(
        "batch_get_builds",
        {"builds": [{"id": BUILD_ID, "buildStatus": status, "currentPhase": phase, **extra}]},
        {"ids": [BUILD_ID]},
    )


def expect_runtime(aws: Stubbed, image: str, operation: str) -> None:
    params = json.loads(json.dumps(AGENT_PARAMS))
    params["agentRuntimeArtifact"]["containerConfiguration"]["containerUri"] = image
    params["roleArn"] = ROLE
    params["environmentVariables"]["VOICE_AGENT_FACTORY"] = SPEC
    named = {"agentRuntimeName": "kokoro_voice_agent"}
    if operation == "update_agent_runtime":
        named = {"agentRuntimeId": "kokoro_voice_agent-abc"}
    response = RUNTIME | ({"lastUpdatedAt": NOW} if "agentRuntimeId" in named else {})
    aws["bedrock-agentcore-control"].add_response(operation, response, named | params)


def test_one_command_builds_the_image_and_creates_the_runtime(
    aws: Stubbed, project: Path, capsys: Any
) -> None:
    build = expect_build(aws, project, present=False)
    builds(aws, "IN_PROGRESS", "PROVISIONING")
    builds(aws, "IN_PROGRESS", "BUILD")
    builds(aws, "SUCCEEDED", "COMPLETED")
    runtimes(aws, "someone_else")
    expect_runtime(aws, build.image, "create_agent_runtime")
    assert run(parse(*argv(project)), aws.executor) == 0
    assert f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/kokoro-voice-agent:" in build.image
    assert [line.strip() for line in aws.printed if "after" not in line] == [
        "sts.get_caller_identity", "ecr.create_repository", "s3.create_bucket",
        "s3.put_object", "codebuild.create_project", "codebuild.start_build",
        f"deploy agent: building {build.image}",
        "bedrock-agentcore-control.create_agent_runtime",
    ]  # fmt: skip
    assert f"  build {BUILD_ID}: BUILD (IN_PROGRESS) after 30 s" in aws.printed
    out = capsys.readouterr().out
    assert f"tag {build.tag}" in out and "--agent-arn" in out


def test_what_exists_is_reused_and_the_project_and_runtime_updated(
    aws: Stubbed, project: Path
) -> None:
    build = expect_build(aws, project, present=True)
    builds(aws, "SUCCEEDED", "COMPLETED")
    runtimes(aws, "kokoro_voice_agent")
    expect_runtime(aws, build.image, "update_agent_runtime")
    assert run(parse(*argv(project)), aws.executor) == 0
    done = [line.strip() for line in aws.printed if line.startswith("  ") and "." in line]
    assert "codebuild.update_project" in done
    assert not [c for c in done if "create_" in c]


def test_a_failed_build_deploys_nothing_and_says_where_the_logs_are(
    aws: Stubbed, project: Path, capsys: Any
) -> None:
    expect_build(aws, project, present=True)
    failed = {"statusCode": "COMMAND_EXECUTION_ERROR", "message": "exit status 1"}
    phases = [{"phaseType": "BUILD", "phaseStatus": "FAILED", "contexts": [failed]}]
    builds(aws, "FAILED", "COMPLETED", logs={"deepLink": LINK}, phases=phases)
    assert run(parse(*argv(project)), aws.executor) == 1  # no runtime call is stubbed
    out, err = capsys.readouterr()
    assert f"FAILED: image build {BUILD_ID} FAILED in BUILD (exit status 1); logs: {LINK}" in out
    assert err == ""  # not an unstubbed call


def test_a_bucket_of_another_account_is_refused_with_the_fix(
    aws: Stubbed, project: Path, capsys: Any
) -> None:
    aws["sts"].add_response("get_caller_identity", {"Account": ACCOUNT}, {})
    aws["ecr"].add_response(
        "describe_repositories",
        {"repositories": [REPOSITORY]},
        {"repositoryNames": ["kokoro-voice-agent"]},
    )
    aws["s3"].add_client_error("head_bucket", "403", http_status_code=403)
    assert run(parse(*argv(project)), aws.executor) == 1
    assert (
        "is another account's, or not readable by you: name one of yours with --build-bucket"
        in (capsys.readouterr().out)
    )


def test_the_dry_run_shows_the_context_the_stage_the_buildspec_and_every_call(
    aws: Stubbed, project: Path, capsys: Any
) -> None:
    # nothing is stubbed: any call, even STS, would fail the test
    assert run(parse(*argv(project), "--dry-run"), aws.executor) == 0
    shown = json.loads(capsys.readouterr().out)
    context = build_context(SPEC, project)
    image = f"<account>.dkr.ecr.us-east-1.amazonaws.com/kokoro-voice-agent:{context.tag}"
    assert shown["context"]["tag"] == context.tag and shown["context"]["image"] == image
    assert shown["context"]["files"] == context.listing()
    assert shown["context"]["files"]["my_agent.py"] == len("def create_agent():\n    ...\n")
    assert "FROM agent AS your-agent" in shown["context"]["dockerfile_stage"]
    assert 'docker push "$IMAGE"' in "\n".join(shown["context"]["buildspec"])
    assert [c["operation"] for c in shown["build"]] == [
        "get_caller_identity", "describe_repositories", "create_repository", "head_bucket",
        "create_bucket", "put_object", "batch_get_projects", "create_project",
        "update_project", "start_build", "batch_get_builds",
    ]  # fmt: skip
    body = shown["build"][5]["params"]["Body"]
    assert body.startswith(f"<zip: {len(context.files)} files, {len(context.archive)} bytes")
    assert shown["build"][3]["params"]["Bucket"] == "kokoro-voice-agent-builds-<account>-us-east-1"
    (create,) = shown["if_absent"]
    assert create["params"]["agentRuntimeArtifact"]["containerConfiguration"] == {
        "containerUri": image
    }
    assert [c["operation"] for c in shown["if_present"]] == ["update_agent_runtime"]
    assert valid_for_botocore(aws, shown["build"] + shown["if_absent"] + shown["if_present"])


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--image", IMAGE, "--project", "."), "--project build an image: leave out --image"),
        (("--image", IMAGE, "--requirements", "r.txt", "--build-role", BUILD_ROLE),
         "--requirements, --build-role build an image"),
        (("--image", IMAGE, "--repository", "r", "--build-bucket", "b"),
         "--repository, --build-bucket build an image"),
        ((), "--agent MODULE:FUNCTION: your agent factory, to build an image"),
    ],
)  # fmt: skip
def test_flags_that_do_not_go_together_are_refused(
    aws: Stubbed, flags: tuple[str, ...], says: str, capsys: Any
) -> None:
    base = ("agent", "--role", ROLE, "--tts-endpoint", "kokoro-tts", "--dry-run")
    assert run(parse(*base, *flags), aws.executor) == 3
    out = capsys.readouterr().out
    assert out.startswith("deploy agent: invalid flags, nothing called:") and says in out


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--agent", SPEC), "--build-role ARN: building the image needs CodeBuild's"),
        (("--agent", SPEC, "--build-role", BUILD_ROLE, "--repository", "Voice"),
         "--repository 'Voice' is not an ECR repository name"),
        (("--agent", "missing:create", "--build-role", BUILD_ROLE), "no missing.py or missing/"),
        (("--agent", "agent.core.factory:f", "--build-role", BUILD_ROLE),
         "one of the service's own packages"),
        (("--agent", SPEC, "--build-role", BUILD_ROLE, "--requirements", "nope.txt"),
         "--requirements 'nope.txt' is not a file"),
    ],
)  # fmt: skip
def test_a_build_that_cannot_be_made_is_refused_before_any_call(
    aws: Stubbed, project: Path, flags: tuple[str, ...], says: str, capsys: Any
) -> None:
    base = ("agent", "--role", ROLE, "--tts-endpoint", "kokoro-tts", "--project", str(project))
    assert run(parse(*base, *flags), aws.executor) == 3  # not a dry run: nothing is stubbed
    out = capsys.readouterr().out
    assert "invalid flags, nothing called" in out and says in out
