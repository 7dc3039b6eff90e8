"""What a turn's events say about it, read once for telemetry (``agent.telemetry``) and for
metrics (``agent.metrics``): the errors it reported, its latencies, how it ended."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from agent.events import ErrorEvent, Event, TurnEnd, TurnMetrics

Outcome = Literal["ok", "error", "superseded", "cancelled"]


def _ignore(_: object) -> None:
    pass


class TurnObserver:
    """Fed each event a turn yields (``saw``), in order; tells each error's code to
    ``on_error`` and the turn's latencies to ``on_metrics`` as they come."""

    def __init__(
        self,
        on_error: Callable[[str], None] = _ignore,
        on_metrics: Callable[[TurnMetrics], None] = _ignore,
    ) -> None:
        self.errors: list[str] = []  # the codes of its error events, in order
        self.ended = False  # its events ended with turn.end
        self._on_error = on_error
        self._on_metrics = on_metrics

    def saw(self, event: Event) -> None:
        """Note ``event``."""
        match event:
            case ErrorEvent(code=code):
                self.errors.append(code)
                self._on_error(code)
            case TurnMetrics():
                self._on_metrics(event)
            case TurnEnd():
                self.ended = True

    @property
    def outcome(self) -> Outcome:
        """``cancelled`` until ``turn.end`` (the client left, barge-in); then ``superseded``,
        else ``error`` after any error, else ``ok``."""
        if not self.ended:
            return "cancelled"
        if "superseded" in self.errors:
            return "superseded"
        return "error" if self.errors else "ok"
