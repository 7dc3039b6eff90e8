"""The event builders: audio chunking, base64, durations."""

from __future__ import annotations

import base64
import math

import pytest

from agent import events
from agent.events import AUDIO_EVENT_BYTES, AUDIO_EVENT_MS, audio_deltas, segment_end
from tts_protocol import BYTES_PER_SAMPLE, SAMPLE_RATE


def test_an_audio_event_holds_at_most_100_ms() -> None:
    assert AUDIO_EVENT_MS == 100
    assert AUDIO_EVENT_BYTES == SAMPLE_RATE // 10 * BYTES_PER_SAMPLE == 4800


@pytest.mark.parametrize("size", [2, 4800, 4802, 24_000 * 2 + 6])
def test_audio_deltas_split_pcm_and_round_trip_through_base64(size: int) -> None:
    pcm = bytes(i % 251 for i in range(size))
    deltas = audio_deltas(7, pcm)
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
    assert segment_end(3, samples) == {"type": "segment.end", "seq": 3, "audio_ms": audio_ms}


def test_every_event_is_typed() -> None:
    built = [
        events.turn_start("ab", "stream"),
        events.text_delta("Hi"),
        events.segment(0, "Hi."),
        *audio_deltas(0, b"\0\0"),
        segment_end(0, 1),
        events.error("llm_failed", "boom"),
        events.turn_end(),
    ]
    assert [e["type"] for e in built] == [
        "turn.start",
        "text.delta",
        "segment",
        "audio.delta",
        "segment.end",
        "error",
        "turn.end",
    ]


def test_one_json_form_for_both_legs() -> None:
    """Compact and ASCII-escaped: the WebSocket counts its length as bytes."""
    text = events.to_json(events.text_delta("Grüße"))
    assert text == '{"type":"text.delta","text":"Gr\\u00fc\\u00dfe"}' and text.isascii()


def test_audio_pcm_reads_back_what_audio_deltas_carry() -> None:
    pcm = bytes(range(200)) * 30
    assert b"".join(events.audio_pcm(d) for d in audio_deltas(1, pcm)) == pcm


def test_cancelled_names_the_turn_or_none() -> None:
    assert events.cancelled("ab") == {"type": "cancelled", "turn_id": "ab"}
    assert events.cancelled(None) == {"type": "cancelled", "turn_id": None}
