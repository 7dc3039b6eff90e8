"""``TurnRunner`` alone: scripted turns, no socket. A turn here is an async generator of events;
it ends with ``turn.end`` on its own, or when ``Gate`` lets it, as a superseded turn does."""

from __future__ import annotations

import asyncio

import pytest

from agent.events import Event, TextDelta, TurnEnd, TurnStart
from agent.leg.hooks import TurnEvents
from agent.leg.turns import TurnRunner
from agent.requests import BadRequest, TurnRequest

WAIT_S = 5.0


class Script:
    """Starts scripted turns: ``turn-<n>`` says its prompt, then waits for ``gate`` (if set)."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate
        self.started: list[tuple[str, str]] = []
        self.closed: list[str] = []
        self.sent: list[Event] = []

    async def start(self, request: TurnRequest, conversation: str) -> TurnEvents:
        if request.prompt == "refuse":
            raise BadRequest("unknown_voice", "no such voice")
        self.started.append((request.prompt, conversation))
        return self._events(f"turn-{len(self.started)}", request.prompt)

    async def _events(self, turn_id: str, text: str) -> TurnEvents:
        try:
            yield TurnStart(turn_id, "stream")
            yield TextDelta(text)
            if self.gate is not None:
                await self.gate.wait()
            yield TurnEnd()
        finally:
            self.closed.append(turn_id)

    async def sink(self, event: Event) -> None:
        self.sent.append(event)


async def until(condition: object) -> None:
    async with asyncio.timeout(WAIT_S):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.001)


async def test_a_pulled_turn_streams_its_events_in_its_conversation() -> None:
    script = Script()
    events = await TurnRunner(script.start, "c1").stream(TurnRequest("Hi"))
    assert [e.type async for e in events] == ["turn.start", "text.delta", "turn.end"]
    assert script.started == [("Hi", "c1")]


async def test_a_refused_turn_raises_before_anything_streams() -> None:
    script = Script()
    runner = TurnRunner(script.start, "c1", script.sink)
    with pytest.raises(BadRequest):
        await runner.stream(TurnRequest("refuse"))
    with pytest.raises(BadRequest):
        await runner.start(TurnRequest("refuse"))
    assert not runner.running and script.sent == []


async def test_a_new_turn_starts_after_the_running_one_ends() -> None:
    gate = asyncio.Event()
    script = Script(gate)
    ended: list[int] = []
    runner = TurnRunner(script.start, "c1", script.sink, on_end=lambda: ended.append(1))
    await runner.start(TurnRequest("one"))
    await until(lambda: len(script.sent) == 2)
    assert runner.running and runner.turn_id == "turn-1"
    second = asyncio.create_task(runner.start(TurnRequest("two")))
    await asyncio.sleep(0.01)
    assert not second.done()  # the first turn's events are not over
    gate.set()  # as a superseded turn ends
    await second
    await until(lambda: len(script.sent) == 6 and len(ended) == 2)
    assert [type(e).__name__ for e in script.sent] == ["TurnStart", "TextDelta", "TurnEnd"] * 2
    assert runner.turn_id is None and ended == [1, 1]


async def test_a_held_turn_sends_nothing_until_released_and_is_not_running() -> None:
    gate = asyncio.Event()
    script = Script(gate)
    runner = TurnRunner(script.start, "c1", script.sink)
    await runner.start(TurnRequest("Hi"), held=True)
    await asyncio.sleep(0.01)
    assert runner.holding and not runner.running and script.sent == []
    await runner.release()
    assert [e.type for e in script.sent] == ["turn.start", "text.delta"]
    assert runner.running and runner.turn_id == "turn-1"
    gate.set()
    await until(lambda: not runner.running)
    assert script.sent[-1] == TurnEnd() and runner.turn_id is None


async def test_stopping_a_held_turn_returns_its_unsent_events_and_closes_it() -> None:
    script = Script(asyncio.Event())
    stops: list[int] = []
    runner = TurnRunner(script.start, "c1", script.sink, on_stop=lambda: stops.append(1))
    await runner.start(TurnRequest("Hi"), held=True)
    await until(lambda: script.started)
    await asyncio.sleep(0.01)
    held = await runner.stop_held()
    assert held is not None and [e.type for e in held] == ["turn.start", "text.delta"]
    assert script.sent == [] and script.closed == ["turn-1"] and stops == [1]
    assert await runner.stop_held() is None  # none held now: nothing stopped
    assert stops == [1]


async def test_stop_names_the_turn_on_the_air_and_nothing_once_it_ended() -> None:
    script = Script(asyncio.Event())
    runner = TurnRunner(script.start, "c1", script.sink)
    assert await runner.stop() is None  # none running
    await runner.start(TurnRequest("Hi"))
    await until(lambda: len(script.sent) == 2)
    assert await runner.stop() == "turn-1"
    assert script.closed == ["turn-1"] and not runner.running
    finished = Script()
    runner = TurnRunner(finished.start, "c1", finished.sink)
    await runner.start(TurnRequest("Hi"))
    await until(lambda: not runner.running)
    assert await runner.stop() is None  # its `turn.end` went out
