"""What ``voice-agent deploy`` asks of AWS, as data: each API call with its exact parameters.

The builders here are pure (no clients, no clock: the version stamp is an argument), so a dry
run prints exactly what a real run sends and the tests check each call against botocore's
service models. SageMaker models and endpoint configs are immutable, so every ``deploy tts``
makes new ones named ``NAME-STAMP``; an existing endpoint is moved to the new config with
``UpdateEndpoint`` (SageMaker swaps instances behind it), never deleted and re-created.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

VARIANT = "AllTraffic"
SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"
# Open bidirectional streams per instance, sampled every 10 s (docs/deploy.md: why this one).
SCALING_METRIC = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
SCALE_OUT_COOLDOWN_S = 60
SCALE_IN_COOLDOWN_S = 900  # streams live up to 30 min; sessions resume on another instance
DEFAULT_MODEL = "bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0"
DEFAULT_TARGET_STREAMS = 8.0  # per instance: below tts-server's TTS_MAX_SESSIONS default
# The shapes AWS accepts, checked before anything is called (a dry run included): a private ECR
# image (SageMaker and AgentCore pull from nowhere else), an IAM role, an S3 object.
ECR_IMAGE = re.compile(
    r"\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(?:\.cn)?/[a-z0-9][a-z0-9._/-]*"
    r"(?::[\w][\w.-]{0,127}|@sha256:[0-9a-f]{64})?"
)
ROLE_ARN = re.compile(r"arn:aws(?:-cn|-us-gov)?:iam::\d{12}:role/[\w+=,.@/-]{1,512}")
S3_URI = re.compile(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/.+")
ENDPOINT_NAME = re.compile(r"[a-zA-Z0-9](?:-*[a-zA-Z0-9]){0,62}")
ECR_HINT = "ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPOSITORY[:TAG]"
ROLE_HINT = "arn:aws:iam::ACCOUNT:role/NAME"
NVIDIA_FAMILIES = ("ml.g", "ml.p")  # SageMaker's NVIDIA GPU instances (ml.inf, ml.trn: Neuron)


def image_and_role_problems(image: str | None, role_arn: str) -> list[str]:
    """What is wrong with ``--image`` and ``--role``, in words (empty: nothing); ``image``
    None: no ``--image`` to check (deploy builds it)."""
    problems = []
    if image is not None and not ECR_IMAGE.fullmatch(image):
        problems.append(f"--image {image!r} is not an ECR image URI ({ECR_HINT})")
    if not ROLE_ARN.fullmatch(role_arn):
        problems.append(f"--role {role_arn!r} is not an IAM role ARN ({ROLE_HINT})")
    return problems


@dataclass(frozen=True, slots=True)
class Call:
    """One API call: ``service`` is the boto3 client name, ``operation`` its method."""

    service: str
    operation: str
    params: Mapping[str, Any]
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"service": self.service, "operation": self.operation, "params": self.params} | (
            {"note": self.note} if self.note else {}
        )


@dataclass(frozen=True, slots=True)
class TTSSpec:
    """The flags of ``deploy tts``."""

    name: str
    image: str
    model_data: str | None
    role_arn: str
    instance_type: str = "ml.g6.xlarge"
    min_instances: int = 1
    max_instances: int = 4
    target_streams: float = DEFAULT_TARGET_STREAMS
    environment: Mapping[str, str] = field(default_factory=dict)

    def problems(self) -> list[str]:
        """What AWS would refuse in these flags, in words (empty: nothing), so that a dry run
        fails where the real run would."""
        problems = image_and_role_problems(self.image, self.role_arn)
        if not ENDPOINT_NAME.fullmatch(self.name):
            problems.append(
                f"--name {self.name!r} is not an endpoint name (letters, digits and hyphens, "
                "at most 63, starting with a letter or digit)"
            )
        if self.model_data is not None and not S3_URI.fullmatch(self.model_data):
            problems.append(f"--model-data {self.model_data!r} is not s3://BUCKET/KEY")
        if self.min_instances < 1:
            problems.append(
                f"--min {self.min_instances}: an endpoint runs at least 1 instance "
                "(the initial count and the autoscaling floor)"
            )
        if self.max_instances < self.min_instances:
            problems.append(
                f"--max {self.max_instances} is below --min {self.min_instances}: "
                "autoscaling needs min <= max"
            )
        if not self.target_streams > 0:
            problems.append(f"--target-streams {self.target_streams:g} must be above 0")
        return problems + self._container_problems()

    def _container_problems(self) -> list[str]:
        """The instance type and the container's engine and device, as SageMaker's API model
        and the server's own settings parser read them."""
        from tts_server.settings import parse_settings

        settings = parse_settings([], self.environment)  # what the container will run
        known = instance_types()
        problems = []
        if known and self.instance_type not in known:
            problems.append(
                f"--instance-type {self.instance_type!r} is not a SageMaker endpoint instance "
                f"type (botocore's model lists {len(known)}, e.g. ml.g6.xlarge, ml.c7i.xlarge)"
            )
        elif settings.device == "cuda" and not self.instance_type.startswith(NVIDIA_FAMILIES):
            problems.append(
                f"--device cuda on {self.instance_type}: not an NVIDIA GPU instance "
                f"({', '.join(f'{family}*' for family in NVIDIA_FAMILIES)})"
            )
        if settings.device == "cuda" and settings.engine != "torch":
            problems.append(
                f"--device cuda with --engine {settings.engine}: only torch runs on CUDA"
            )
        return problems

    def versioned(self, stamp: str) -> str:
        """``NAME-STAMP``: the name of this deploy's model and endpoint config."""
        return f"{self.name}-{stamp}"[:63]


