"""``voice-agent deploy``: the TTS endpoint (with autoscaling) and the agent runtime on AWS.

    voice-agent deploy tts --image URI --role ARN [--model-data S3URI] [--instance-type T]
                           [--min 1 --max 4] [--name kokoro-tts] [--region R] [--dry-run]
    voice-agent deploy agent --image URI --role ARN --tts-endpoint NAME [--model bedrock:ID]
                             [--agent package.module:function]
    voice-agent deploy agent --agent package.module:function --role ARN --build-role ARN
                             --tts-endpoint NAME [--project .] [--requirements FILE]
                             [--repository kokoro-voice-agent] [--build-bucket NAME]
    voice-agent deploy iam --account ID [--tts-endpoint NAME] [--model-data S3URI]
    voice-agent deploy status [--name kokoro-tts] [--agent-name kokoro_voice_agent]
    voice-agent deploy teardown [--name ...] [--agent-name ...] --yes-delete

``tts`` creates the model and endpoint config (new versions each time), then creates the
endpoint or moves the existing one to the new config with UpdateEndpoint, registers
autoscaling, waits for InService and runs the acceptance test through the SageMaker SDK
(Python >= 3.12). ``agent`` without ``--image`` builds the image with your agent module in AWS
CodeBuild (``deploy/package.py``, ``deploy/build.py``), then creates or updates the runtime.
``--dry-run`` prints the calls as JSON and calls nothing, not even a read: ``status`` and
``teardown`` show the reads they would make, and teardown's deletes with what those reads
would fill in as placeholders; ``agent`` without ``--image`` also shows what the image holds.
``tts`` and ``agent`` check their flags first (an ECR image URI, an IAM role ARN,
``1 <= --min <= --max``, ...), a dry run included. Exit status: 0 done, 1 AWS refused or could
not be asked (no credentials: one line on stderr; a teardown without ``--yes-delete`` then
prints what its dry run prints), the image build failed or the acceptance test failed, 2 the
acceptance test cannot run here, 3 invalid flags (nothing called).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, NoCredentialsError

from deploy import iam
from deploy.build import DEFAULT_REPOSITORY, ImageBuild, build_template
from deploy.executor import DeployFailed, Executor
from deploy.package import PackageError, build_context
from deploy.plan import (
    DEFAULT_MODEL,
    AgentSpec,
    Call,
    TTSSpec,
    agent_calls,
    agent_teardown_calls,
    container_environment,
    scaling_calls,
    state_reads,
    teardown_template,
    tts_calls,
    tts_teardown_calls,
)

DEFAULT_REGION = "us-east-1"
DEFAULT_AGENT_NAME = "kokoro_voice_agent"  # agentcore.yaml's agent name
INVALID_FLAGS = 3  # the exit status when the flags are refused before any call
BUILD_FLAGS = ("project", "requirements", "build_role", "repository", "build_bucket")
NO_CREDENTIALS = (
    "no AWS credentials: set up the standard chain (aws configure, AWS_PROFILE, "
    "AWS_ACCESS_KEY_ID ...)"
)


def _refused(verb: str, problems: list[str]) -> int:
    """Print each problem of ``deploy verb``'s flags; the exit status."""
    print(f"deploy {verb}: invalid flags, nothing called:")
    for problem in problems:
        print(f"  {problem}")
    return INVALID_FLAGS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``deploy`` verbs and their flags."""
    verbs = parser.add_subparsers(dest="verb", required=True)
    tts = verbs.add_parser("tts", help="create or update the SageMaker endpoint")
    tts.add_argument("--image", required=True, help="the tts-server image in ECR")
    tts.add_argument("--role", required=True, help="the SageMaker execution role ARN")
    tts.add_argument("--model-data", help="s3://... model.tar.gz (default: weights in the image)")
    tts.add_argument("--instance-type", default="ml.g6.xlarge")
    tts.add_argument("--min", type=int, default=1, dest="min_instances")
    tts.add_argument("--max", type=int, default=4, dest="max_instances")
    tts.add_argument("--target-streams", type=float, default=8.0, help="open streams/instance")
    tts.add_argument("--engine", choices=("torch", "onnx"), default="torch")
    tts.add_argument(
        "--device", choices=("cuda", "cpu"), help="default: cuda for torch, cpu for onnx"
    )
    tts.add_argument("--max-sessions", type=int, help="TTS_MAX_SESSIONS per instance")
    tts.add_argument("--skip-acceptance", action="store_true")
    agent = verbs.add_parser("agent", help="create or update the AgentCore runtime")
    _add_agent_arguments(agent)
    policies = verbs.add_parser("iam", help="print least-privilege policies for the roles")
    policies.add_argument("--account", required=True, help="12-digit AWS account id")
    policies.add_argument("--tts-endpoint", default="kokoro-tts")
    policies.add_argument("--model", default=DEFAULT_MODEL)
    policies.add_argument("--model-data", help="the endpoint's s3:// model data, if any")
    policies.add_argument("--ecr-repository", default="kokoro-tts")
    policies.add_argument("--repository", default=DEFAULT_REPOSITORY, help="the agent's images")
    policies.add_argument("--build-bucket", help="deploy agent's --build-bucket, if any")
    verbs.add_parser("status", help="show the endpoint and the runtime")
    teardown = verbs.add_parser("teardown", help="delete what deploy created, by name")
    teardown.add_argument("--yes-delete", action="store_true", help="confirm the deletion")
    for sub in (tts, agent, policies, verbs.choices["status"], teardown):
        sub.add_argument("--region", default=DEFAULT_REGION)
        sub.add_argument("--dry-run", action="store_true", help="print the calls, call nothing")
    for sub in (tts, verbs.choices["status"], teardown):
        sub.add_argument("--name", default="kokoro-tts", help="the endpoint name")
    for sub in (agent, policies, verbs.choices["status"], teardown):
        sub.add_argument("--agent-name", default=DEFAULT_AGENT_NAME)


def _add_agent_arguments(agent: argparse.ArgumentParser) -> None:
    """``deploy agent``'s flags: the runtime's image, role, speech, model, agent and protocol,
    and how its image is built without ``--image``."""
    agent.add_argument(
        "--image", help="an agent image (linux/arm64) in ECR; without it, build one with --agent"
    )
    agent.add_argument("--role", required=True, help="the runtime's execution role ARN")
    agent.add_argument("--tts-endpoint", required=True)
    agent.add_argument("--model", default=DEFAULT_MODEL, help="bedrock:<model or profile id>")
    agent.add_argument(
        "--agent",
        metavar="MODULE:FUNCTION",
        help="your agent factory (docs/your_agent.md): the runtime's VOICE_AGENT_FACTORY; "
        "without --image, its module is built into the image",
    )
    agent.add_argument(
        "--protocol",
        choices=("http", "agui"),
        default="http",
        help="the runtime's protocol: http (ours) or agui (AG-UI: server protocol AGUI and "
        "VOICE_AGENT_PROTOCOL=agui; docs/agui.md)",
    )
    built = agent.add_argument_group("building the image (without --image), in AWS CodeBuild")
    built.add_argument("--project", help="the folder that holds your module (default: .)")
    built.add_argument("--requirements", help="a pip requirements file your agent needs")
    built.add_argument("--build-role", help="CodeBuild's service role ARN (deploy iam)")
    built.add_argument("--repository", help=f"the ECR repository (default: {DEFAULT_REPOSITORY})")
    built.add_argument(
        "--build-bucket",
        help="S3 bucket for the context (default: kokoro-voice-agent-builds-ACCOUNT-REGION)",
    )


def boto3_clients(region: str) -> Any:
    """A client factory over one boto3 session (the standard credential chain)."""
    import boto3

    session = boto3.Session(region_name=region)
    return lambda service: session.client(service)


def run(args: argparse.Namespace, executor: Executor | None = None) -> int:
    """Run one verb; see the module docstring for the exit status."""
    if args.verb == "iam":
        try:
            print(json.dumps(policies(args), indent=2))
        except ValueError as exc:
            return _refused(args.verb, [str(exc)])
        return 0
    executor = executor or Executor(boto3_clients(args.region))
    try:
        return VERBS[args.verb](args, executor)
    except DeployFailed as exc:
        print(f"deploy {args.verb}: FAILED: {exc}")
        return 1
    except NoCredentialsError:
        print(f"deploy {args.verb}: {NO_CREDENTIALS}", file=sys.stderr)
        return 1
    except BotoCoreError as exc:  # no region, no endpoint reachable, ...: botocore's one line
        print(f"deploy {args.verb}: {exc}", file=sys.stderr)
        return 1


def policies(args: argparse.Namespace) -> dict[str, Any]:
    """Each role's permission and trust policies."""
    model_id = args.model.removeprefix("bedrock:")
    build = ImageBuild(  # its names: the project, the bucket, the key prefix, the repository
        args.agent_name, args.region, "", "", args.repository, args.build_bucket, args.account
    )
    return {
        "agent_role": {
            "trust": iam.trust_policy("bedrock-agentcore.amazonaws.com"),
            "permissions": iam.agent_policy(
                args.region,
                args.account,
                args.tts_endpoint,
                model_id,
                ecr_repository=args.repository,
            ),
        },
        "build_role": {
            "trust": iam.trust_policy("codebuild.amazonaws.com"),
            "permissions": iam.build_policy(build),
        },
        "endpoint_role": {
            "trust": iam.trust_policy("sagemaker.amazonaws.com"),
            "permissions": iam.endpoint_policy(
                args.region, args.account, args.model_data, args.ecr_repository
            ),
        },
    }


