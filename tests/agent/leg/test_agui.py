"""The translation of a turn's events into AG-UI events, with no server: each output is parsed by
ag-ui-protocol's models (through its JSON) and the run's order is checked."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from ag_ui.core import BaseEvent, RunErrorEvent, RunFinishedEvent
from ag_ui.core.version import PROTOCOL_VERSION

from agent.events import (
    AudioDelta,
    ErrorEvent,
    Event,
    Segment,
    SegmentEnd,
    SegmentMarks,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
    TurnMetrics,
    TurnStart,
)
from agent.leg.agui import AguiTranslator, agui_events, agui_json, encode_agui, refused
from agent.leg.agui_input import AguiRun
from agent.requests import TurnRequest
from tests.agent.agui_client import check_run, customs, kinds, parse
from tts_protocol import Word

RUN = AguiRun("thread", "run", TurnRequest("hi"))
METRICS = TurnMetrics(10.0, 20.0, 30.0, 1, 500.0)


def translated(events: list[Event], translator: AguiTranslator | None = None) -> list[BaseEvent]:
    """Every AG-UI event out, each through its wire form and back (both encodings)."""
    translator = translator or AguiTranslator(RUN)
    out = [e for event in events for e in translator.translate(event)]
    for event in out:
        assert encode_agui(event) == f"data: {agui_json(event)}\n\n".encode()
    return [parse(agui_json(event)) for event in out]


def test_a_turn_is_one_run_with_its_speech_as_custom_events() -> None:
    words = (Word("Hello", 0.0, 300.0), Word("there", 300.0, 600.0, spoken="there"))
    events = translated(
        [
            TurnStart("turn-1", "stream"),
            TextDelta("Hello"),
            Segment(0, "Hello there."),
            SegmentMarks(0, words[:1]),
            SegmentMarks(0, words[1:]),
            AudioDelta(0, b"\x01\x00" * 10),
            TextDelta(" there."),
            AudioDelta(0, b"\x02\x00" * 10),
            SegmentEnd(0, 500.0),
            METRICS,
            TurnEnd(),
        ]
    )
    check_run(events)
    assert kinds(events) == [
        "RUN_STARTED", "voice.start", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
        "voice.sentence", "voice.audio", "TEXT_MESSAGE_CONTENT", "voice.audio",
        "voice.sentence.end", "voice.metrics", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    first, second = customs(events, "voice.audio")
    assert base64.b64decode(first["audio"]) == b"\x01\x00" * 10
    assert first["words"] == [  # both windows' timings, on the first audio after them
        {"text": "Hello", "startMs": 0.0, "endMs": 300.0},
        {"text": "there", "startMs": 300.0, "endMs": 600.0, "spoken": "there"},
    ]
    assert "words" not in second and second["sampleRate"] == 24000
    assert customs(events, "voice.start")[0]["turnId"] == "turn-1"
    assert customs(events, "voice.metrics")[0]["ttfaMs"] == 20.0


def test_a_tool_call_closes_the_text_and_is_told_with_its_args_then_its_result() -> None:
    events = translated(
        [
            TurnStart("t", "stream"),
            TextDelta("Let me look"),
            ToolStart("time_in", "call-1", '{"city": "Tokyo"}'),
            ToolEnd("call-1", "time_in", "ok", 12.5, "It is noon in Tokyo."),
            TextDelta("It is noon."),
            ToolStart("broken", "call-2"),
            ToolEnd("call-2", "broken", "error", 1.0),
            TurnEnd(),
        ]
    )
    check_run(events)
    assert kinds(events)[2:9] == [
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START",
        "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
    ]  # fmt: skip
    dumped = [e.model_dump(by_alias=True, exclude_none=True) for e in events]
    start, args, result = dumped[5], dumped[6], dumped[8]
    assert start["parentMessageId"] == dumped[2]["messageId"]
    assert json.loads(args["delta"]) == {"city": "Tokyo"}
    assert result["content"] == "It is noon in Tokyo." and result["role"] == "tool"
    assert result["metadata"] == {"status": "ok", "durationMs": 12.5}
    failed = dumped[kinds(events).index("TOOL_CALL_RESULT", 9)]
    assert failed["content"] == "the tool call was error"  # no args: no TOOL_CALL_ARGS
    assert kinds(events).count("TOOL_CALL_ARGS") == 1


def test_a_superseded_turn_finishes_cancelled_and_a_failed_llm_errs_the_run() -> None:
    superseded = translated([
        TurnStart("t", "stream"), ErrorEvent("superseded", "a newer turn started"), TurnEnd()
    ])  # fmt: skip
    end = check_run(superseded)[-1]
    assert isinstance(end, RunFinishedEvent) and end.outcome is not None
    assert end.outcome.type == "cancelled"
    failed = translated(
        [
            TurnStart("t", "stream"),
            TextDelta("Partly"),
            ErrorEvent("llm_failed", "RuntimeError: gone"),
            ErrorEvent("tts_busy", "retrying"),
            TurnEnd(),
        ]
    )
    check_run(failed)
    assert customs(failed, "voice.error")[1]["code"] == "tts_busy"  # the run went on after it
    assert isinstance(error := failed[-1], RunErrorEvent) and error.code == "llm_failed"


def test_a_run_cancelled_by_its_client_ends_once_and_only_if_it_started() -> None:
    translator = AguiTranslator(RUN)
    assert translator.cancel() == []  # nothing went out: nothing to end
    events = translated([TurnStart("t", "stream"), TextDelta("Half")], translator)
    ending = [parse(agui_json(e)) for e in translator.cancel()]
    check_run(events + ending)
    assert kinds(ending) == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert isinstance(end := ending[-1], RunFinishedEvent) and end.outcome is not None
    assert end.outcome.type == "cancelled"
    assert translator.cancel() == []  # once


def test_a_refused_run_starts_and_errs_with_its_code() -> None:
    events = [parse(agui_json(e)) for e in refused("th", "ru", "unknown_voice", "no such voice")]
    check_run(events)
    assert events[-1].model_dump()["code"] == "unknown_voice"
    assert wire(events[0])["protocolVersion"] == PROTOCOL_VERSION


def wire(event: BaseEvent) -> dict[str, Any]:
    """What a client reads of ``event``: its JSON."""
    body: dict[str, Any] = json.loads(agui_json(event))
    return body


def test_each_event_carries_the_fields_docs_agui_names() -> None:
    """Every field a client reads (docs/agui.md), by name and value, and no other."""
    run = AguiRun("thread-1", "run-1", TurnRequest("hi"))
    events = translated(
        [
            TurnStart("turn-1", "stream"),
            TextDelta("Hi."),
            Segment(2, "Hi."),
            AudioDelta(2, b"\x01\x00\x02\x00"),
            SegmentEnd(2, 250.0),
            TurnMetrics(10.0, 20.0, 30.0, 1, 250.0, 2, 40.0),
            TurnEnd(),
        ],
        AguiTranslator(run),
    )
    audio = {"format": "pcm_s16le", "sampleRate": 24000, "channels": 1}
    message = wire(events[2])["messageId"]
    assert [wire(event) for event in events] == [
        {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "run-1",
         "protocolVersion": PROTOCOL_VERSION},
        {"type": "CUSTOM", "name": "voice.start", "value": {"turnId": "turn-1", **audio}},
        {"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": "Hi."},
        {"type": "CUSTOM", "name": "voice.sentence", "value": {"segmentId": 2, "text": "Hi."}},
        {"type": "CUSTOM", "name": "voice.audio",
         "value": {"segmentId": 2, "audio": base64.b64encode(b"\x01\x00\x02\x00").decode(),
                   **audio}},
        {"type": "CUSTOM", "name": "voice.sentence.end",
         "value": {"segmentId": 2, "audioMs": 250.0}},
        {"type": "CUSTOM", "name": "voice.metrics",
         "value": {"ttftMs": 10.0, "ttfaMs": 20.0, "totalMs": 30.0, "segments": 1,
                   "audioMs": 250.0, "toolCalls": 2, "toolMs": 40.0}},
        {"type": "TEXT_MESSAGE_END", "messageId": message},
        {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "run-1"},  # no outcome
    ]  # fmt: skip


def test_a_problem_the_run_goes_on_after_finishes_it_as_usual() -> None:
    events = translated([TurnStart("t", "stream"), ErrorEvent("tts_busy", "retrying"), TurnEnd()])
    check_run(events)
    assert customs(events, "voice.error") == [{"code": "tts_busy", "message": "retrying"}]
    assert isinstance(end := events[-1], RunFinishedEvent) and end.outcome is None


def test_a_tool_called_before_any_text_has_no_parent_message() -> None:
    events = translated([TurnStart("t", "stream"), ToolStart("time_in", "call-1"), TurnEnd()])
    check_run(events)
    assert wire(events[2]) == {
        "type": "TOOL_CALL_START", "toolCallId": "call-1", "toolCallName": "time_in"
    }  # fmt: skip


async def turn(events: list[Event], failure: Exception | None = None) -> AsyncIterator[Event]:
    """A turn's event stream: ``events``, then ``failure`` raised if any."""
    for event in events:
        yield event
    if failure is not None:
        raise failure


