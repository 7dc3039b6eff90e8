"""The translation of a turn's events into AG-UI events, with no server: each output is parsed by
ag-ui-protocol's models (through its JSON) and the run's order is checked."""

from __future__ import annotations

import base64
import json

from ag_ui.core import BaseEvent, RunErrorEvent, RunFinishedEvent

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
from agent.leg.agui import AguiTranslator, agui_json, encode_agui, refused
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
    assert translator.cancel() == []  # once


def test_a_refused_run_starts_and_errs_with_its_code() -> None:
    events = [parse(agui_json(e)) for e in refused("th", "ru", "unknown_voice", "no such voice")]
    check_run(events)
    assert events[-1].model_dump()["code"] == "unknown_voice"