def _print_plan(calls: list[Call]) -> None:
    print(json.dumps([call.to_json() for call in calls], indent=2))


def _print_sections(**sections: list[Call]) -> None:
    """A dry run's plan in named parts: the branches of create-or-update, or reads then deletes."""
    print(json.dumps({k: [c.to_json() for c in v] for k, v in sections.items()}, indent=2))


def deploy_tts(args: argparse.Namespace, executor: Executor) -> int:
    spec = TTSSpec(
        name=args.name,
        image=args.image,
        model_data=args.model_data,
        role_arn=args.role,
        instance_type=args.instance_type,
        min_instances=args.min_instances,
        max_instances=args.max_instances,
        target_streams=args.target_streams,
        environment=container_environment(args.engine, args.device, args.max_sessions),
    )
    if problems := spec.problems():
        return _refused("tts", problems)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    if args.dry_run:  # no call at all, not even a read: both branches of create-or-update
        _print_sections(
            if_absent=tts_calls(spec, stamp, False) + scaling_calls(spec),
            if_present=tts_calls(spec, stamp, True) + scaling_calls(spec),
        )
        return 0
    exists = executor.endpoint(spec.name) is not None
    calls = tts_calls(spec, stamp, exists)
    print(f"deploy tts: {'updating' if exists else 'creating'} endpoint {spec.name}")
    executor.run(calls)
    endpoint = executor.wait_in_service(spec.name)
    executor.run(scaling_calls(spec))
    print(f"deploy tts: {endpoint['EndpointArn']} InService")
    return 0 if args.skip_acceptance else acceptance(spec.name, args.region)


