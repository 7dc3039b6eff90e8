"""Two listeners at once on the ONNX engine's two lanes: wide sessions, narrow beside another.

    python -m bench.latency.two_lanes [--runs 3]

``voice-agent dev`` runs the ONNX engine on two lanes, each given every core, so that one
listener's windows run as fast as the machine allows while a second listener's run beside them
instead of queueing. Two lanes at once then run two threads each on the same cores. Each
configuration is its own engine, windowed and paced as ``voice-agent dev`` paces them: two
lanes of every core each, with and without a one-thread session for while the other lane runs
(``--[no-]onnx-narrow``), and two lanes of one thread each. Per run, a demo reply alone, then
two demo replies at once; each played as it comes, without a lead (``streaming_synthesis``'s
player). Medians of first audio, total, and the seconds of audio made per second (both
listeners' together); the gaps the player met; a process's resident memory with the engine
built and warmed (each in a process of its own). And one reply's window beside its own next
sentence's text side: a window the size of a page's opening (``OPENING_FRAMES`` of speech after
the sentence's leading pad) decoded on one lane alone, and again starting just after the other
lane began a sentence's text side, as a reply's next sentence starts while its windows decode.
Writes ``docs/benchmarks/two_lanes.{md,json}``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agent.core.llm import demo_reply
from bench.latency.streaming_synthesis import OUT, SAMPLE_RATE, WARM_UP, Heard, hear, sentences
from tts_server.engines import Engine, load_g2p, window_plan
from tts_server.engines.base import G2P, WindowJob
from tts_server.engines.onnx.engine import OnnxEngine
from tts_server.engines.scheduler import Piece
from tts_server.engines.windows import Window
from tts_server.settings import Settings

REPLY_SENTENCES = 6
OPENING_FRAMES = 23  # a typed reply's opening on the page (its windows' trace): 34 decoded
TEXT_SIDE_HEAD_START_S = 0.01  # the other lane's text side begins this long before the window
REPLIES = (  # the two listeners' replies, each about 24 s of speech
    sentences(demo_reply("Tell me about sea otters.", REPLY_SENTENCES)),
    sentences(demo_reply("Tell me about lighthouses.", REPLY_SENTENCES)),
)


def configurations(cores: int) -> dict[str, dict[str, Any]]:
    """Every configuration's engine arguments, by name."""
    return {
        f"2 lanes x {cores} threads, narrow beside another (the default)": {
            "lane_threads": cores,
            "narrow": True,
        },
        f"2 lanes x {cores} threads, never narrow": {"lane_threads": cores, "narrow": False},
        "2 lanes x 1 thread": {"lane_threads": 1, "narrow": False},
    }


