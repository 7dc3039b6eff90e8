"""Tracing is configured from the standard OTEL_* variables: off by default, OTLP or console."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from observability.tracing import TracingConfigError, exporter_names, exporters


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({}, []),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ["otlp_proto_http"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces"}, ["otlp_proto_http"]),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            ["otlp_proto_grpc"],
        ),
        ({"OTEL_TRACES_EXPORTER": "console,otlp"}, ["console", "otlp_proto_http"]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, []),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}, []),
    ],
)
def test_the_exporters_named_by_the_environment(env: dict[str, str], names: list[str]) -> None:
    assert exporter_names(env) == names


def test_exporters_are_the_sdks_own_and_an_unknown_one_is_refused() -> None:
    found = exporters({"OTEL_TRACES_EXPORTER": "console,otlp"})
    assert [type(e) for e in found] == [ConsoleSpanExporter, OTLPSpanExporter]
    with pytest.raises(TracingConfigError, match="no exporter 'zipkin_json'"):
        exporters({"OTEL_TRACES_EXPORTER": "zipkin_json"})


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    """An OTLP/HTTP endpoint on loopback that records what it is sent."""
    received: list[tuple[str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()


def test_an_otlp_endpoint_receives_the_spans(
    collector: tuple[str, list[tuple[str, bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, received = collector
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)  # the exporter reads it itself
    (exporter,) = exporters(dict(os.environ))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("test").start_as_current_span("voice_agent.turn"):
        pass
    provider.shutdown()
    assert [path for path, _ in received] == ["/v1/traces"]
    assert b"voice_agent.turn" in received[0][1]


def run_configure(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = (
        "import os; from opentelemetry import trace; from observability import tracing\n"
        "provider = tracing.configure('voice-agent')\n"
        "print(type(trace.get_tracer_provider()).__name__, os.environ.get("
        "'OTEL_SEMCONV_STABILITY_OPT_IN'), flush=True)\n"
        "with tracing.tracer.start_as_current_span('voice_agent.turn'): pass\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-c", code], env=clean | env, capture_output=True, text=True, timeout=60
    )


def test_configure_installs_a_provider_only_when_asked() -> None:
    off = run_configure({})
    assert off.returncode == 0 and off.stdout.split()[:2] == ["ProxyTracerProvider", "None"]
    on = run_configure({"OTEL_TRACES_EXPORTER": "console"})
    assert on.returncode == 0, on.stderr
    first, _, spans = on.stdout.partition("\n")
    assert first == "TracerProvider gen_ai_unredacted_attributes="  # strands' text redacted
    span = json.loads(spans)
    assert span["name"] == "voice_agent.turn"
    assert span["resource"]["attributes"]["service.name"] == "voice-agent"