def acceptance(endpoint_name: str, region: str) -> int:
    """The endpoint acceptance test through the real SageMaker SDK transport."""
    from tts_client.acceptance import MAX_RTF, Acceptance, SageMakerTarget, report
    from tts_client.errors import TransportUnavailable

    try:
        target = SageMakerTarget(endpoint_name, region)
    except TransportUnavailable as exc:
        print(f"deploy tts: acceptance test not run: {exc}")
        return 2
    checks = asyncio.run(Acceptance(target, max_rtf=MAX_RTF).run())  # real time, at least
    text, status = report(checks, "acceptance")
    print(text)
    return status


def deploy_agent(args: argparse.Namespace, executor: Executor) -> int:
    if args.image is None:
        return build_agent(args, executor)
    if given := [f"--{flag.replace('_', '-')}" for flag in BUILD_FLAGS if getattr(args, flag)]:
        return _refused(
            "agent",
            [f"{', '.join(given)} build an image: leave out --image, or these flags"],
        )
    spec = _agent_spec(args, args.image)
    if problems := spec.problems():
        return _refused("agent", problems)
    if args.dry_run:  # no call at all: the update names the runtime id it would look up
        _print_sections(**_runtime_branches(spec))
        return 0
    return _deploy_runtime(spec, executor)