@functools.cache
def instance_types() -> frozenset[str]:
    """The instance types of an endpoint variant, from botocore's SageMaker model (on disk)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)


def container_environment(
    engine: str = "torch", device: str | None = None, max_sessions: int | None = None
) -> dict[str, str]:
    """The TTS container's environment (``tts_server/settings.py`` reads it); the device
    defaults to the engine's: CUDA for torch, the CPU for onnx."""
    device = device or ("cuda" if engine == "torch" else "cpu")
    env = {"TTS_ENGINE": engine, "TTS_DEVICE": device}
    if max_sessions is not None:
        env["TTS_MAX_SESSIONS"] = str(max_sessions)
    return env


def tts_calls(spec: TTSSpec, stamp: str, endpoint_exists: bool) -> list[Call]:
    """Model, endpoint config, then create or update the endpoint."""
    version = spec.versioned(stamp)
    container: dict[str, Any] = {"Image": spec.image, "Environment": dict(spec.environment)}
    if spec.model_data:
        container["ModelDataUrl"] = spec.model_data
    variant = {
        "VariantName": VARIANT,
        "ModelName": version,
        "InstanceType": spec.instance_type,
        "InitialInstanceCount": spec.min_instances,
        "ContainerStartupHealthCheckTimeoutInSeconds": 600,
    }
    endpoint = {"EndpointName": spec.name, "EndpointConfigName": version}
    return [
        Call(
            "sagemaker",
            "create_model",
            {
                "ModelName": version,
                "ExecutionRoleArn": spec.role_arn,
                "PrimaryContainer": container,
            },
        ),
        Call(
            "sagemaker",
            "create_endpoint_config",
            {"EndpointConfigName": version, "ProductionVariants": [variant]},
        ),
        Call("sagemaker", "update_endpoint", endpoint, "in place: the endpoint keeps serving")
        if endpoint_exists
        else Call("sagemaker", "create_endpoint", endpoint),
    ]


def scaling_calls(spec: TTSSpec) -> list[Call]:
    """Target tracking on open streams per instance, between ``min`` and ``max`` instances."""
    resource = f"endpoint/{spec.name}/variant/{VARIANT}"
    return [
        Call(
            "application-autoscaling",
            "register_scalable_target",
            {
                "ServiceNamespace": "sagemaker",
                "ResourceId": resource,
                "ScalableDimension": SCALABLE_DIMENSION,
                "MinCapacity": spec.min_instances,
                "MaxCapacity": spec.max_instances,
            },
        ),
        Call(
            "application-autoscaling",
            "put_scaling_policy",
            {
                "PolicyName": f"{spec.name}-concurrent-streams",
                "ServiceNamespace": "sagemaker",
                "ResourceId": resource,
                "ScalableDimension": SCALABLE_DIMENSION,
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingScalingPolicyConfiguration": {
                    "TargetValue": spec.target_streams,
                    "PredefinedMetricSpecification": {"PredefinedMetricType": SCALING_METRIC},
                    "ScaleOutCooldown": SCALE_OUT_COOLDOWN_S,
                    "ScaleInCooldown": SCALE_IN_COOLDOWN_S,
                },
            },
        ),
    ]


