"""The events: audio chunking, base64, durations, and their one JSON form."""

from __future__ import annotations

import base64
import json
import math

import pytest

from agent.events import (
    AUDIO_EVENT_BYTES,
    AUDIO_EVENT_MS,
    ConfigApplied,
    ErrorEvent,
    Refused,
    Segment,
    SegmentEnd,
    SegmentMarks,
    SocketReady,
    SpeechEnd,
    SpeechStart,
    TextDelta,
    ToolEnd,
    ToolStart,
    Transcript,
    TurnCancelled,
    TurnEnd,
    TurnMetrics,
    TurnStart,
    audio_deltas,
)
from tts_protocol import BYTES_PER_SAMPLE, SAMPLE_RATE, Word


def test_an_audio_event_holds_at_most_100_ms() -> None:
    assert AUDIO_EVENT_MS == 100
    assert AUDIO_EVENT_BYTES == SAMPLE_RATE // 10 * BYTES_PER_SAMPLE == 4800


@pytest.mark.parametrize("size", [2, 4800, 4802, 24_000 * 2 + 6])
def test_audio_deltas_split_pcm_and_round_trip_through_base64(size: int) -> None:
    pcm = bytes(i % 251 for i in range(size))
    deltas = [json.loads(d.to_json()) for d in audio_deltas(7, pcm)]
    assert len(deltas) == math.ceil(size / AUDIO_EVENT_BYTES)
    chunks = [base64.b64decode(d["audio"], validate=True) for d in deltas]
    assert b"".join(chunks) == pcm
    assert all(len(c) <= AUDIO_EVENT_BYTES and len(c) % BYTES_PER_SAMPLE == 0 for c in chunks)
    assert all(len(c) == AUDIO_EVENT_BYTES for c in chunks[:-1])
    assert {(d["type"], d["seq"], d["sample_rate"]) for d in deltas} == {
        ("audio.delta", 7, SAMPLE_RATE)
    }


def test_no_audio_no_events() -> None:
    assert audio_deltas(0, b"") == []


@pytest.mark.parametrize(("samples", "audio_ms"), [(0, 0.0), (36, 1.5), (24_000, 1000.0)])
def test_segment_end_reports_the_audio_duration(samples: int, audio_ms: float) -> None:
    assert SegmentEnd.after(3, samples).to_dict() == {
        "type": "segment.end",
        "seq": 3,
        "audio_ms": audio_ms,
    }


def test_every_event_is_typed() -> None:
    built = [
        TurnStart("ab", "stream"),
        TextDelta("Hi"),
        Segment(0, "Hi."),
        SegmentMarks(0, (Word("Hi", 0.0, 120.5),)),
        *audio_deltas(0, b"\0\0"),
        SegmentEnd.after(0, 1),
        ErrorEvent("llm_failed", "boom"),
        TurnMetrics(ttft_ms=1.0, ttfa_ms=None, total_ms=3.0, segments=1, audio_ms=0.0),
        TurnEnd(),
    ]
    assert [json.loads(e.to_json())["type"] for e in built] == [
        "turn.start",
        "text.delta",
        "segment",
        "segment.marks",
        "audio.delta",
        "segment.end",
        "error",
        "metrics",
        "turn.end",
    ]


