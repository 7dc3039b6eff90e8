"""One real turn (demo model, a fake-engine TTS server): its span tree and its log lines.

Spans go to the SDK's ``InMemorySpanExporter`` on a tracer provider installed for the test
process (OpenTelemetry allows one global provider; each test gets its own exporter).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from strands import Agent

from agent.core.llm import DemoConfig, DemoModel
from agent.core.telemetry import read_apart
from agent.core.turn import Turn
from agent.requests import TurnRequest
from observability.logs import ContextFilter, formatter
from tests.agent.core.test_turn import source
from tts_client import TTSSession, WebSocketTransport
from tts_server.testing.server_thread import ServerThread

PROMPT = "my secret word is PAPAYA-42"
DETACH_FAILED = "Failed to detach context"  # opentelemetry.context's line for a bad reset


class Lines(logging.Handler):
    """Records every line as the JSON formatter writes it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(formatter("json"))
        self.addFilter(ContextFilter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    loggers = [logging.getLogger(name) for name in ("agent", "tts_client")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    yield handler
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
async def session(fake_tts: ServerThread) -> AsyncIterator[TTSSession]:
    async with TTSSession(WebSocketTransport(fake_tts.ws_url)) as opened:
        yield opened


async def one_turn(session: TTSSession) -> tuple[Turn, list[dict[str, object]]]:
    model = DemoModel(DemoConfig(sentences=2, tokens_per_second=400, first_token_delay_s=0))
    llm = Agent(model=model, callback_handler=None)

    turn = Turn(TurnRequest(prompt=PROMPT), llm, source(session), conversation="conv-7")
    return turn, [event.to_dict() async for event in turn.run()]


def span_ms(span: ReadableSpan) -> float:
    """The span's duration in milliseconds (its times are in nanoseconds)."""
    assert span.start_time is not None and span.end_time is not None
    return (span.end_time - span.start_time) / 1e6


async def test_a_turn_is_one_span_with_llm_relay_and_segment_children(
    session: TTSSession, spans: InMemorySpanExporter
) -> None:
    turn, events = await one_turn(session)
    finished = spans.get_finished_spans()
    (root,) = [s for s in finished if s.name == "voice_agent.turn"]
    assert root.parent is None and root.attributes is not None
    assert root.attributes["turn.id"] == turn.id
    assert root.attributes["session.id"] == "conv-7"
    assert root.attributes["turn.outcome"] == "ok"
    # timings in ms, within the span they describe: a unit slip fails the upper bound
    assert 0 < root.attributes["turn.ttfa_ms"] <= span_ms(root)  # type: ignore[operator]
    trace_id = root.context.trace_id
    ours = [s for s in finished if s.context.trace_id == trace_id]

    def children(span: ReadableSpan) -> list[ReadableSpan]:
        return [s for s in ours if s.parent and s.parent.span_id == span.context.span_id]

    names = sorted(s.name for s in children(root))
    segments = sum(e["type"] == "segment" for e in events)
    assert segments >= 2
    assert names == sorted(["llm.stream", "tts.send", "audio.relay"] + ["tts.segment"] * segments)
    (llm,) = [s for s in children(root) if s.name == "llm.stream"]
    assert children(llm), "strands' own spans nest under the LLM stream"
    for segment in (s for s in children(root) if s.name == "tts.segment"):
        attributes = dict(segment.attributes or {})
        assert attributes["segment.status"] == "done"
        within = span_ms(segment)
        assert 0 < attributes["tts.first_byte_ms"] <= within  # type: ignore[operator]
        assert 0 < attributes["tts.engine_ms"] <= within  # type: ignore[operator]
        assert 0 <= attributes["tts.queue_wait_ms"] <= within  # type: ignore[operator]
        assert "segment.chars" in attributes
    for span in (root, llm, *children(root)):  # our spans carry no text
        assert PROMPT not in json.dumps(dict(span.attributes or {}))


async def test_every_line_of_a_turn_has_its_ids_and_no_prompt(
    session: TTSSession, lines: Lines
) -> None:
    turn, _ = await one_turn(session)
    records = [json.loads(line) for line in lines.lines]
    messages = [r["message"] for r in records]
    assert any(m.startswith("turn started") for m in messages)
    assert any(m.startswith("turn ended: outcome=ok") for m in messages)
    assert any(m.startswith("segment 0 done") for m in messages)  # from the relay task
    for record in records:
        assert (record["turn_id"], record["session_id"]) == (turn.id, "conv-7"), record
        assert {"time", "level", "logger", "message"} <= record.keys()
    assert "PAPAYA" not in "\n".join(lines.lines)


# --- a stream's context tokens are reset in the task that set them --------------------------


async def spans_like_strands(entered: list[str]) -> AsyncGenerator[str, None]:
    """What strands' ``stream_async`` does: a span made current (a context token) around its
    yields, reset when the generator ends."""
    token = otel_context.attach(otel_context.get_current())
    try:
        for n in range(1000):
            entered.append(f"delta {n}")
            yield f"delta {n}"
            await asyncio.sleep(0)
    finally:
        otel_context.detach(token)


async def abandoned_while_speaking(read: AsyncIterator[str]) -> None:
    """Consume ``read`` as a turn's producer does, cancelled while it speaks the first item."""

    async def produce(items: AsyncIterator[str]) -> None:
        async for _ in items:
            await asyncio.sleep(3600)  # a sentence handed to the TTS session

    producer = asyncio.create_task(produce(read))
    await asyncio.sleep(0.05)
    producer.cancel()
    await asyncio.wait([producer])
    del producer, read
    gc.collect()  # a suspended generator left alone is finalized now, in another task
    await asyncio.sleep(0.05)


async def test_a_stream_left_at_a_yield_fails_to_detach_in_the_finalizer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The cause, shown: what ``read_apart`` exists for (if this stops failing, OpenTelemetry
    or asyncio changed, and ``read_apart`` may go)."""
    entered: list[str] = []
    await abandoned_while_speaking(spans_like_strands(entered))
    assert entered == ["delta 0"]
    assert DETACH_FAILED in caplog.text


async def test_read_apart_resets_a_streams_context_in_its_own_task(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entered: list[str] = []

    async def closing() -> AsyncIterator[str]:  # as the producer reads it: closed when it ends
        async with contextlib.aclosing(read_apart(spans_like_strands(entered))) as items:
            async for item in items:
                yield item

    await abandoned_while_speaking(closing())
    assert entered[0] == "delta 0"
    assert DETACH_FAILED not in caplog.text


async def test_read_apart_raises_the_streams_failure_after_its_items() -> None:
    async def failing() -> AsyncGenerator[str, None]:
        yield "a"
        raise ValueError("the model failed")

    seen: list[str] = []
    with pytest.raises(ValueError, match="the model failed"):
        async for item in read_apart(failing()):
            seen.append(item)
    assert seen == ["a"]


class Speechless:
    """A TTS session whose ``speak`` never returns: the turn is cancelled while it speaks."""

    pending = False
    closed = False

    async def speak(self, *_args: object) -> None:
        await asyncio.sleep(3600)


class SpeechlessLender:
    """Lends a ``Speechless`` session."""

    async def borrow(self, on_retry: object = None) -> Speechless:
        return Speechless()

    def give_back(self, session: object) -> None:
        pass


async def test_a_turn_cancelled_while_it_speaks_detaches_every_context(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = DemoModel(DemoConfig(sentences=4, tokens_per_second=400, first_token_delay_s=0))
    turn = Turn(
        TurnRequest(prompt="Talk for a while"),
        Agent(model=model, callback_handler=None),
        SpeechlessLender(),  # type: ignore[arg-type]
    )
    events = turn.run()
    async for event in events:
        if event.to_dict()["type"] == "segment":
            break
    await events.aclose()
    del events, turn
    gc.collect()
    await asyncio.sleep(0.05)
    assert DETACH_FAILED not in caplog.text
