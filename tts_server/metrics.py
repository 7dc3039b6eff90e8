"""The TTS server's Prometheus metrics, served at ``GET /metrics`` (docs/operations.md).

One ``TTSMetrics`` per app (``SynthesisService.metrics``), in a registry of its own. Latencies
and outcomes are observed by the connection and the routes as segments end; the gauges
(sessions open, segments queued and in flight, the scheduler's pieces and batch sizes) and the
refusal counts are read from the app's ``Admission`` and the engine's scheduler when scraped,
so there is one count of each thing, not a copy of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from tts_protocol import SAMPLE_RATE
from tts_server.admission import Admission
from tts_server.engines.base import Engine
from tts_server.timing import Timing

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.35, 0.5, 0.75, 1, 1.5, 2.5, 5, 10)
SYNTHESIS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32)
RTF_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 4)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)

EngineSource = Callable[[], Engine | None]


class TTSMetrics:
    """The server's metrics; ``registry`` is what ``/metrics`` exposes."""

    def __init__(self, admission: Admission, engine: EngineSource) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.queue_wait = Histogram(
            "tts_queue_wait_seconds",
            "From a segment's speak being queued to the start of its synthesis.",
            ["engine"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.first_audio = Histogram(
            "tts_first_audio_seconds",
            "From a speak queued (or an HTTP request read) to its first audio, queue included.",
            ["engine"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.synthesis = Histogram(
            "tts_synthesis_seconds",
            "From the start of a segment's synthesis to its last audio.",
            ["engine"],
            buckets=SYNTHESIS_BUCKETS,
            registry=r,
        )
        self.real_time_factor = Histogram(
            "tts_real_time_factor",
            "Synthesis time over the audio's duration, per segment (below 1: faster than speech).",
            ["engine"],
            buckets=RTF_BUCKETS,
            registry=r,
        )
        self.audio = Counter(
            "tts_audio_seconds", "Seconds of audio synthesized.", ["engine"], registry=r
        )
        self.segments = Counter(
            "tts_segments", "Segments that ended, by outcome.", ["engine", "outcome"], registry=r
        )
        self.errors = Counter(
            "tts_errors",
            "Error frames sent and HTTP errors answered, by error code.",
            ["code"],
            registry=r,
        )
        r.register(LiveCounts(admission, engine))

    def error(self, code: str) -> None:
        """One ``error`` frame sent (or HTTP error answered) with ``code``."""
        self.errors.labels(code).inc()

    def ended(self, engine: str, outcome: str) -> None:
        """A segment ended: ``done``, ``cancelled`` or ``failed``."""
        self.segments.labels(engine, outcome).inc()

    def synthesized(self, engine: str, timing: Timing) -> None:
        """The timings of one synthesis that ran to its end (no queue wait if it was not
        queued)."""
        if timing.waited_s is not None:
            self.queue_wait.labels(engine).observe(timing.waited_s)
        if timing.first_audio_s is not None:
            self.first_audio.labels(engine).observe(timing.first_audio_s)
        synthesis_s = timing.synthesis_ms / 1000  # as the client is told
        self.synthesis.labels(engine).observe(synthesis_s)
        audio_s = timing.samples / SAMPLE_RATE
        self.audio.labels(engine).inc(audio_s)
        if audio_s > 0:
            self.real_time_factor.labels(engine).observe(synthesis_s / audio_s)


class LiveCounts(Collector):
    """Gauges and counters read at scrape time from the admission and the engine's scheduler."""

    def __init__(self, admission: Admission, engine: EngineSource) -> None:
        self._admission = admission
        self._engine = engine

    def collect(self) -> Iterator[Metric]:
        a = self._admission
        for name, help_text, value in (
            ("tts_connections_open", "WebSockets open now, idle ones included.", a.connections),
            ("tts_connections_max", "The server's limit on open WebSockets.", a.max_connections),
            (
                "tts_sessions_open",
                "Sessions with work now: WebSockets with segments queued or in synthesis, "
                "and HTTP syntheses.",
                a.sessions,
            ),
            ("tts_sessions_max", "The server's limit on sessions with work.", a.max_sessions),
            ("tts_segments_queued", "Segments waiting in every connection's queue.", a.queued),
            ("tts_segments_queued_max", "The server's limit on queued segments.", a.max_queued),
            ("tts_segments_in_flight", "Segments being synthesized now.", a.in_flight),
        ):
            yield GaugeMetricFamily(name, help_text, value=value)
        refusals = CounterMetricFamily(
            "tts_refusals", "Connections, sessions and segments refused as busy.", labels=["kind"]
        )
        refusals.add_metric(["connection"], a.refused_connections)
        refusals.add_metric(["session"], a.refused_sessions)
        refusals.add_metric(["segment"], a.refused_segments)
        yield refusals
        engine = self._engine()
        yield GaugeMetricFamily(
            "tts_engine_ready", "1 once the engine is loaded.", value=int(engine is not None)
        )
        if engine is not None:
            yield from _scheduler(engine)


def _scheduler(engine: Engine) -> Iterator[Metric]:
    """The scheduler's queue of sentence pieces and the sizes of the batches it ran."""
    stats = engine.stats
    labels = ["engine"]
    for name, help_text, value in (
        ("tts_pieces_queued", "Sentence pieces waiting for an engine lane.", stats.queued),
        ("tts_pieces_in_flight", "Sentence pieces inside running batches.", stats.in_flight),
    ):
        gauge = GaugeMetricFamily(name, help_text, labels=labels)
        gauge.add_metric([engine.name], value)
        yield gauge
    batch = HistogramMetricFamily(
        "tts_batch_size", "Sentence pieces per engine call (batch).", labels=labels
    )
    buckets = [
        (str(edge), sum(count for size, count in stats.sizes.items() if size <= edge))
        for edge in BATCH_BUCKETS
    ]
    batch.add_metric([engine.name], [*buckets, ("+Inf", stats.batches)], sum_value=stats.pieces)
    yield batch
