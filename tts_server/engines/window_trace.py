"""The windows' trace (``--window-trace PATH``): each paced window, as the pace cut it and as
long as it took, and each wait of a listener that the pace's model of the listener met; one
JSON object a line, so that a benchmark can set the server's view beside what a player heard
(``bench.page``). Nothing is built or written unless the trace is on: a path was given, or
the server logs at debug level (then the records go to the log too).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

TRACE = logging.getLogger("tts_server.window_trace")


class JsonLines(logging.Formatter):
    """A trace record as one JSON object: ``event``, ``at`` (Unix seconds), then its fields."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", {})
        return json.dumps({"event": record.getMessage(), "at": record.created, **fields})


def trace_to(path: Path) -> logging.Handler:
    """Append the trace to ``path`` from now on (and only there)."""
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(JsonLines())
    TRACE.addHandler(handler)
    TRACE.setLevel(logging.DEBUG)
    TRACE.propagate = False
    return handler


def tracing() -> bool:
    """Whether the trace is on (so its records are worth building)."""
    return TRACE.isEnabledFor(logging.DEBUG)


def traced(event: str, listener: object, **fields: Any) -> None:
    """One record: ``event`` of ``listener`` (a connection's clock: its id tells listeners
    apart) with ``fields``; floats kept to the microsecond."""
    rounded = {k: round(v, 6) if isinstance(v, float) else v for k, v in fields.items()}
    TRACE.debug(event, extra={"fields": {"listener": id(listener), **rounded}})
