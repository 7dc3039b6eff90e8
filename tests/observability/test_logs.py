"""Structured logs: the two formats, the ids from context, the trace ids, LOG_FORMAT."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import re

import pytest
from opentelemetry.sdk.trace import TracerProvider

from observability.logs import ContextFilter, bind, configure, formatter, log_format

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")  # a text line's start, UTC


def line(fmt: str, message: str = "hello %s", *args: object, created: float | None = None) -> str:
    record = logging.LogRecord("agent.turn", logging.INFO, __file__, 1, message, args, None)
    if created is not None:  # the record's time, as LogRecord would have taken it
        record.created, record.msecs = created, round(created % 1 * 1000)
    ContextFilter().filter(record)
    return formatter(fmt).format(record)  # type: ignore[arg-type]


def untimed(text: str) -> str:
    """A text line without its leading time, which must be there."""
    assert TIME.match(text), text
    return TIME.sub("", text, count=1)


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

    assert untimed(await asyncio.create_task(turn())) == "INFO agent.turn [s2 t2] hello %s"
    assert untimed(line("text")) == "INFO agent.turn [None None] hello %s"


def test_a_text_line_starts_with_its_time_in_utc_to_the_millisecond() -> None:
    # 2024-03-09T16:00:00.250 UTC, whatever the machine's time zone
    assert line("text", created=1710000000.25).startswith("2024-03-09T16:00:00.250Z INFO ")


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
    root, httpx = logging.getLogger(), logging.getLogger("httpx")
    before, level, httpx_level = list(root.handlers), root.level, httpx.level
    try:
        handler = configure("debug", "json")
        assert root.handlers == [handler] and root.level == logging.DEBUG
        assert not logging.getLogger("httpx").isEnabledFor(logging.INFO)  # the server logs it
    finally:
        root.handlers[:] = before
        root.setLevel(level)
        httpx.setLevel(httpx_level)
