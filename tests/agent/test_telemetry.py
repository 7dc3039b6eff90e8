"""One real turn (demo model, a fake-engine TTS server): its span tree and its log lines.

Spans go to the SDK's ``InMemorySpanExporter`` on a tracer provider installed for the test
process (OpenTelemetry allows one global provider; each test gets its own exporter).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from strands import Agent

from agent.llm import DemoConfig, DemoModel
from agent.requests import TurnRequest
from agent.turn import Turn
from observability.logs import ContextFilter, formatter
from tests.conftest import start_server
from tts_client import TTSSession, WebSocketTransport
from tts_server.testing.fake_engine import FakeEngine
from tts_server.testing.server_thread import ServerThread

PROMPT = "my secret word is PAPAYA-42"


@pytest.fixture(scope="module")
def provider() -> TracerProvider:
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    current = trace.get_tracer_provider()
    assert isinstance(current, TracerProvider)
    return current


@pytest.fixture
def spans(provider: TracerProvider) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()  # its processor stays, exporting nothing


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


@pytest.fixture(scope="module")
def fake_tts() -> Iterator[ServerThread]:
    """A real TTS server on the fast fake engine: the turn, not the model, is under test."""
    server = start_server(FakeEngine())
    yield server
    server.stop()


@pytest.fixture
async def session(fake_tts: ServerThread) -> AsyncIterator[TTSSession]:
    async with TTSSession(WebSocketTransport(fake_tts.ws_url)) as opened:
        yield opened


async def one_turn(session: TTSSession) -> tuple[Turn, list[dict[str, object]]]:
    model = DemoModel(DemoConfig(sentences=2, tokens_per_second=400, first_token_delay_s=0))
    llm = Agent(model=model, callback_handler=None)

    async def tts() -> TTSSession:
        return session

    turn = Turn(TurnRequest(prompt=PROMPT), llm, tts, conversation="conv-7")
    return turn, [event.to_dict() async for event in turn.run()]


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
    assert root.attributes["turn.ttfa_ms"] > 0
    trace_id = root.context.trace_id
    ours = [s for s in finished if s.context.trace_id == trace_id]

    def children(span: ReadableSpan) -> list[ReadableSpan]:
        return [s for s in ours if s.parent and s.parent.span_id == span.context.span_id]

    names = sorted(s.name for s in children(root))
    segments = sum(e["type"] == "segment" for e in events)
    assert segments >= 2
    assert names == sorted(["llm.stream", "audio.relay"] + ["tts.segment"] * segments)
    (llm,) = [s for s in children(root) if s.name == "llm.stream"]
    assert children(llm), "strands' own spans nest under the LLM stream"
    for segment in (s for s in children(root) if s.name == "tts.segment"):
        attributes = dict(segment.attributes or {})
        assert attributes["segment.status"] == "done"
        assert attributes["tts.first_byte_ms"] > 0 and attributes["tts.engine_ms"] > 0
        assert attributes["tts.queue_wait_ms"] >= 0
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