async def test_a_runs_events_are_its_turns_translated_and_closing_them_closes_the_turn() -> None:
    turn_events = turn([TurnStart("t", "stream"), TextDelta("Hi"), TurnEnd()])
    run = agui_events(turn_events, AguiTranslator(RUN))
    assert [event.type.value async for event in run] == [
        "RUN_STARTED", "CUSTOM", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    halted = turn([TurnStart("t", "stream"), TextDelta("Hi"), TurnEnd()])
    stopped = agui_events(halted, AguiTranslator(RUN))
    assert (await anext(stopped)).type.value == "RUN_STARTED"
    await stopped.aclose()  # the client went away: the turn is stopped too
    with pytest.raises(StopAsyncIteration):
        await anext(halted)


async def test_a_turn_stream_that_fails_ends_its_run_with_one_error_and_a_logged_trace(
    caplog: pytest.LogCaptureFixture,
) -> None:
    translator = AguiTranslator(RUN)
    failing = turn([TurnStart("t", "stream"), TextDelta("Half")], RuntimeError("loop gone"))
    with caplog.at_level(logging.ERROR, "agent.agui"):
        events = [event async for event in agui_events(failing, translator)]
    check_run(events)
    assert isinstance(error := events[-1], RunErrorEvent)
    assert (error.code, error.message) == ("internal_error", "the run failed: RuntimeError")
    assert kinds(events)[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]  # the text closed first
    assert translator.cancel() == []  # ended once: a cancel after it adds nothing
    [record] = caplog.records
    assert "AG-UI run failed" in record.getMessage() and record.exc_info is not None


async def test_a_turn_stream_that_fails_before_or_after_its_run_still_makes_one_run() -> None:
    early = turn([], RuntimeError("no turn"))
    events = [event async for event in agui_events(early, AguiTranslator(RUN))]
    assert kinds(check_run(events)) == ["RUN_STARTED", "RUN_ERROR"]
    late = turn([TurnStart("t", "stream"), TurnEnd()], RuntimeError("after the end"))
    events = [event async for event in agui_events(late, AguiTranslator(RUN))]
    assert kinds(check_run(events))[-1] == "RUN_FINISHED"  # nothing after the run's end
