"""Structured logs: one JSON object per line, carrying the ids of the work being logged.

``configure()`` sets up the root logger once per process, for ``tts-server``, ``voice-agent
dev`` and the AgentCore app. ``LOG_FORMAT`` picks ``json`` (the images set it) or ``text`` (the
default locally). Every record gets ``turn_id`` and ``session_id`` from context variables, bound
with ``bind()`` by the code that runs a turn or a connection (asyncio tasks inherit them), and
the current OpenTelemetry ``trace_id``/``span_id`` when a span is recording. Both formats carry
the time, in UTC to the millisecond. Prompt text and audio are never logged at INFO; that rule
is kept by the callers and tested. httpx's own line for every request our clients send (the
dev server's ``/ping`` polls of its TTS child, each already logged by the server it reaches)
is logged only from WARNING on.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Literal

from opentelemetry import trace
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

LogFormat = Literal["json", "text"]
FORMATS: tuple[LogFormat, ...] = ("json", "text")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(session_id)s %(turn_id)s] %(message)s"
JSON_FIELDS = ("levelname", "name", "message")
UNLOGGED = ("color_message",)  # uvicorn's copy of its message with terminal colours
# Client libraries that log every request at INFO: what they reach logs it (uvicorn's access log).
QUIET_LOGGERS = ("httpx", "httpcore")

_turn_id: ContextVar[str | None] = ContextVar("turn_id", default=None)
_session_id: ContextVar[str | None] = ContextVar("session_id", default=None)


def bind(*, turn_id: str | None = None, session_id: str | None = None) -> None:
    """Set the ids logged with every record from this context (and tasks it starts) on."""
    if turn_id is not None:
        _turn_id.set(turn_id)
    if session_id is not None:
        _session_id.set(session_id)


class ContextFilter(logging.Filter):
    """Adds ``turn_id``, ``session_id`` and the current trace's ids to each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in (("turn_id", _turn_id), ("session_id", _session_id)):
            if getattr(record, name, None) is None:
                setattr(record, name, var.get())
        span = trace.get_current_span().get_span_context()
        record.trace_id = f"{span.trace_id:032x}" if span.is_valid else None
        record.span_id = f"{span.span_id:016x}" if span.is_valid else None
        return True


def log_format(env: Mapping[str, str] | None = None) -> LogFormat:
    """``LOG_FORMAT`` (``json`` or ``text``), ``text`` when unset; anything else is an error."""
    value = ((os.environ if env is None else env).get("LOG_FORMAT") or "text").strip().lower()
    if value not in FORMATS:
        raise SystemExit(f"LOG_FORMAT={value!r} is not one of {', '.join(FORMATS)}")
    return value  # type: ignore[return-value]  # checked just above


class UtcFormatter(logging.Formatter):
    """The text line, with its time as ISO 8601 in UTC to the millisecond."""

    converter = time.gmtime
    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"


def formatter(fmt: LogFormat) -> logging.Formatter:
    """One JSON object per line, or the plain text line."""
    if fmt == "json":
        return JsonFormatter(
            JSON_FIELDS,
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp="time",  # ISO 8601, UTC
            reserved_attrs=[*RESERVED_ATTRS, *UNLOGGED],
            json_ensure_ascii=False,
        )
    return UtcFormatter(TEXT_FORMAT)


def configure(level: str | int = "INFO", fmt: LogFormat | None = None) -> logging.Handler:
    """Send every logger's records to stderr in ``fmt`` (default: ``LOG_FORMAT``)."""
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(fmt or log_format()))
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
    return handler
