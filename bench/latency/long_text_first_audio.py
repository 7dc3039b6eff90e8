"""First audio for long unpunctuated text against a normal sentence, on the embedded ONNX engine.

    python -m bench.latency.long_text_first_audio [--runs 3]

Cases, each through ``Engine.synthesize`` as every route calls it: a normal sentence, and 4,096
characters with no full stop (OpenAI's input limit). For the long text it also times the path
the engine took before text was phonemized piece by piece, as a baseline: the whole text through
the G2P, then its first model-sized piece (``split_spans`` of all the phonemes) synthesized.
One sentence warms the engine up, then every case runs ``--runs`` times, interleaved; medians
are reported with the load average (other work shares the CPU). Writes
``docs/benchmarks/long_text_first_audio.{md,json}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from bench.latency.tts_engine_bench import measure  # first audio, total, audio, RTF
from tts_protocol.validation import parse_voice
from tts_server.engines import Engine, load_engine
from tts_server.engines.g2p import MAX_PHONEMES, split_spans
from tts_server.engines.scheduler import Piece
from tts_server.settings import Settings

SENTENCE = "The weather today is mild, with a light breeze from the west and clear skies."
UNPUNCTUATED = " ".join(
    ["the river runs past the old mill and on toward the quiet town by the hills"] * 60
)[:4096]
OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"


async def whole_text_first_audio(engine: Engine, text: str) -> dict[str, float]:
    """The old path's first audio: G2P of the whole text, then its first piece synthesized."""
    voice = parse_voice(engine.default_voice)
    started = time.perf_counter()
    phonemes = (await engine.phonemize(text)).phonemes
    phonemized = time.perf_counter() - started
    start, end = split_spans(phonemes, MAX_PHONEMES)[0]
    await engine._scheduler.synthesize(Piece(phonemes[start:end], voice, 1.0))
    return {
        "first_audio_ms": round((time.perf_counter() - started) * 1000, 1),
        "g2p_ms": round(phonemized * 1000, 1),
        "first_piece_phonemes": end - start,
    }


async def run_round(engine: Engine) -> dict[str, dict[str, float]]:
    """Every case once."""
    return {
        "sentence": await measure(engine, SENTENCE),
        "unpunctuated 4096": await measure(engine, UNPUNCTUATED),
        "unpunctuated 4096, whole-text G2P (before)": await whole_text_first_audio(
            engine, UNPUNCTUATED
        ),
    }


def report(rounds: list[dict[str, dict[str, float]]], load: tuple[float, ...]) -> dict[str, Any]:
    """Medians per case and figure, with every run's figures and the machine."""
    cases = {
        name: {k: round(statistics.median(r[name][k] for r in rounds), 1) for k in rounds[0][name]}
        for name in rounds[0]
    }
    return {
        "engine": "onnx (embedded int8), default voice",
        "runs": len(rounds),
        "chars": {"sentence": len(SENTENCE), "unpunctuated": len(UNPUNCTUATED)},
        "median": cases,
        "rounds": rounds,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1_5_15": [round(x, 2) for x in load],
        },
    }


def markdown(result: dict[str, Any]) -> str:
    """The report as a short Markdown page."""
    median = result["median"]
    sentence, long = median["sentence"], median["unpunctuated 4096"]
    before = median["unpunctuated 4096, whole-text G2P (before)"]
    load = ", ".join(map(str, result["machine"]["load_average_1_5_15"]))
    lines = [
        "# First audio for long unpunctuated text",
        "",
        "`python -m bench.latency.long_text_first_audio`: the embedded ONNX engine, default voice, "
        f"through `Engine.synthesize`. Medians of {result['runs']} runs after a warm-up; "
        f"{result['machine']['cpus']} CPUs, load average {load} (1, 5, 15 min) at the end: "
        "other work shared the machine.",
        "",
        "| input | chars | first audio (ms) | total (ms) | audio (s) |",
        "|---|---|---|---|---|",
        f"| a normal sentence | {result['chars']['sentence']} | {sentence['first_audio_ms']} "
        f"| {sentence['total_ms']} | {sentence['audio_s']} |",
        f"| no full stop | {result['chars']['unpunctuated']} | {long['first_audio_ms']} "
        f"| {long['total_ms']} | {long['audio_s']} |",
        f"| no full stop, before: whole-text G2P, then a {before['first_piece_phonemes']:.0f}"
        f"-phoneme first piece | {result['chars']['unpunctuated']} "
        f"| {before['first_audio_ms']} | — | — |",
        "",
        "The text is phonemized a piece at a time, just before each piece is synthesized "
        "(`g2p.split_text`): the first piece of a long text is at most 100 characters, cut at "
        "a clause mark or a space, each later one at most 1.5 times the one before, up to 300 "
        "(so the next piece is ready before the last one has played, wherever the engine runs "
        "faster than 1/1.5 of real time). The first audio of 4,096 "
        "characters without a full stop so waits for its first words, as a normal sentence's "
        f"does, not for the whole text's G2P ({before['g2p_ms']} ms here) and a piece of "
        f"{before['first_piece_phonemes']:.0f} phonemes. The total is the engine's real-time "
        "factor over about four minutes of audio; it plays long before it ends.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and write its Markdown and JSON reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    engine = load_engine(Settings())
    try:
        asyncio.run(measure(engine, SENTENCE))  # warm-up
        rounds = [asyncio.run(run_round(engine)) for _ in range(args.runs)]
    finally:
        engine.close()
    result = report(rounds, os.getloadavg())
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "long_text_first_audio.json").write_text(json.dumps(result, indent=2) + "\n")
    (OUT / "long_text_first_audio.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