def build_agent(args: argparse.Namespace, executor: Executor) -> int:
    """Package your module with the service, build the image in CodeBuild, deploy it."""
    if args.agent is None:
        return _refused(
            "agent",
            ["--agent MODULE:FUNCTION: your agent factory, to build an image with its module "
             "(or --image URI: an image already built)"],
        )  # fmt: skip
    build = ImageBuild(
        agent_name=args.agent_name,
        region=args.region,
        build_role=args.build_role or "",
        tag="<tag>",
        repository=args.repository or DEFAULT_REPOSITORY,
        bucket_name=args.build_bucket,
    )
    spec = _agent_spec(args, build.image)
    if problems := spec.problems(built=True) + build.problems():
        return _refused("agent", problems)
    requirements = Path(args.requirements) if args.requirements else None
    try:
        context = build_context(args.agent, Path(args.project or "."), requirements)
    except PackageError as exc:
        return _refused("agent", [str(exc)])
    build = replace(build, tag=context.tag)
    if args.dry_run:  # no call at all, not even STS: the account is a placeholder
        spec = replace(spec, image=build.image)
        included = {"image": build.image, **context.summary()}
        calls = [call.to_json() for call in build_template(build, context.describe())]
        branches = {k: [c.to_json() for c in v] for k, v in _runtime_branches(spec).items()}
        print(json.dumps({"context": included, "build": calls, **branches}, indent=2))
        return 0
    print(f"deploy agent: {len(context.files)} files, tag {context.tag}")
    build = executor.build_image(build, context.archive)
    return _deploy_runtime(replace(spec, image=build.image), executor)


def _agent_spec(args: argparse.Namespace, image: str) -> AgentSpec:
    return AgentSpec(
        name=args.agent_name,
        image=image,
        role_arn=args.role,
        tts_endpoint=args.tts_endpoint,
        region=args.region,
        model=args.model,
        agent_factory=args.agent,
        protocol=args.protocol,
    )


def _runtime_branches(spec: AgentSpec) -> dict[str, list[Call]]:
    """Both branches of the runtime's create-or-update (the update names the id it reads)."""
    return {
        "if_absent": agent_calls(spec, None),
        "if_present": agent_calls(spec, f"<id of {spec.name}>"),
    }


def _deploy_runtime(spec: AgentSpec, executor: Executor) -> int:
    """Create or update the runtime; print its ARN and how to invoke it."""
    calls = agent_calls(spec, executor.runtime_id(spec.name))
    (response,) = executor.run(calls)
    arn = response["agentRuntimeArn"]
    print(
        f"deploy agent: {arn} version {response['agentRuntimeVersion']} ({response['status']})\n"
        "invoke it:\n"
        f"  voice-agent bench --agent-arn {arn}\n"
        f"  aws bedrock-agentcore invoke-agent-runtime --agent-runtime-arn {arn} "
        '--payload \'{"prompt": "Hello"}\' --cli-binary-format raw-in-base64-out out.sse'
    )
    return 0


def status(args: argparse.Namespace, executor: Executor) -> int:
    if args.dry_run:
        _print_plan(state_reads(args.name, args.agent_name))
        return 0
    endpoint = executor.endpoint(args.name)
    runtime = executor.runtime_id(args.agent_name)
    line = "absent" if endpoint is None else endpoint["EndpointStatus"]
    print(f"endpoint {args.name}: {line}")
    print(f"runtime {args.agent_name}: {runtime or 'absent'}")
    return 0


def _print_teardown_template(args: argparse.Namespace) -> None:
    """No call at all: the reads, then every delete they could lead to."""
    _print_sections(
        reads=state_reads(args.name, args.agent_name),
        deletes=teardown_template(args.name, args.agent_name),
    )


def teardown(args: argparse.Namespace, executor: Executor) -> int:
    if args.dry_run:
        _print_teardown_template(args)
        return 0
    try:
        endpoint = executor.endpoint(args.name)
    except NoCredentialsError:
        if args.yes_delete:
            raise
        _print_teardown_template(args)  # nothing can be read: as a dry run
        print(
            f"deploy teardown: nothing read, nothing deleted ({NO_CREDENTIALS}); "
            "with them, --yes-delete deletes what the reads find",
            file=sys.stderr,
        )
        return 1
    calls: list[Call] = []
    if endpoint is not None:
        config = endpoint["EndpointConfigName"]
        models = executor.endpoint_models(config)
        calls += tts_teardown_calls(args.name, config, models, executor.scaled(args.name))
    calls += agent_teardown_calls(executor.runtime_id(args.agent_name))
    if not args.yes_delete:
        _print_plan(calls)
        print("deploy teardown: nothing deleted; add --yes-delete to run these calls")
        return 1
    executor.run(calls)
    print(f"deploy teardown: {len(calls)} calls done")
    return 0


VERBS = {"tts": deploy_tts, "agent": deploy_agent, "status": status, "teardown": teardown}
