"""Structured logs: the two formats, the ids from context, the trace ids, LOG_FORMAT."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider

from observability.logs import ContextFilter, bind, configure, formatter, log_format


def line(fmt: str, message: str = "hello %s", *args: object) -> str:
    record = logging.LogRecord("agent.turn", logging.INFO, __file__, 1, message, args, None)
    ContextFilter().filter(record)
    return formatter(fmt).format(record)  # type: ignore[arg-type]


def test_a_json_line_is_one_object_with_the_ids_of_its_context() -> None:
    def in_a_turn() -> dict[str, object]:
        bind(turn_id="t1", session_id="s1")
        return json.loads(line("json", "hello %s", "wörld"))

    record = contextvars.Context().run(in_a_turn)
    assert record["message"] == "hello wörld" and record["level"] == "INFO"
    assert record["logger"] == "agent.turn" and record["time"]
    assert (record["turn_id"], record["session_id"]) == ("t1", "s1")
    assert record["trace_id"] is None  # no span is recording
    assert json.loads(line("json"))["turn_id"] is None  # outside the turn: no ids


async def test_tasks_inherit_the_ids_and_do_not_leak_them_back() -> None:
    async def turn() -> str:
        bind(turn_id="t2", session_id="s2")
        return await asyncio.create_task(asyncio.to_thread(line, "text"))

    assert await asyncio.create_task(turn()) == "INFO agent.turn [s2 t2] hello %s"
    assert line("text") == "INFO agent.turn [None None] hello %s"


def test_the_current_span_is_on_the_line() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("turn") as span:
        record = json.loads(line("json"))
    assert record["trace_id"] == f"{span.get_span_context().trace_id:032x}"
    assert record["span_id"] == f"{span.get_span_context().span_id:016x}"


def test_log_format_is_text_unless_asked_and_refuses_the_unknown() -> None:
    assert log_format({}) == "text"
    assert log_format({"LOG_FORMAT": " JSON "}) == "json"
    with pytest.raises(SystemExit, match="LOG_FORMAT='yaml'"):
        log_format({"LOG_FORMAT": "yaml"})


def test_configure_replaces_the_root_handlers() -> None:
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    try:
        handler = configure("debug", "json")
        assert root.handlers == [handler] and root.level == logging.DEBUG
    finally:
        root.handlers[:] = before
        root.setLevel(level)