def test_the_json_of_each_event_is_the_contracts() -> None:
    """docs/events.md, field for field and in order."""
    assert [e.to_json() for e in (TurnStart("ab", "batch"), Segment(2, "Hi."), TurnEnd())] == [
        '{"type":"turn.start","turn_id":"ab","mode":"batch"}',
        '{"type":"segment","seq":2,"text":"Hi."}',
        '{"type":"turn.end"}',
    ]
    marks = SegmentMarks(1, (Word("Hi", 0.0, 120.5), Word("there", 130.0, 400.0)))
    assert marks.to_json() == (
        '{"type":"segment.marks","seq":1,"words":[{"text":"Hi","start_ms":0.0,"end_ms":120.5},'
        '{"text":"there","start_ms":130.0,"end_ms":400.0}]}'
    )
    normalized = SegmentMarks(1, (Word("$5", 0.0, 90.0, "five dollars"),))
    assert normalized.to_json() == (
        '{"type":"segment.marks","seq":1,"words":'
        '[{"text":"$5","start_ms":0.0,"end_ms":90.0,"spoken":"five dollars"}]}'
    )
    (audio,) = audio_deltas(4, b"\x01\x02")
    assert audio.pcm == b"\x01\x02"  # raw, for the WebSocket's binary frame
    assert audio.to_json() == '{"type":"audio.delta","seq":4,"audio":"AQI=","sample_rate":24000}'
    metrics = TurnMetrics(ttft_ms=310.2, ttfa_ms=None, total_ms=900.0, segments=2, audio_ms=0.0)
    assert metrics.to_json() == (
        '{"type":"metrics","ttft_ms":310.2,"ttfa_ms":null,"total_ms":900.0,"segments":2,'
        '"audio_ms":0.0,"tool_calls":0,"tool_ms":0.0}'
    )
    assert ErrorEvent("llm_failed", "boom").to_json() == (
        '{"type":"error","code":"llm_failed","message":"boom"}'
    )
    assert ToolStart("time_in", "t1").to_json() == (
        '{"type":"tool.start","name":"time_in","id":"t1"}'
    )
    assert ToolEnd("t1", "time_in", "ok", 2.5).to_json() == (
        '{"type":"tool.end","id":"t1","name":"time_in","status":"ok","duration_ms":2.5}'
    )


def test_one_json_form_for_both_legs() -> None:
    """Compact and ASCII-escaped: the WebSocket counts its length as bytes."""
    text = TextDelta("Grüße").to_json()
    assert text == '{"type":"text.delta","text":"Gr\\u00fc\\u00dfe"}' and text.isascii()


def test_the_websocket_replies() -> None:
    assert SocketReady("c1").to_json() == (
        '{"type":"ready","conversation":"c1","sample_rate":24000,"audio_header_bytes":4,'
        '"max_message_bytes":32768}'
    )
    assert ConfigApplied({"voice": "jm_kumo", "speed": 1}).to_json() == (
        '{"type":"config","voice":"jm_kumo","speed":1}'
    )
    assert Refused("invalid_json", "no", None).to_json() == (
        '{"type":"error","code":"invalid_json","message":"no","in_reply_to":null}'
    )
    assert isinstance(Refused("unknown_type", "no", None), ErrorEvent)


def test_cancelled_names_the_turn_or_none() -> None:
    assert TurnCancelled("ab").to_dict() == {"type": "cancelled", "turn_id": "ab"}
    assert TurnCancelled(None).to_dict() == {"type": "cancelled", "turn_id": None}


def test_listening_events_have_one_json_form() -> None:
    assert json.loads(SpeechStart(320.0).to_json()) == {"type": "speech.start", "at_ms": 320.0}
    assert json.loads(SpeechEnd(2784.0, 2688.0, "silence").to_json()) == {
        "type": "speech.end",
        "at_ms": 2784.0,
        "audio_ms": 2688.0,
        "reason": "silence",
        "wait_ms": None,
        "turn": None,
        "turn_score": None,
        "turn_ms": None,
    }
    decided = SpeechEnd(2784.0, 2688.0, "silence", 224.0, "complete", 0.91, 31.5)
    assert json.loads(decided.to_json()) == {
        "type": "speech.end",
        "at_ms": 2784.0,
        "audio_ms": 2688.0,
        "reason": "silence",
        "wait_ms": 224.0,
        "turn": "complete",
        "turn_score": 0.91,
        "turn_ms": 31.5,
    }
    assert json.loads(Transcript("Hi there.", 900.0, 310.5).to_json()) == {
        "type": "transcript",
        "text": "Hi there.",
        "audio_ms": 900.0,
        "asr_ms": 310.5,
        "final": True,
        "backchannel": False,
    }
