"""A turn's tool calls, as strands runs them: ``tool.start`` and ``tool.end`` events, a span
each, and an optional filler phrase when a tool runs long.

strands reports a tool call to its agent's hooks (``BeforeToolCallEvent``,
``AfterToolCallEvent``), not in ``stream_async``'s events. The hooks a voiced agent gets
(``agent/core/factory.py``, ``watch_tools``) tell the ``ToolCalls`` of the turn whose LLM
stream runs them, ``running_calls()``: a context variable that the turn's producer sets
(strands runs the hooks in tasks it starts from that stream, which inherit its context). This
module imports no strands, so a turn runs where strands is not installed (the Python 3.12
SageMaker job). A tool that raises is reported to the model by strands as an error result,
and the turn goes on: here it is ``status`` ``error``.
A turn cut while a tool runs (barge-in, supersede, client gone) ends each running call as
``cancelled``: strands cancels the tool's task (an ``async`` tool gets ``CancelledError``; a
plain function, which strands runs in a worker thread, runs on to its end, and its result is
dropped). Docs: docs/events.md, "Tool calls".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

from opentelemetry.context import Context
from opentelemetry.trace import Span, Status, StatusCode

from agent.events import Event, ToolEnd, ToolStart
from observability.tracing import tracer

_running_turn: ContextVar[ToolCalls | None] = ContextVar("voice_agent_tool_calls", default=None)


@dataclass(frozen=True, slots=True)
class Filler:
    """Say ``phrase`` once a tool has run ``after_s`` (once per wait for tools)."""

    phrase: str
    after_s: float


def running_calls() -> ToolCalls | None:
    """The tool calls of the turn whose LLM stream runs here (None: outside a turn)."""
    return _running_turn.get()


@dataclass(slots=True)
class _Call:
    name: str
    started: float
    span: Span


class ToolCalls:
    """One turn's tool calls: each start and end becomes an event (``emit``) and a
    ``tool.call`` span under ``parent``; a ``filler`` is spoken (``speak``) if one runs long,
    once the page has played the turn's audio so far (``still_playing_s``)."""

    def __init__(
        self,
        emit: Callable[[Event], None],
        parent: Context,
        speak: Callable[[str], None],
        filler: Filler | None,
        still_playing_s: Callable[[], float],
    ) -> None:
        self._emit = emit
        self._parent = parent
        self._speak = speak
        self._filler = filler
        self._still_playing_s = still_playing_s  # of the turn's audio, at the page
        self._timer: asyncio.TimerHandle | None = None
        self._running: dict[str, _Call] = {}
        self.calls = 0  # started, a retry of a running call not counted again
        self._busy_ms = 0.0  # while at least one call ran, up to the last time none did
        self._busy_since = 0.0

    @property
    def busy_ms(self) -> float:
        """Milliseconds during which at least one of the turn's tools ran (so far)."""
        running = (time.perf_counter() - self._busy_since) * 1000 if self._running else 0.0
        return round(self._busy_ms + running, 1)

    def activate(self) -> None:
        """From now on, tool calls in this context (and the tasks it starts) are this turn's."""
        _running_turn.set(self)

    def started(self, name: str, call_id: str, args: str = "") -> None:
        """Tool ``name`` started as call ``call_id``, with ``args`` (its input as JSON)."""
        if call_id in self._running:  # a retry of the same call: it goes on
            return
        attributes = {"tool.name": name, "tool.id": call_id}
        span = tracer.start_span("tool.call", context=self._parent, attributes=attributes)
        now = time.perf_counter()
        if not self._running:
            self._busy_since = now
        self._running[call_id] = _Call(name, now, span)
        self.calls += 1
        self._emit(ToolStart(name, call_id, args))
        if self._filler is not None and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._filler.after_s, self._fill)

    def ended(self, call_id: str, status: str, result: str = "") -> None:
        """Call ``call_id`` ended with ``status`` and ``result`` (the text the model got)."""
        call = self._running.pop(call_id, None)
        if call is None:
            return
        now = time.perf_counter()
        duration_ms = round((now - call.started) * 1000, 1)
        if not self._running:
            self._busy_ms += (now - self._busy_since) * 1000
        call.span.set_attribute("tool.status", status)
        call.span.set_attribute("tool.duration_ms", duration_ms)
        if status == "error":
            call.span.set_status(Status(StatusCode.ERROR, "the tool failed"))
        call.span.end()
        self._emit(ToolEnd(call_id, call.name, status, duration_ms, result))
        if not self._running and self._timer is not None:
            self._timer.cancel()  # the next wait for tools may say it again
            self._timer = None

    def abandon(self) -> None:
        """The turn's LLM stream ended: a call still running was cancelled with it."""
        for call_id in list(self._running):
            self.ended(call_id, "cancelled")

    def _fill(self) -> None:
        """Say the filler, once the words before the tool have played out: said over them, it
        would only queue behind them and hold back the answer."""
        if not self._running or self._filler is None:
            return
        if (left := self._still_playing_s()) > 0:
            self._timer = asyncio.get_running_loop().call_later(left, self._fill)
            return
        self._speak(self._filler.phrase)
