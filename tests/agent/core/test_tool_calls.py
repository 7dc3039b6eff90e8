"""A turn's tool calls as events and figures (``agent/core/tool_calls.py``), on a hand-set clock.
The calls as strands makes them, through a real turn: ``test_tool_turns.py``."""

from __future__ import annotations

import asyncio
import contextvars
from types import SimpleNamespace

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agent.core import tool_calls
from agent.core.factory import _after_tool, _before_tool
from agent.core.tool_calls import Filler, ToolCalls
from agent.events import Event, ToolEnd, ToolStart


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(tool_calls.time, "perf_counter", clock)
    return clock


def at(clock: Clock, seconds: float) -> None:
    clock.now = 100.0 + seconds


def test_tool_time_counts_each_moment_at_least_one_tool_ran_once(clock: Clock) -> None:
    events: list[Event] = []
    calls = ToolCalls(events.append, Context(), lambda text: None, None, lambda: 0.0)
    calls.started("clock", "a")  # 0 s
    at(clock, 1.0)
    calls.started("calculate", "b")
    calls.started("calculate", "b")  # strands retried the running call: one call still
    at(clock, 2.0)
    calls.ended("a", "ok")
    assert calls.busy_ms == 2000.0  # b still runs
    at(clock, 3.0)
    calls.ended("b", "error")
    at(clock, 5.0)  # no tool between 3 s and 5 s
    calls.started("clock", "c")
    at(clock, 5.5)
    assert calls.busy_ms == 3500.0  # c's half second so far
    at(clock, 6.0)
    calls.ended("c", "ok")
    calls.ended("c", "ok")  # told twice: once counted
    at(clock, 9.0)
    assert (calls.calls, calls.busy_ms) == (3, 4000.0)
    assert events == [
        ToolStart("clock", "a"),
        ToolStart("calculate", "b"),
        ToolEnd("a", "clock", "ok", 2000.0),
        ToolEnd("b", "calculate", "error", 2000.0),
        ToolStart("clock", "c"),
        ToolEnd("c", "clock", "ok", 1000.0),
    ]


def test_a_call_still_running_when_the_turn_ends_is_cancelled_and_counted(clock: Clock) -> None:
    events: list[Event] = []
    calls = ToolCalls(events.append, Context(), lambda text: None, None, lambda: 0.0)
    calls.started("slow_lookup", "a")
    at(clock, 0.25)
    calls.abandon()
    assert events[-1] == ToolEnd("a", "slow_lookup", "cancelled", 250.0)
    assert (calls.calls, calls.busy_ms) == (1, 250.0)


async def test_the_filler_waits_for_the_words_before_the_tool_to_play_out() -> None:
    """Said over them, it would queue behind them and hold back the answer."""
    said = asyncio.Event()
    asked: list[float] = []
    left = [0.02, 0.0]  # seconds the page has still to play, when the filler is due

    def still_playing_s() -> float:
        asked.append(left[len(asked)])
        return asked[-1]

    calls = ToolCalls(
        lambda event: None,
        Context(),
        lambda text: said.set(),
        Filler("One moment.", after_s=0.01),
        still_playing_s,
    )
    calls.started("slow_lookup", "a")
    await asyncio.wait_for(said.wait(), 5)
    assert asked == [0.02, 0.0]  # due while the page played: put off until it stopped
    calls.ended("a", "ok")


async def test_a_tool_that_ends_before_the_words_play_out_gets_no_filler() -> None:
    checked = asyncio.Event()
    said: list[str] = []

    def still_playing_s() -> float:
        checked.set()
        return 0.05

    calls = ToolCalls(
        lambda event: None, Context(), said.append, Filler("One moment.", 0.01), still_playing_s
    )
    calls.started("slow_lookup", "a")
    await asyncio.wait_for(checked.wait(), 5)
    calls.ended("a", "ok")  # the put-off filler is called off with the wait
    await asyncio.sleep(0.1)  # past when it would have been said
    assert said == []


def test_a_tool_result_with_an_error_status_is_a_failed_call(clock: Clock) -> None:
    """strands reports a tool that raises with an exception, one that returns an error result
    with its status only: both are errors (the hooks as strands calls them, on stand-in events)."""
    events: list[Event] = []
    calls = ToolCalls(events.append, Context(), lambda text: None, None, lambda: 0.0)

    def turn() -> None:
        calls.activate()  # in a copied context: no other test sees this turn
        for call_id, exception, status in [
            ("a", None, "error"),
            ("b", ValueError(), "error"),
            ("c", None, "success"),
            ("d", ValueError(), "success"),
        ]:
            use = {"name": "lookup", "toolUseId": call_id}
            _before_tool(SimpleNamespace(tool_use=use))  # type: ignore[arg-type]
            ended = SimpleNamespace(tool_use=use, exception=exception, result={"status": status})
            _after_tool(ended)  # type: ignore[arg-type]

    contextvars.copy_context().run(turn)
    ended = [(e.id, e.status) for e in events if isinstance(e, ToolEnd)]
    assert ended == [("a", "error"), ("b", "error"), ("c", "ok"), ("d", "error")]
    assert tool_calls.running_calls() is None


def test_each_call_is_a_span_with_its_name_id_and_status(
    clock: Clock, spans: InMemorySpanExporter
) -> None:
    calls = ToolCalls(lambda event: None, Context(), lambda text: None, None, lambda: 0.0)
    calls.started("lookup", "a")
    calls.started("clock", "b")
    at(clock, 0.5)
    calls.ended("a", "error")
    calls.ended("b", "ok")
    failed, fine = spans.get_finished_spans()
    assert failed.attributes == {
        "tool.name": "lookup",
        "tool.id": "a",
        "tool.status": "error",
        "tool.duration_ms": 500.0,
    }
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.status.description == "the tool failed"
    assert fine.attributes["tool.id"] == "b" and fine.status.status_code == StatusCode.UNSET


async def test_the_next_wait_for_tools_gets_its_own_filler() -> None:
    """The first call's filler is called off when it ends; the second call, started after,
    has its filler after its own wait, not the first call's."""
    said: list[float] = []
    spoken = asyncio.Event()
    loop = asyncio.get_running_loop()

    def speak(text: str) -> None:
        said.append(loop.time())
        spoken.set()

    calls = ToolCalls(lambda event: None, Context(), speak, Filler("One moment.", 0.1), lambda: 0)
    calls.started("quick", "a")
    await asyncio.sleep(0.01)
    calls.ended("a", "ok")  # before its filler was due
    await asyncio.sleep(0.05)
    second = loop.time()
    calls.started("slow", "b")
    await asyncio.wait_for(spoken.wait(), 5)
    calls.ended("b", "ok")
    assert len(said) == 1 and said[0] - second >= 0.09  # b's own wait, not a's leftover timer
