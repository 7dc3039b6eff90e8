"""``TurnRunner`` and ``EarlyReply`` alone: scripted turns, no socket. A turn here is an async
generator of events; it ends with ``turn.end`` on its own, or when ``Gate`` lets it, as a
superseded turn does. An early reply recognizes with a recognizer that answers at once."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent.events import Event, TextDelta, Transcript, TurnEnd, TurnStart
from agent.leg.hooks import TurnEvents
from agent.leg.turns import EarlyReply, TurnRunner
from agent.listening.eager import EagerRecognition
from agent.listening.listener import Utterance
from agent.listening.recognizer import Recognition, RecognitionError
from agent.requests import BadRequest, PlaybackReport, TurnRequest

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


async def test_a_pulled_runner_pushes_nothing_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = Script()
    runner = TurnRunner(script.start, "c1")  # no sink: its turns are pulled
    with caplog.at_level(logging.INFO, logger="agent.ws"):
        await runner.start(TurnRequest("Hi"))
        await until(lambda: script.closed)
        assert await runner.stop() is None
    assert [r.getMessage() for r in caplog.records] == [
        "a turn's relay ended early: RuntimeError: a pulled runner has no sink for turn.start"
    ]


# --- EarlyReply: a reply begun on the eager transcript, held until the turn ends there -----


class Hears:
    """A recognizer that hears ``text`` at once, or fails."""

    queue_depth = 0

    def __init__(self, text: str, *, fail: bool = False) -> None:
        self.text, self.fail = text, fail

    async def load(self) -> None:
        pass

    async def recognize(self, pcm: bytes, murmurs: bool = False) -> Recognition:
        if self.fail:
            raise RecognitionError("the recognizer went away")
        return Recognition(self.text, 12.0)


class Early:
    """An ``EarlyReply`` over a runner of scripted turns that never end by themselves: the held
    turns it starts (each once ``gate`` opens, if set) and the ones it withdraws."""

    PCM = b"\x00\x00" * 1600  # 100 ms at 16 kHz

    def __init__(
        self,
        text: str = "Tell me more",
        *,
        fail: bool = False,
        start_error: Exception | None = None,
    ) -> None:
        self.script = Script(asyncio.Event())
        self.runner = TurnRunner(self.script.start, "c1", self.script.sink)
        self.eager = EagerRecognition(Hears(text, fail=fail))
        self.reply = EarlyReply(self.runner, self.eager, self._start_held, self._withdraw)
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()  # start_held was called
        self.start_error = start_error
        self.withdrawn: list[tuple[str, str, PlaybackReport | None]] = []

    def begin(self, ticket: int = 1) -> None:
        """The turn model lets pause ``ticket`` wait: recognize it early, begin its reply."""
        self.eager.start(ticket, self.PCM)
        self.reply.begin(ticket)

    async def _start_held(self, text: str) -> None:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.start_error is not None:
            raise self.start_error
        await self.runner.start(TurnRequest(text), held=True)

    async def _withdraw(self, turn_id: str, conversation: str, heard: PlaybackReport | None) -> str:
        self.withdrawn.append((turn_id, conversation, heard))
        return "Tell me more"


async def test_a_reply_begun_at_a_pause_is_held_and_confirmed_with_its_transcript() -> None:
    early = Early()
    early.begin(ticket=1)
    await until(lambda: early.runner.holding)
    said = await early.reply.confirm(Utterance(Early.PCM + Early.PCM, ticket=1))
    assert said == Transcript("Tell me more", 200.0, 12.0)
    assert early.script.started == [("Tell me more", "c1")] and early.script.sent == []
    assert await early.eager.early(1) is None  # used here: the utterance is not recognized again
    assert early.withdrawn == []


@pytest.mark.parametrize(("text", "fail"), [("", False), ("Tell me more", True)])
async def test_nothing_heard_or_a_failed_recognition_begins_no_reply(text: str, fail: bool) -> None:
    early = Early(text, fail=fail)
    early.begin(ticket=1)
    assert await early.reply.confirm(Utterance(Early.PCM, ticket=1)) is None
    assert not early.entered.is_set() and early.script.started == []


async def test_a_drop_while_the_reply_starts_waits_for_it_then_withdraws_it_unheard() -> None:
    early = Early()
    early.gate = asyncio.Event()
    early.begin(ticket=1)
    await asyncio.wait_for(early.entered.wait(), WAIT_S)
    dropping = asyncio.create_task(early.reply.drop())  # the user acts while the turn starts
    await asyncio.sleep(0.01)
    assert not dropping.done()
    early.gate.set()
    await asyncio.wait_for(dropping, WAIT_S)
    assert early.script.started == [("Tell me more", "c1")]  # started, not cut halfway
    assert early.withdrawn == [("turn-1", "c1", PlaybackReport("turn-1", 0, 0))]
    assert early.script.closed == ["turn-1"] and early.script.sent == []
    assert not early.runner.holding and not early.runner.running


async def test_a_reply_that_fails_to_start_is_logged_and_a_refused_one_is_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="agent.ws"):
        for error in (BadRequest("unknown_voice", "no such voice"), RuntimeError("boom")):
            early = Early(start_error=error)
            early.begin(ticket=1)
            assert await early.reply.confirm(Utterance(Early.PCM, ticket=1)) is None
    assert [(r.getMessage(), r.exc_info[0] if r.exc_info else None) for r in caplog.records] == [
        ("a reply started early failed to start", RuntimeError)
    ]


async def test_dropping_a_guess_that_started_no_turn_withdraws_nothing() -> None:
    early = Early(start_error=BadRequest("unknown_voice", "no such voice"))
    early.begin(ticket=1)
    await asyncio.wait_for(early.entered.wait(), WAIT_S)
    await early.reply.drop()
    assert early.withdrawn == [] and early.script.started == []