def resident_mb() -> float:
    """This process's resident memory, MB."""
    with open("/proc/self/status") as status:
        line = next(row for row in status if row.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def warmed_engine(g2p: G2P, arguments: dict[str, Any]) -> Engine:
    """A configuration's engine, warmed up in the voice."""
    plan = dataclasses.replace(window_plan(Settings()), pace_to_listener=True)  # type: ignore[arg-type]
    built = OnnxEngine(g2p, workers=2, windows=plan, **arguments)
    asyncio.run(hear(built, [WARM_UP]))
    return built


def memory(cores: int) -> dict[str, int]:
    """Each configuration's process, MB resident: its engine built and warmed in a process of
    its own (``--resident``), so that none is charged for what another loaded first."""
    found = {}
    for name in configurations(cores):
        command = [sys.executable, "-m", "bench.latency.two_lanes", "--resident", name]
        found[name] = round(
            float(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        )
    return found


async def together(engine: Engine) -> list[Heard]:
    """Both replies at once, each to its own listener."""
    return list(await asyncio.gather(*(hear(engine, reply) for reply in REPLIES)))


def seconds_of(heard: Heard) -> float:
    return sum(chunk.size for chunk in heard.chunks) / SAMPLE_RATE


def beside_text_side(engine: OnnxEngine, runs: int) -> dict[str, float]:
    """Medians, ms, over the reply's sentences ``runs`` times: an opening-sized window decoded
    on lane 0 alone, and starting ``TEXT_SIDE_HEAD_START_S`` after lane 1 began the same
    sentence's text side (as the reply's next sentence starts while its windows decode); the
    text side alone."""
    voice, context = engine._voice(None), window_plan(Settings()).context  # type: ignore[union-attr]
    pieces = [Piece(engine._g2p(text), voice, 1.0) for text in REPLIES[0]]
    started = [
        (piece, begun)
        for piece, begun in zip(pieces, engine._start_batch(0, pieces), strict=True)
        if begun.state is not None and begun.state.prior is not None
    ]
    alone: list[float] = []
    beside: list[float] = []
    text_side: list[float] = []

    def timed(run: Any) -> float:
        begun = time.perf_counter()
        run()
        return time.perf_counter() - begun

    for _ in range(runs):
        for piece, begun in started:
            start = (begun.span or (0, begun.frames))[0]
            window = Window(start, begun.lead + OPENING_FRAMES, 0, context)
            job = [WindowJob(begun.state, window)]
            alone.append(timed(lambda job=job: engine._window_batch(0, job)))
            text_side.append(timed(lambda piece=piece: engine._start(1, piece)))
            other = threading.Thread(target=engine._start, args=(1, piece))
            other.start()
            time.sleep(TEXT_SIDE_HEAD_START_S)
            beside.append(timed(lambda job=job: engine._window_batch(0, job)))
            other.join()
    return {
        "window_alone_ms": round(statistics.median(alone) * 1000, 1),
        "window_beside_text_side_ms": round(statistics.median(beside) * 1000, 1),
        "text_side_alone_ms": round(statistics.median(text_side) * 1000, 1),
    }


def figures(runs: list[list[Heard]]) -> dict[str, float]:
    """Medians over runs (each a list of listeners heard at once) and every gap."""
    heard = [h for run in runs for h in run]
    return {
        "first_audio_ms": round(statistics.median(h.first_s for h in heard) * 1000, 1),
        "total_ms": round(statistics.median(h.total_s for h in heard) * 1000, 1),
        "audio_per_second": round(
            statistics.median(
                sum(map(seconds_of, run)) / max(h.total_s for h in run) for run in runs
            ),
            2,
        ),
        "underruns": sum(h.underruns for h in heard),
        "worst_gap_ms": round(max(h.worst_gap_s for h in heard) * 1000, 1),
    }


def measure(built: dict[str, Engine], runs: int) -> dict[str, dict[str, dict[str, float]]]:
    """Each configuration's reply alone and two at once, ``runs`` times, interleaved."""
    alone: dict[str, list[list[Heard]]] = {name: [] for name in built}
    both: dict[str, list[list[Heard]]] = {name: [] for name in built}
    for _ in range(runs):
        for name, engine in built.items():
            alone[name].append([asyncio.run(hear(engine, REPLIES[0]))])
            both[name].append(asyncio.run(together(engine)))
    return {
        name: {"alone": figures(alone[name]), "two at once": figures(both[name])} for name in built
    }


def markdown(result: dict[str, Any]) -> str:
    """The report as a Markdown page."""
    lines = [
        "# Two listeners at once on the ONNX engine's two lanes",
        "",
        "`python -m bench.latency.two_lanes`: the embedded ONNX engine (int8, CPU, default "
        "voice) on two lanes, windowed and paced as `voice-agent dev` runs it, each "
        "configuration its own engine. A demo reply of "
        f"{REPLY_SENTENCES} sentences (about 24 s) alone, then two at once, played as they "
        f"come without a lead; {result['runs']} runs interleaved, medians (first audio and "
        "total over each listener, audio made a second over both). "
        f"{result['machine']['platform']}, {result['machine']['cpus']} CPUs, no other load. "
        "Process MB: resident, the engine built and warmed in a process of its own (G2P "
        "included).",
        "",
        "| configuration | process MB | alone: first audio ms | alone: total ms "
        "| two: first audio ms | two: total ms | two: audio s a second | two: gaps (worst ms) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, by_kind in result["configurations"].items():
        alone, two = by_kind["alone"], by_kind["two at once"]
        lines.append(
            f"| {name} | {result['memory_mb'][name]} | {alone['first_audio_ms']} "
            f"| {alone['total_ms']} | {two['first_audio_ms']} | {two['total_ms']} "
            f"| {two['audio_per_second']} | {two['underruns']} ({two['worst_gap_ms']}) |"
        )
    lines += [
        "",
        "A window beside its reply's next text side: a window of a page's opening "
        f"({OPENING_FRAMES} frames of speech after the leading pad, context after it) decoded "
        "on one lane alone, and starting "
        f"{TEXT_SIDE_HEAD_START_S * 1000:g} ms after the other lane began a sentence's text "
        "side; medians over the reply's windowed sentences in every run.",
        "",
        "| configuration | window alone ms | window beside a text side ms | text side alone ms |",
        "|---|---:|---:|---:|",
    ]
    for name, beside in result["beside_text_side"].items():
        lines.append(
            f"| {name} | {beside['window_alone_ms']} | {beside['window_beside_text_side_ms']} "
            f"| {beside['text_side_alone_ms']} |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and write its Markdown and JSON reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--resident", help=argparse.SUPPRESS)  # ``memory``'s child
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    g2p = load_g2p(Settings())
    if args.resident:
        warmed_engine(g2p, configurations(cores)[args.resident])
        print(resident_mb())
        return
    resident = memory(cores)
    built = {
        name: warmed_engine(g2p, arguments) for name, arguments in configurations(cores).items()
    }
    try:
        result: dict[str, Any] = {"configurations": measure(built, args.runs)}
        result["beside_text_side"] = {
            name: beside_text_side(engine, args.runs)  # type: ignore[arg-type]
            for name, engine in built.items()
        }
    finally:
        for engine in built.values():
            engine.close()
    result["memory_mb"] = resident
    result["runs"] = args.runs
    result["machine"] = {"platform": platform.platform(), "cpus": cores}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "two_lanes.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "two_lanes.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
