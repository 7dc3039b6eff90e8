"""The largest frame of each kind on both legs, through the encoders that send them.

    python -m bench.frame_sizes [--out docs/benchmarks]

``/ws`` (browser ↔ agent, through AgentCore: ``agent.browser_leg.MAX_FRAME_BYTES``): audio at
any speed and voice (``audio.delta``s are 100 ms whatever the speed; a frame is cut at
``MAX_FRAME_BYTES`` anyway), the longest segment the segmenter lets through in the widest JSON
(every character two ``\\u`` escapes), its word timings with long spoken forms, a whole reply
in one text delta, a transcript of the longest utterance and of ten minutes, and the longest
error; each as one event would encode it and as ``fitted`` sends it. The model leg (agent ↔
TTS server, WebSocket or SageMaker's stream): the ``speak`` of that segment with a voice blend,
the server's ``marks`` for it and its audio frames. Prints a table; writes
``frame_sizes.json`` and ``frame_sizes.md``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agent.browser_leg import AUDIO_HEADER, MAX_FRAME_BYTES, audio_frames
from agent.events import (
    AUDIO_EVENT_BYTES,
    ErrorEvent,
    Event,
    Segment,
    SegmentMarks,
    TextDelta,
    Transcript,
    fitted,
)
from agent.segmenter import SentenceSegmenter
from tts_protocol import MAX_AUDIO_FRAME_BYTES, Marks, Speak, Word, encode, parse_voice
from tts_protocol.audio import split_audio

OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks"
ASTRAL = "\U0001f600"
SPOKEN = "nine hundred ninety-nine quintillion"  # a written number read out


def longest_segment(word: str) -> str:
    """The longest segment the segmenter cuts from ``word`` repeated with no sentence end."""
    segmenter = SentenceSegmenter()
    return max(segmenter.push(" ".join([word] * 2000)) + segmenter.flush(), key=len)


def marks_of(text: str) -> tuple[Word, ...]:
    """Word timings of ``text``: every word with a long spoken form, times to 0.1 ms."""
    return tuple(Word(w, 98765.4 + i, 98766.5 + i, SPOKEN) for i, w in enumerate(text.split()))


def ws_cases() -> dict[str, tuple[Event | bytes, ...]]:
    """Each /ws kind's worst cases: an event, or binary audio as raw PCM."""
    plain, wide = longest_segment("a"), longest_segment(ASTRAL * 8)
    reply = "A whole reply in one delta, as a model that does not stream sends it. " * 600
    return {
        "audio (binary, 100 ms at 24 kHz)": (bytes(AUDIO_EVENT_BYTES),),
        "audio (binary, 10 s handed at once)": (bytes(480_000),),
        "segment (longest, ASCII / astral)": (Segment(1, plain), Segment(1, wide)),
        "segment.marks (longest segment)": (
            SegmentMarks(1, marks_of(plain)),
            SegmentMarks(1, marks_of(wide)),
        ),
        "text.delta (a whole reply)": (TextDelta(reply), TextDelta(ASTRAL * 20_000)),
        "transcript (20 s / 10 min utterance)": (
            Transcript("so this is what I said " * 12, 20_000.0, 900.0),
            Transcript("so this is what I said " * 360, 600_000.0, 9000.0),
        ),
        "error (longest message)": (ErrorEvent("llm_error", "upstream said: " + ASTRAL * 5000),),
    }


def measure_ws() -> dict[str, dict[str, int]]:
    """Per kind: the largest frame as one event, and as sent (``fitted``, ``audio_frames``)."""
    rows: dict[str, dict[str, int]] = {}
    for kind, cases in ws_cases().items():
        whole, sent, frames = 0, 0, 0
        for case in cases:
            if isinstance(case, bytes):
                whole = max(whole, AUDIO_HEADER.size + len(case))
                parts = [len(frame) for frame in audio_frames(1, case)]
            else:
                whole = max(whole, len(case.to_json()))
                parts = [len(part.to_json()) for part in fitted(case)]
            sent, frames = max(sent, *parts), max(frames, len(parts))
        rows[kind] = {"one_frame_bytes": whole, "largest_sent_bytes": sent, "frames": frames}
    return rows


def measure_model_leg() -> dict[str, int]:
    """The model leg's largest frames for the longest segment (UTF-8 JSON, not escaped)."""
    wide = longest_segment(ASTRAL * 8)
    voice = parse_voice("af_heart(0.3333)+af_bella(0.3333)+am_adam(0.3334)")
    speak = encode(Speak("s" * 36, wide, voice, 0.5, True, reply="r" * 36))
    marks = encode(Marks("s" * 36, marks_of(wide)))
    audio = max(len(frame) for frame in split_audio(bytes(24_000 * 2 * 30)))
    return {"speak": len(speak), "marks": len(marks), "audio": audio}


def markdown(ws: dict[str, dict[str, int]], model: dict[str, int]) -> str:
    """The report."""
    lines = [
        "# Frame sizes: the largest frame of each kind, both legs",
        "",
        "Written by `python -m bench.frame_sizes` (pure: the encoders that send the frames).",
        f"`/ws` bound: {MAX_FRAME_BYTES} bytes per frame (AgentCore's 32 KB, read as decimal",
        "kilobytes); why, and the source: [docs/agent.md](../agent.md#frame-sizes).",
        "",
        "| `/ws` frame | as one frame | largest sent | frames at most |",
        "|---|---:|---:|---:|",
    ]
    for kind, row in ws.items():
        lines.append(
            f"| {kind} | {row['one_frame_bytes']:,} | {row['largest_sent_bytes']:,} "
            f"| {row['frames']} |"
        )
    lines += [
        "",
        "| model leg frame (longest segment) | bytes |",
        "|---|---:|",
        *(f"| `{kind}` | {size:,} |" for kind, size in model.items()),
        "",
        f"The server cuts audio at {MAX_AUDIO_FRAME_BYTES:,} bytes (`MAX_AUDIO_FRAME_BYTES`).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """Measure, print, write ``frame_sizes.{json,md}``."""
    parser = argparse.ArgumentParser(prog="python -m bench.frame_sizes")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    ws, model = measure_ws(), measure_model_leg()
    report = {"ws_limit_bytes": MAX_FRAME_BYTES, "ws": ws, "model_leg": model}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "frame_sizes.json").write_text(json.dumps(report, indent=2) + "\n")
    text = markdown(ws, model)
    (args.out / "frame_sizes.md").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
