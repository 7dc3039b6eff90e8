"""The browser-facing events, as JSON-ready dicts (docs/events.md).

``to_json`` is the one JSON form of an event: ``agent.sse`` wraps it in SSE lines, ``agent.ws``
sends it as a WebSocket text frame (and audio as binary frames, ``audio_pcm``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from tts_protocol import BYTES_PER_SAMPLE, SAMPLE_RATE, Word, samples_ms

Event = dict[str, Any]

AUDIO_EVENT_MS = 100  # at most this much audio per audio.delta event
AUDIO_EVENT_BYTES = SAMPLE_RATE * AUDIO_EVENT_MS // 1000 * BYTES_PER_SAMPLE


def turn_start(turn_id: str, mode: str) -> Event:
    return {"type": "turn.start", "turn_id": turn_id, "mode": mode}


def text_delta(text: str) -> Event:
    return {"type": "text.delta", "text": text}


def segment(seq: int, text: str) -> Event:
    return {"type": "segment", "seq": seq, "text": text}


def audio_deltas(seq: int, pcm: bytes) -> list[Event]:
    """PCM s16le mono as base64 ``audio.delta`` events of at most ``AUDIO_EVENT_MS`` each."""
    return [
        {
            "type": "audio.delta",
            "seq": seq,
            "audio": base64.b64encode(pcm[i : i + AUDIO_EVENT_BYTES]).decode("ascii"),
            "sample_rate": SAMPLE_RATE,
        }
        for i in range(0, len(pcm), AUDIO_EVENT_BYTES)
    ]


def audio_pcm(event: Event) -> bytes:
    """The PCM an ``audio.delta`` carries."""
    return base64.b64decode(event["audio"])


def segment_marks(seq: int, words: Sequence[Word]) -> Event:
    """Word timings of segment ``seq`` (ms from its audio's start), before the audio they time."""
    return {
        "type": "segment.marks",
        "seq": seq,
        "words": [{"text": w.text, "start_ms": w.start_ms, "end_ms": w.end_ms} for w in words],
    }


def segment_end(seq: int, samples: int) -> Event:
    return {"type": "segment.end", "seq": seq, "audio_ms": samples_ms(samples)}


def error(code: str, message: str) -> Event:
    return {"type": "error", "code": code, "message": message}


def turn_end() -> Event:
    return {"type": "turn.end"}


def cancelled(turn_id: str | None) -> Event:
    """The answer to a WebSocket ``cancel``: the turn stopped (None: none was running)."""
    return {"type": "cancelled", "turn_id": turn_id}


def to_json(event: Event) -> str:
    """Compact JSON, non-ASCII escaped (so its length is its size in bytes)."""
    return json.dumps(event, separators=(",", ":"))
