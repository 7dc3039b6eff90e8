"""The one reading of a turn's events that telemetry and metrics share."""

from __future__ import annotations

import pytest

from agent.core.observer import TurnObserver
from agent.events import ErrorEvent, Event, TextDelta, TurnEnd, TurnMetrics, TurnStart

METRICS = TurnMetrics(ttft_ms=300.0, ttfa_ms=650.5, total_ms=2000.0, segments=2, audio_ms=1500.0)


def observed(events: list[Event]) -> tuple[TurnObserver, list[str], list[TurnMetrics]]:
    codes: list[str] = []
    latencies: list[TurnMetrics] = []
    observer = TurnObserver(on_error=codes.append, on_metrics=latencies.append)
    for event in events:
        observer.saw(event)
    return observer, codes, latencies


@pytest.mark.parametrize(
    ("codes", "outcome"),
    [
        ((), "ok"),
        (("tts_unavailable",), "error"),
        (("superseded",), "superseded"),
        (("llm_failed", "superseded"), "superseded"),
    ],
)
def test_a_turn_that_ended_has_the_outcome_its_errors_say(
    codes: tuple[str, ...], outcome: str
) -> None:
    events: list[Event] = [TurnStart("t", "stream"), TextDelta("Hi.")]
    events += [ErrorEvent(code, "x") for code in codes] + [METRICS, TurnEnd()]
    observer, told, latencies = observed(events)
    assert observer.outcome == outcome
    assert observer.errors == told == list(codes)
    assert latencies == [METRICS]


def test_a_turn_cut_before_its_end_is_cancelled() -> None:
    observer, _, latencies = observed([TurnStart("t", "stream"), METRICS])
    assert observer.outcome == "cancelled" and latencies == [METRICS]
