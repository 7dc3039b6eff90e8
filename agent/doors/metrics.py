"""The agent's Prometheus metrics, served at ``GET /metrics`` by both front doors.

One ``AgentMetrics`` per app, in a registry of its own. A turn is observed where a front door
hands its events to the client (``observe``): a ``TurnObserver`` (``agent.observer``) reads how
it went and its latencies from its events. Labels are the transport (``sse``, ``ws``), the
outcome and the error code; a tool call's time is labelled by its tool and status. Listening
adds the utterances heard (by how they ended), the time recognition took, the
recognizer's queue (waiting or running, process-wide), the end-of-turn delay and the turn
model's cost.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from agent.core.observer import TurnObserver
from agent.events import ErrorEvent, Event, SpeechEnd, ToolEnd, Transcript, TurnMetrics
from agent.listening.recognizer import Recognizer

LATENCY_BUCKETS = (0.1, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 20)
DURATION_BUCKETS = (0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300)
ASR_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10)
TURN_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2)
TOOL_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60)
TRANSPORTS = ("sse", "ws")


class AgentMetrics:
    """The agent's metrics; ``registry`` is what ``/metrics`` exposes."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._turn_series(self.registry)
        self._client_series(self.registry)
        self._listening_series(self.registry)
        for transport in TRANSPORTS:  # every series exists from the first scrape
            self.in_progress.labels(transport)

    def _turn_series(self, r: CollectorRegistry) -> None:
        """Turns by outcome, those streaming now, their latencies and their tool calls."""
        self.turns = Counter(
            "agent_turns", "Turns that ended, by outcome.", ["transport", "outcome"], registry=r
        )
        self.in_progress = Gauge(
            "agent_turns_in_progress", "Turns streaming now.", ["transport"], registry=r
        )
        self.first_audio = Histogram(
            "agent_turn_first_audio_seconds",
            "From a turn's request to its first audio, per completed turn.",
            ["transport"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.first_token = Histogram(
            "agent_llm_first_token_seconds",
            "From a turn's request to the LLM's first text, per completed turn.",
            ["transport"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.duration = Histogram(
            "agent_turn_duration_seconds",
            "From a turn's request to its last event, per completed turn.",
            ["transport"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.tools = Histogram(
            "agent_tool_seconds",
            "Tool calls in turns, by tool and status (ok, error, cancelled).",
            ["tool", "status"],
            buckets=TOOL_BUCKETS,
            registry=r,
        )

    def _client_series(self, r: CollectorRegistry) -> None:
        """The errors clients were sent, and the clients connected."""
        self.errors = Counter(
            "agent_errors",
            "Errors sent to clients (turn errors, refused requests and messages), by code.",
            ["code"],
            registry=r,
        )
        self.sse_clients = Gauge(
            "agent_sse_clients", "Clients connected to an SSE turn stream.", registry=r
        )
        self.ws_clients = Gauge("agent_ws_clients", "WebSocket clients connected.", registry=r)

    def _listening_series(self, r: CollectorRegistry) -> None:
        """Utterances heard, recognition and its queue, the end of the turn and eager replies."""
        self.utterances = Counter(
            "agent_utterances",
            "Utterances heard on /ws, by how they ended.",
            ["reason"],
            registry=r,
        )
        self.recognition = Histogram(
            "agent_asr_seconds", "Recognition time per utterance.", buckets=ASR_BUCKETS, registry=r
        )
        self.asr_queue = Gauge(
            "agent_asr_queue_depth",
            "Recognitions waiting or running now, in this process.",
            registry=r,
        )
        self.end_of_turn = Histogram(
            "agent_end_of_turn_seconds",
            "From the end of speech to the end of the turn (the silence waited, and the turn"
            " model's time when its decision ended the turn), per utterance ended by silence.",
            buckets=TURN_BUCKETS,
            registry=r,
        )
        self.turn_model = Histogram(
            "agent_turn_model_seconds",
            "The turn model's time for the decision on an utterance's last pause.",
            ["decision"],
            buckets=TURN_BUCKETS,
            registry=r,
        )
        self.withdrawn = Counter(
            "agent_turns_withdrawn",
            "Replies withdrawn unheard because the user spoke on: started on an eager"
            " transcript while a turn waited, or cut before any of it played (each also ends"
            " as a cancelled or completed turn).",
            registry=r,
        )

    def watch(self, recognizer: Recognizer) -> None:
        """Export ``recognizer``'s queue depth as ``agent_asr_queue_depth``."""
        self.asr_queue.set_function(lambda: recognizer.queue_depth)

    def socket_event(self, event: Event) -> None:
        """An event a socket sent of its own: count errors and utterances, time recognitions."""
        if isinstance(event, ErrorEvent):
            self.error(event.code)
        elif isinstance(event, SpeechEnd):
            self.utterances.labels(event.reason).inc()
            self._turn_ended(event)
        elif isinstance(event, Transcript):
            self.recognition.observe(event.asr_ms / 1000)

    def _turn_ended(self, event: SpeechEnd) -> None:
        if event.turn is not None and event.turn_ms is not None:
            self.turn_model.labels(event.turn).observe(event.turn_ms / 1000)
        if event.wait_ms is not None:
            decided_ms = event.turn_ms if event.turn == "complete" and event.turn_ms else 0.0
            self.end_of_turn.observe((event.wait_ms + decided_ms) / 1000)

    def error(self, code: str) -> None:
        """One error answered with ``code``."""
        self.errors.labels(code).inc()

    async def observe(
        self, events: AsyncGenerator[Event, None], transport: str
    ) -> AsyncGenerator[Event, None]:
        """``events``, passed on unchanged, counted as one turn on ``transport``."""
        observer = TurnObserver(self.error, lambda latencies: self._latencies(latencies, transport))
        self.in_progress.labels(transport).inc()
        if transport == "sse":
            self.sse_clients.inc()
        try:
            async with contextlib.aclosing(events):
                async for event in events:
                    observer.saw(event)
                    if isinstance(event, ToolEnd):
                        self.tools.labels(event.name, event.status).observe(event.duration_ms / 1e3)
                    yield event
        finally:
            self.turns.labels(transport, observer.outcome).inc()
            self.in_progress.labels(transport).dec()
            if transport == "sse":
                self.sse_clients.dec()

    def _latencies(self, latencies: TurnMetrics, transport: str) -> None:
        for histogram, ms in (
            (self.first_audio, latencies.ttfa_ms),
            (self.first_token, latencies.ttft_ms),
            (self.duration, latencies.total_ms),
        ):
            if ms is not None:
                histogram.labels(transport).observe(ms / 1000)
