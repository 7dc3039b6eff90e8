"""A turn's trace and log context: one span per turn, its children, and the ids on every line.

``TurnTelemetry`` starts the ``voice_agent.turn`` span and builds a ``contextvars.Context``
holding it (as the current span) and the turn's log ids (``observability.logs``); the turn's
three tasks run in copies of that context, so the ``llm.stream``, ``tts.send`` and
``audio.relay`` spans they open are its children, strands' own spans nest under
``llm.stream``, and every log line they write carries ``turn_id`` and ``session_id``. Each
segment is a ``tts.segment`` span, child of the turn, from the moment it is handed to the
session to its last audio. Spans are no-ops
unless tracing is configured (``observability.tracing``). Prompt text is never logged or put
into our spans; only its length is.

The LLM's stream is read with ``read_apart``: strands enters its spans (OpenTelemetry context
tokens) inside nested async generators, and a generator left suspended at a ``yield`` (the
turn cancelled while it speaks a sentence) is closed later by the event loop's finalizer, in
another context, where every token fails to reset ("Failed to detach context", once per span).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from agent.core.observer import TurnObserver
from agent.events import Event, TurnMetrics
from observability.logs import bind
from observability.tracing import tracer
from tts_client import SegmentStream

log = logging.getLogger("agent.turn")
T = TypeVar("T")


def detached(work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """``work`` as a task in an empty context: tasks it starts (a TTS session's reader, which
    outlives the turn) carry neither this turn's ids nor its current span."""
    return asyncio.get_running_loop().create_task(work, context=contextvars.Context())


async def read_apart(stream: AsyncIterator[T]) -> AsyncGenerator[T, None]:
    """``stream``'s items, read by a task of its own (in a copy of this context) that awaits
    nothing but ``stream``: a cancel always lands inside it, so whatever it entered is left in
    the task that entered it. Closing this generator cancels the reader and waits for it; the
    stream's own failure is raised here."""
    items: asyncio.Queue[tuple[T] | None] = asyncio.Queue()

    async def read() -> None:
        try:
            async for item in stream:
                items.put_nowait((item,))
        finally:
            items.put_nowait(None)

    reader = asyncio.create_task(read())
    try:
        while (item := await items.get()) is not None:
            yield item[0]
        await reader
    finally:
        reader.cancel()
        await asyncio.wait([reader])


async def _traced(name: str, work: Coroutine[Any, Any, None]) -> None:
    with tracer.start_as_current_span(name):
        await work


class TurnTelemetry:
    """The spans and log context of one turn."""

    def __init__(self, turn_id: str, conversation: str | None, mode: str, prompt: str) -> None:
        attributes = {"turn.id": turn_id, "turn.mode": mode, "turn.prompt_chars": len(prompt)}
        if conversation is not None:
            attributes["session.id"] = conversation
        self.span = tracer.start_span("voice_agent.turn", attributes=attributes)
        self.parent = trace.set_span_in_context(self.span)
        self.context = contextvars.Context()
        self.context.run(bind, turn_id=turn_id, session_id=conversation)
        self.context.run(otel_context.attach, self.parent)
        self._segments: dict[int, Span] = {}
        self._observer = TurnObserver(on_error=self._error, on_metrics=self._latencies)
        self.log(logging.INFO, "turn started: mode=%s prompt_chars=%d", mode, len(prompt))

    def log(self, level: int, message: str, *args: object) -> None:
        """Log in the turn's context (so with its ids), from anywhere."""
        self.context.run(log.log, level, message, *args)

    def task(self, work: Coroutine[Any, Any, None], name: str, span: str) -> asyncio.Task[None]:
        """A task of the turn, in a copy of its context, inside a child span called ``span``."""
        return asyncio.create_task(_traced(span, work), name=name, context=self.context.copy())

    def saw(self, event: Event) -> Event:
        """An event the turn yields: errors and its measured latencies go on the turn span."""
        self._observer.saw(event)
        return event

    def _error(self, code: str) -> None:
        self.span.add_event("error", {"code": code})

    def _latencies(self, metrics: TurnMetrics) -> None:
        for field in dataclasses.fields(metrics):
            if (value := getattr(metrics, field.name)) is not None:
                self.span.set_attribute(f"turn.{field.name}", value)

    def segment_sent(self, seq: int, text: str) -> None:
        """Segment ``seq`` goes to the TTS session: its span starts (the text's length only)."""
        attributes = {"segment.seq": seq, "segment.chars": len(text)}
        self._segments[seq] = tracer.start_span(
            "tts.segment", context=self.parent, attributes=attributes
        )

    def segment_ended(self, seq: int, stream: SegmentStream) -> None:
        """Segment ``seq``'s audio was relayed to its end: its timings, then its span ends."""
        timings, end = stream.timings, stream.end
        first_byte = (
            None if timings.first_audio_s is None else round(timings.first_audio_s * 1e3, 1)
        )
        engine = None if end is None else end.synth_ms
        log.debug(
            "segment %d %s: first byte %s ms, engine %s ms", seq, stream.status, first_byte, engine
        )
        span = self._segments.pop(seq, None)
        if span is None:
            return
        span.set_attribute("segment.status", str(stream.status))
        span.set_attribute("segment.audio_samples", stream.samples)
        if first_byte is not None:
            span.set_attribute("tts.first_byte_ms", first_byte)
        if engine is not None:
            span.set_attribute("tts.engine_ms", engine)
            if timings.total_s is not None:  # sent → end, less the engine: queue and network
                span.set_attribute(
                    "tts.queue_wait_ms", round(max(0.0, timings.total_s * 1e3 - engine), 1)
                )
        if stream.error is not None:
            span.set_status(Status(StatusCode.ERROR, type(stream.error).__name__))
        span.end()

    def end(self) -> None:
        """The turn is over (whatever ended it): close every span still open."""
        for span in self._segments.values():
            span.set_attribute("segment.status", "abandoned")
            span.end()
        self._segments.clear()
        outcome, errors = self._observer.outcome, self._observer.errors
        self.span.set_attribute("turn.outcome", outcome)
        if outcome == "error":
            self.span.set_status(Status(StatusCode.ERROR, ",".join(errors)))
        self.span.end()
        self.log(logging.INFO, "turn ended: outcome=%s errors=%s", outcome, errors)
