"""Does the speech span keep every loud sample? The frames the ONNX windows skip, measured.

    python -m bench.speech.speech_span

``windows.speech_span`` keeps the frames whose predicted energy passes ``SPEECH_ENERGY``, with
``SPEECH_MARGIN`` frames either side; the windows decode nothing else. Here every sentence of
a corpus (the streaming benchmark's, the demo reply, the intelligibility paragraph, the pause
corpus's complete sentences, the load benchmark's, and short exclamations, questions and a
sentence with no closing mark) is decoded whole in every embedded voice at three speeds. Per
sentence: the room, in frames, between the energy's edges and the loud samples (amplitude above
the trim's threshold, widened by its pad), before the margin; and the share of the frames left
outside the span. The smallest room must stay above minus the margin, or a loud sample would be
cut. Writes ``docs/benchmarks/speech_span.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bench.latency.pause_corpus import SENTENCES as PAUSED
from bench.latency.streaming_synthesis import DEMO, THIRTY, TWELVE, sentences
from bench.load.tts_load_bench import SENTENCES as LOAD
from bench.speech.intelligibility import PARAGRAPH
from tts_server.engines import load_g2p
from tts_server.engines.base import Trim
from tts_server.engines.onnx.engine import OnnxEngine
from tts_server.engines.windows import (
    ENERGY_STEPS_PER_FRAME,
    SAMPLES_PER_FRAME,
    SPEECH_ENERGY,
    SPEECH_MARGIN,
    WindowPlan,
    speech_span,
)
from tts_server.settings import Settings

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
SPEEDS = (0.8, 1.0, 1.3)
SHORT = (
    "Yes!",
    "No way, really?",
    "Hmm.",
    "Well, hmm",
    "Okay",
    "What time is it?",
    "Shh!",
    "Fifty-five percent.",
    "It's over... or is it?",
)


def corpus() -> list[str]:
    """The sentences measured, each once."""
    texts = [TWELVE, THIRTY, *sentences(DEMO), *sentences(PARAGRAPH), *PAUSED[:15], *LOAD]
    return list(dict.fromkeys([*texts, *SHORT]))


def room(engine: OnnxEngine, text: str, voice: str, speed: float) -> dict[str, float] | None:
    """Frames between the energy's edges and the (padded) loud samples, and frames outside."""
    split, trim = engine._lanes.models[0].wide, Trim()
    phonemes = asyncio.run(engine.phonemize(text)).phonemes
    tokens = [engine._vocab[p] for p in phonemes if p in engine._vocab]
    if not tokens:
        return None
    features = split.text(tokens, engine._style(engine._voice(((voice, 1.0),)), tokens), speed)
    audio, _ = split.whole(features)
    loud = np.flatnonzero(np.abs(audio) > trim.threshold)
    span, kept = speech_span(features.energy, margin=0), speech_span(features.energy)
    if not loud.size or span is None or kept is None:
        return None
    pad = trim.pad_ms * engine.sample_rate / 1000
    return {
        "head": round(((loud[0] - pad) / SAMPLES_PER_FRAME - span[0]), 2),
        "tail": round((span[1] - (loud[-1] + pad + 1) / SAMPLES_PER_FRAME), 2),
        "frames": features.frames,
        "outside": features.frames - (kept[1] - kept[0]),  # what the windows skip
    }


def measure() -> dict[str, Any]:
    """Every sentence in every voice at every speed."""
    engine = OnnxEngine(load_g2p(Settings()), windows=WindowPlan(8, 240, 4, growth=3))
    try:
        rows = [
            {"text": text, "voice": voice, "speed": speed} | found
            for voice in engine.voices
            for speed in SPEEDS
            for text in corpus()
            if (found := room(engine, text, voice, speed)) is not None
        ]
    finally:
        engine.close()
    heads, tails = [r["head"] for r in rows], [r["tail"] for r in rows]
    return {
        "threshold": SPEECH_ENERGY,
        "margin_frames": SPEECH_MARGIN,
        "energy_steps_per_frame": ENERGY_STEPS_PER_FRAME,
        "sentences": len(corpus()),
        "voices": len({r["voice"] for r in rows}),
        "speeds": list(SPEEDS),
        "decoded": len(rows),
        "smallest_room_before_frames": min(heads),
        "smallest_room_after_frames": min(tails),
        "share_outside_span": round(
            sum(r["outside"] for r in rows) / sum(r["frames"] for r in rows), 3
        ),
        "tightest": sorted(rows, key=lambda r: min(r["head"], r["tail"]))[:5],
        "cpus": os.cpu_count(),
    }


def markdown(result: dict[str, Any]) -> str:
    """The report as a Markdown page."""
    lines = [
        "# The speech span: what the ONNX windows leave undecoded",
        "",
        "`python -m bench.speech.speech_span`: "
        f"{result['sentences']} sentences x {result['voices']} voices x "
        f"{len(result['speeds'])} speeds ({', '.join(map(str, result['speeds']))}), "
        f"{result['decoded']} decoded whole. The span: frames whose predicted energy passes "
        f"{result['threshold']}, with {result['margin_frames']} frames either side. Room: frames "
        "between the energy's edge and the first (last) loud sample widened by the trim's 25 ms "
        "pad, before the margin; a loud sample is cut only if the room is below minus the margin.",
        "",
        "| smallest room before the speech | smallest room after it | frames outside the span |",
        "|---:|---:|---:|",
        f"| {result['smallest_room_before_frames']} | {result['smallest_room_after_frames']} "
        f"| {result['share_outside_span']:.1%} |",
        "",
        "The tightest five:",
        "",
        "| sentence | voice | speed | room before | room after |",
        "|---|---|---:|---:|---:|",
    ]
    for row in result["tightest"]:
        text = row["text"][:40].replace("|", "/")  # the pause corpus marks its pauses so
        lines.append(
            f"| {text} | {row['voice']} | {row['speed']} | {row['head']} | {row['tail']} |"
        )
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> None:
    """Measure and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    result = measure()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "speech_span.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "speech_span.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