SERVER_PROTOCOL = {"http": "HTTP", "agui": "AGUI"}  # agent.doors.protocols: ours, and AG-UI


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """The flags of ``deploy agent``."""

    name: str
    image: str
    role_arn: str
    tts_endpoint: str
    region: str
    model: str = DEFAULT_MODEL
    agent_factory: str | None = None  # package.module:function in the image (VOICE_AGENT_FACTORY)
    idle_timeout_s: int = 900
    max_lifetime_s: int = 28800
    protocol: str = "http"  # http (ours) | agui: the runtime's protocol and VOICE_AGENT_PROTOCOL

    def problems(self, built: bool = False) -> list[str]:
        """What AWS would refuse in these flags, or the runtime at its start, in words (empty:
        nothing); ``built``: the image is this deploy's build, not a flag to check."""
        from agent.config import FACTORY_SPEC
        from agent.core.llm import ModelSpecError, parse_model_spec

        problems = image_and_role_problems(None if built else self.image, self.role_arn)
        try:
            parse_model_spec(self.model)
        except ModelSpecError as exc:
            problems.append(f"--model: {exc}")
        if self.agent_factory is not None and not FACTORY_SPEC.fullmatch(self.agent_factory):
            problems.append(f"--agent {self.agent_factory!r} is not package.module:function")
        if self.protocol not in SERVER_PROTOCOL:
            problems.append(f"--protocol {self.protocol!r}: one of {', '.join(SERVER_PROTOCOL)}")
        return problems

    def environment(self) -> dict[str, str]:
        """What ``agent/config.py`` reads inside the runtime."""
        return (
            {
                "AWS_REGION": self.region,
                "TTS_SAGEMAKER_ENDPOINT": self.tts_endpoint,
                "VOICE_AGENT_MODEL": self.model,
            }
            | ({"VOICE_AGENT_FACTORY": self.agent_factory} if self.agent_factory else {})
            | ({"VOICE_AGENT_PROTOCOL": self.protocol} if self.protocol != "http" else {})
        )


def agent_calls(spec: AgentSpec, runtime_id: str | None) -> list[Call]:
    """Create the AgentCore runtime, or update the one named ``spec.name`` in place."""
    params: dict[str, Any] = {
        "agentRuntimeArtifact": {"containerConfiguration": {"containerUri": spec.image}},
        "roleArn": spec.role_arn,
        "networkConfiguration": {"networkMode": "PUBLIC"},
        "protocolConfiguration": {"serverProtocol": SERVER_PROTOCOL[spec.protocol]},
        "lifecycleConfiguration": {
            "idleRuntimeSessionTimeout": spec.idle_timeout_s,
            "maxLifetime": spec.max_lifetime_s,
        },
        "environmentVariables": spec.environment(),
    }
    if runtime_id is None:
        return [
            Call(
                "bedrock-agentcore-control",
                "create_agent_runtime",
                {"agentRuntimeName": spec.name, **params},
            )
        ]
    return [
        Call(
            "bedrock-agentcore-control",
            "update_agent_runtime",
            {"agentRuntimeId": runtime_id, **params},
            "a new runtime version; the endpoint DEFAULT follows it",
        )
    ]


def tts_teardown_calls(
    name: str, endpoint_config: str | None, models: list[str], scaled: bool
) -> list[Call]:
    """Remove what ``deploy tts`` made for endpoint ``name``: scaling, endpoint, config, models."""
    calls: list[Call] = []
    if scaled:
        calls.append(
            Call(
                "application-autoscaling",
                "deregister_scalable_target",
                {
                    "ServiceNamespace": "sagemaker",
                    "ResourceId": f"endpoint/{name}/variant/{VARIANT}",
                    "ScalableDimension": SCALABLE_DIMENSION,
                },
            )
        )
    calls.append(Call("sagemaker", "delete_endpoint", {"EndpointName": name}))
    if endpoint_config:
        calls.append(
            Call("sagemaker", "delete_endpoint_config", {"EndpointConfigName": endpoint_config})
        )
    calls += [Call("sagemaker", "delete_model", {"ModelName": model}) for model in models]
    return calls


def agent_teardown_calls(runtime_id: str | None) -> list[Call]:
    """Remove the AgentCore runtime, if there is one."""
    if runtime_id is None:
        return []
    return [
        Call("bedrock-agentcore-control", "delete_agent_runtime", {"agentRuntimeId": runtime_id})
    ]


def state_reads(name: str, agent_name: str) -> list[Call]:
    """The reads ``status`` and ``teardown`` make before acting (what a dry run shows instead)."""
    scaled = {
        "ServiceNamespace": "sagemaker",
        "ResourceIds": [f"endpoint/{name}/variant/{VARIANT}"],
    }
    return [
        Call("sagemaker", "describe_endpoint", {"EndpointName": name}, "absent: no TTS calls"),
        Call(
            "sagemaker",
            "describe_endpoint_config",
            {"EndpointConfigName": f"<EndpointConfigName of {name}>"},
            "the models it serves",
        ),
        Call("application-autoscaling", "describe_scalable_targets", scaled, "registered?"),
        Call("bedrock-agentcore-control", "list_agent_runtimes", {}, f"the id of {agent_name}"),
    ]


def teardown_template(name: str, agent_name: str) -> list[Call]:
    """Every delete ``teardown`` can make, the names it would read left as placeholders."""
    models = [f"<ModelName of each variant of {name}>"]
    config = f"<EndpointConfigName of {name}>"
    return tts_teardown_calls(name, config, models, True) + agent_teardown_calls(
        f"<id of {agent_name}>"
    )
