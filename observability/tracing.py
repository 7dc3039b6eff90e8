"""Traces with OpenTelemetry: off unless the standard ``OTEL_*`` variables ask for them.

The code uses only the API (``tracer``); ``configure()``, called once by each entry point,
installs the SDK's tracer provider when ``OTEL_TRACES_EXPORTER`` names an exporter or an OTLP
endpoint is set (``OTEL_EXPORTER_OTLP_ENDPOINT``/``..._TRACES_ENDPOINT``, which mean ``otlp``).
Exporters are found by the SDK's own entry points (``console``, ``otlp_proto_http`` from the
``otlp`` extra, ``otlp_proto_grpc`` if installed). A provider installed before (by
``opentelemetry-instrument``, e.g. the ADOT distro on AgentCore) is kept as it is.

strands writes the prompt and the reply into its spans' attributes; unless
``OTEL_SEMCONV_STABILITY_OPT_IN`` is set, ``configure()`` sets it to redact them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from importlib.metadata import entry_points

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

tracer = trace.get_tracer("kokoro_voice_agent")
EXPORTER_GROUP = "opentelemetry_traces_exporter"
ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
REDACT_GEN_AI = "gen_ai_unredacted_attributes="  # strands: redact every gen_ai content attribute


class TracingConfigError(SystemExit):
    """The ``OTEL_*`` variables ask for something this installation cannot do."""


def exporter_names(env: Mapping[str, str]) -> list[str]:
    """The entry-point names of the exporters ``env`` asks for ([]: tracing off)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    listed = env.get("OTEL_TRACES_EXPORTER")
    if listed is None:
        listed = "otlp" if any(env.get(name) for name in ENDPOINTS) else "none"
    names = [name.strip() for name in listed.split(",") if name.strip() not in ("", "none")]
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    otlp = "otlp_proto_grpc" if protocol == "grpc" else "otlp_proto_http"
    return [otlp if name == "otlp" else name for name in names]


def exporters(env: Mapping[str, str]) -> list[SpanExporter]:
    """New exporters for ``env``; they read their own ``OTEL_EXPORTER_*`` settings."""
    found = []
    for name in exporter_names(env):
        points = entry_points(group=EXPORTER_GROUP, name=name)
        if not points:
            hint = " (pip install 'kokoro-voice-agent[otlp]')" if name.startswith("otlp") else ""
            raise TracingConfigError(f"OTEL_TRACES_EXPORTER: no exporter {name!r}{hint}")
        found.append(next(iter(points)).load()())
    return found


def configure(service: str, env: MutableMapping[str, str] | None = None) -> TracerProvider | None:
    """Install a tracer provider for ``service`` if ``env`` asks for traces; None if off."""
    env = os.environ if env is None else env
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    chosen = exporters(env)
    if not chosen:
        return None
    env.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", REDACT_GEN_AI)
    named = {} if env.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: service}
    provider = TracerProvider(resource=Resource.create(named))
    for exporter in chosen:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider
