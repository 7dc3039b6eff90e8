"""A sentence's first audio, decoded whole against in windows, on both engines (CPU).

    python -m bench.latency.streaming_synthesis [--runs 5] [--torch-runs 3]

Each configuration is its own ``OnnxEngine``: the whole graph (``--no-windows``), and the split
graph with a few window plans, the default among them (each speaks a warm-up sentence first;
the default voice's prior is calibrated when the engine loads). Every case runs through
``Engine.synthesize`` as the routes call it, interleaved across configurations, ``--runs``
times. Per case: first audio and total (median, p90), the total's ratio to the whole graph's,
and the page's player model: playback starts with the first chunk and runs without a pause
while chunks keep up; an underrun is a chunk that comes after the audio before it has played.
Quality per plan: the log-spectral distance of the windowed audio to the whole graph's (the
int8 decoder's own noise floor is about 3.6 dB) and the largest sample step at a seam against
the largest step within the whole audio; offline Whisper's word error rate on a paragraph of
about a hundred words, spoken sentence by sentence by each. The demo reply is its sentences
one after another, as a session sends them. Then the same for the torch engine on the CPU
(the real weights imported from the ONNX model): whole sentences, its default, against its
windows, ``--torch-runs`` times (0: skip it). Writes
``docs/benchmarks/streaming_synthesis.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agent.core.llm import demo_reply
from agent.segmenter import SentenceSegmenter
from bench.latency.report import write_files
from bench.speech.intelligibility import PARAGRAPH, transcribe, word_error_rate
from bench.speech.torch_stages import log_spectral_distance
from tts_server.engines import Engine, load_g2p, window_plan
from tts_server.engines.onnx.engine import OnnxEngine
from tts_server.engines.windows import PlaybackClock, WindowPlan
from tts_server.settings import Settings

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
SAMPLE_RATE = 24_000
TWELVE = "The old lighthouse keeper climbed the stairs each night to light the lamp."
THIRTY = (
    "When the storm finally passed, the fishermen pulled their boats back into the harbour, "
    "counted their nets, and thanked the keeper whose steady light had guided every one of "
    "them home."
)
DEMO = demo_reply("Tell me about sea otters.", 4)
WARM_UP = "A warm-up sentence teaches the engine this voice."
QUALITY_CASES = ("12 words", "demo, first sentence")  # one piece each: one alignment
PLANS: dict[str, WindowPlan | None] = {
    "whole": None,
    "8, 240, 4, growth 3 (the default)": window_plan(Settings()),
    "8, 120, 8, growth 2": WindowPlan(8, 120, 8, growth=2),
    "8, 40, 16, growth 5 (torch's)": WindowPlan(8, 40, 16, growth=5),
}
TORCH_PLANS: dict[str, WindowPlan | None] = {  # torch decodes whole by default
    "whole": None,
    "8, 40, 16, growth 5 (its plan, with --windows)": window_plan(
        Settings(engine="torch", windows=True)
    ),
}


@dataclass(frozen=True)
class Heard:
    """One synthesis as the page would play it."""

    first_s: float
    total_s: float
    underruns: int
    worst_gap_s: float
    chunks: list[np.ndarray]

    @property
    def audio(self) -> np.ndarray:
        return np.concatenate(self.chunks) if self.chunks else np.zeros(0, np.float32)


async def hear(engine: Engine, texts: list[str]) -> Heard:
    """Synthesize ``texts`` one after another; play each chunk once it comes, without pauses.
    An engine's windows are paced by this player (a ``PlaybackClock`` without lead)."""
    clock = PlaybackClock(lead_s=0.0)
    started = time.perf_counter()
    first: float | None = None
    played_to = 0.0  # when the audio received so far ends playing
    underruns, worst = 0, 0.0
    chunks: list[np.ndarray] = []
    for text in texts:
        prepared = engine.prepare(text)
        paced = isinstance(engine, Engine)  # a test's stand-in takes no clock
        async for chunk in (
            engine.synthesize(prepared, clock) if paced else engine.synthesize(prepared)
        ):
            clock.sent(chunk.audio.size / SAMPLE_RATE)
            now = time.perf_counter() - started
            if first is None:
                first = played_to = now
            elif now > played_to:
                underruns, worst = underruns + 1, max(worst, now - played_to)
                played_to = now
            played_to += chunk.audio.size / SAMPLE_RATE
            chunks.append(chunk.audio)
    return Heard(first or 0.0, time.perf_counter() - started, underruns, worst, chunks)


def largest_step(audio: np.ndarray) -> float:
    """The largest jump between neighbouring samples."""
    return float(np.abs(np.diff(audio)).max()) if audio.size > 1 else 0.0


def aligned(test: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``test`` shifted onto ``reference`` (the two trim their edges apart by a few ms)."""
    n = 1 << int(np.ceil(np.log2(test.size + reference.size)))
    spectrum = np.fft.rfft(reference, n) * np.conj(np.fft.rfft(test, n))
    lag = int(np.argmax(np.fft.irfft(spectrum, n)))
    lag = lag - n if lag > n // 2 else lag  # > 0: test starts late
    return np.pad(test, (lag, 0))[: reference.size] if lag >= 0 else test[-lag:]


def seam_step(chunks: list[np.ndarray]) -> float:
    """The largest jump across the seams between chunks."""
    steps = [
        abs(float(b[0]) - float(a[-1])) for a, b in itertools.pairwise(chunks) if a.size and b.size
    ]
    return max(steps, default=0.0)


def cases() -> dict[str, list[str]]:
    """The texts of each case: one sentence, or the demo reply's sentences in turn."""
    demo = sentences(DEMO)
    return {
        "12 words": [TWELVE],
        "30 words": [THIRTY],
        "demo, first sentence": demo[:1],
        "demo reply": demo,
    }


def sentences(text: str) -> list[str]:
    """``text`` cut as a session cuts a reply."""
    segmenter = SentenceSegmenter()
    return segmenter.push(text) + segmenter.flush()


async def run_round(engines: dict[str, Engine]) -> dict[str, dict[str, Heard]]:
    """Every case on every configuration once, interleaved."""
    out: dict[str, dict[str, Heard]] = {}
    for case, texts in cases().items():
        out[case] = {name: await hear(engine, texts) for name, engine in engines.items()}
    return out


def _p90(values: list[float]) -> float:
    return float(np.percentile(values, 90))


async def word_error_rates(engines: dict[str, Engine]) -> dict[str, float]:
    """Whisper's word error rate on the paragraph, spoken by each configuration."""
    rates = {}
    for name, engine in engines.items():
        heard = await hear(engine, sentences(PARAGRAPH))
        rates[name] = round(word_error_rate(PARAGRAPH, transcribe(heard.audio, SAMPLE_RATE)), 3)
    return rates


def report(
    rounds: list[dict[str, dict[str, Heard]]],
    wer: dict[str, float],
    load: tuple[float, ...],
    runs: int,
) -> dict[str, Any]:
    """Medians per case and plan, the quality of each plan, and the machine."""
    result: dict[str, Any] = {"cases": {}, "quality": {}}
    for case in rounds[0]:
        whole_total = statistics.median(r[case]["whole"].total_s for r in rounds)
        whole_first = statistics.median(r[case]["whole"].first_s for r in rounds)
        rows = {}
        for plan in rounds[0][case]:
            heard = [r[case][plan] for r in rounds]
            first = [h.first_s * 1000 for h in heard]
            total = [h.total_s * 1000 for h in heard]
            rows[plan] = {
                "first_audio_ms": round(statistics.median(first), 1),
                "first_audio_p90_ms": round(_p90(first), 1),
                "total_ms": round(statistics.median(total), 1),
                "first_over_whole": round(statistics.median(first) / 1000 / whole_first, 3),
                "total_over_whole": round(statistics.median(total) / 1000 / whole_total, 3),
                "runs_with_underrun": sum(h.underruns > 0 for h in heard),
                "worst_underrun_ms": round(max(h.worst_gap_s for h in heard) * 1000, 1),
                "chunks": statistics.median(len(h.chunks) for h in heard),
            }
        result["cases"][case] = rows
    last = rounds[-1]
    result["word_error_rate_whole"] = wer["whole"]
    for plan in last["12 words"]:
        if plan == "whole":
            continue
        distances, seams = [], []
        for case in QUALITY_CASES:
            whole, windowed = last[case]["whole"].audio, last[case][plan]
            distances.append(log_spectral_distance(aligned(windowed.audio, whole), whole))
            seams.append(seam_step(windowed.chunks) / largest_step(whole))
        result["quality"][plan] = {
            "log_spectral_distance_db": [round(d, 2) for d in distances],
            "largest_seam_step_over_whole_largest_step": [round(x, 3) for x in seams],
            "word_error_rate": wer[plan],
        }
    result["runs"] = runs
    result["machine"] = {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_1_5_15": [round(x, 2) for x in load],
    }
    return result


def markdown(result: dict[str, Any]) -> str:
    """The report as a Markdown page."""
    load = ", ".join(map(str, result["machine"]["load_average_1_5_15"]))
    lines = [
        "# Streaming synthesis: first audio before the sentence is decoded",
        "",
        "`python -m bench.latency.streaming_synthesis`: the embedded ONNX engine (int8, CPU, "
        "default voice), the whole graph (`--no-windows`) against the split graph decoded in "
        "windows (plan: first window, largest window, context, in frames of 25 ms; growth). "
        "Through `Engine.synthesize`; every configuration its own engine, warmed up in "
        f"the voice; {result['runs']} runs interleaved, medians. "
        f"{result['machine']['cpus']} CPUs, load average {load} (1, 5, 15 min) at the end.",
        "",
        *_figures(result, "##"),
    ]
    torch = result.get("torch")
    if torch:
        lines += [
            "## The torch engine",
            "",
            "The PyTorch engine on the CPU, with the real weights imported from the embedded "
            "ONNX model: whole sentences (its default) against its windows (`--windows`), "
            f"{torch['runs']} runs interleaved, medians, after the ONNX engine's runs.",
            "",
            *_figures(torch, "###"),
        ]
    lines += [
        f"The paragraph: {len(PARAGRAPH.split())} words in {len(sentences(PARAGRAPH))} "
        "sentences, heard by offline Whisper tiny.en (int8, beam 1). "
        "The int8 decoder's own noise floor is about 3.6 dB (an input moved by 1e-6; "
        'docs/tts_server.md, "The ONNX engine in windows"). An underrun is a chunk that came '
        "after the audio before it had played out, in the page's player model (playback "
        "starts with the first chunk).",
        "",
    ]
    return "\n".join(lines)


def _figures(result: dict[str, Any], level: str) -> list[str]:
    """One engine's tables: each case's timings per plan, then each plan's quality."""
    lines = []
    for case, rows in result["cases"].items():
        lines += [
            f"{level} {case}",
            "",
            "| plan | first audio ms (p90) | total ms | first / whole | total / whole "
            "| runs with an underrun | worst underrun ms | chunks |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for plan, row in rows.items():
            lines.append(
                f"| {plan} | {row['first_audio_ms']} ({row['first_audio_p90_ms']}) "
                f"| {row['total_ms']} | {row['first_over_whole']} | {row['total_over_whole']} "
                f"| {row['runs_with_underrun']} of {result['runs']} | {row['worst_underrun_ms']} "
                f"| {row['chunks']:g} |"
            )
        lines.append("")
    lines += [
        f"{level} Quality against the whole sentence (12 words, the demo's first sentence; "
        "the last run)",
        "",
        "| plan | log-spectral distance, dB | largest seam step / the whole audio's largest step "
        "| paragraph WER (whole: " + str(result["word_error_rate_whole"]) + ") |",
        "|---|---|---|---:|",
    ]
    for plan, row in result["quality"].items():
        distance = ", ".join(map(str, row["log_spectral_distance_db"]))
        seams = ", ".join(map(str, row["largest_seam_step_over_whole_largest_step"]))
        lines.append(f"| {plan} | {distance} | {seams} | {row['word_error_rate']} |")
    return [*lines, ""]


def plot(result: dict[str, Any], path: Path) -> None:
    """First audio (median, p90 whisker) and total over the whole graph's, per case and plan."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    engines = {"ONNX": result} | ({"torch": result["torch"]} if "torch" in result else {})
    fig, axes = plt.subplots(
        len(engines), 2, figsize=(13, 5 * len(engines)), layout="constrained", squeeze=False
    )
    for (name, figures), (first, total) in zip(engines.items(), axes, strict=True):
        cases = list(figures["cases"])
        plans = list(figures["cases"][cases[0]])
        width = 0.8 / len(plans)
        for k, plan in enumerate(plans):
            x = [i + (k - (len(plans) - 1) / 2) * width for i in range(len(cases))]
            rows = [figures["cases"][case][plan] for case in cases]
            medians = [row["first_audio_ms"] for row in rows]
            above = [row["first_audio_p90_ms"] - row["first_audio_ms"] for row in rows]
            first.bar(x, medians, width, yerr=[[0] * len(rows), above], label=plan, capsize=2)
            total.bar(x, [row["total_over_whole"] for row in rows], width, label=plan)
        total.axhline(1.15, color="gray", linestyle="--", label="goal: at most 1.15")
        highest = max(
            row["total_over_whole"] for rows in figures["cases"].values() for row in rows.values()
        )
        total.set_ylim(0, 1.5 * highest)  # room for the legend above the bars
        first.set(title=f"{name}: first audio (median; whisker: p90)", ylabel="ms")
        total.set(title=f"{name}: total synthesis time / the whole sentence's", ylabel="ratio")
        for ax in (first, total):
            ax.set_xticks(range(len(cases)), cases)
            ax.grid(axis="y", alpha=0.3)
        total.legend(fontsize="small", loc="upper left")
    fig.savefig(path, dpi=90)
    plt.close(fig)


def engines(plans: dict[str, WindowPlan | None], kind: str = "onnx") -> dict[str, Engine]:
    """One engine of ``kind`` per plan, each having spoken the warm-up sentence in the default
    voice (torch: on the CPU, with the real weights imported from the embedded ONNX model)."""
    g2p = load_g2p(Settings())
    built: dict[str, Engine] = {}
    for name, plan in plans.items():
        if kind == "torch":
            from tts_server.engines.torch.engine import TorchEngine
            from tts_server.engines.torch.onnx_import.model_dir import embedded_model_dir

            built[name] = TorchEngine(g2p, embedded_model_dir(), device="cpu", windows=plan)
        else:
            built[name] = OnnxEngine(g2p, windows=plan)
    for engine in built.values():
        asyncio.run(hear(engine, [WARM_UP]))
    return built


def measured(
    plans: dict[str, WindowPlan | None], kind: str, runs: int
) -> tuple[list[dict[str, dict[str, Heard]]], dict[str, float]]:
    """``runs`` rounds of every case on an engine of ``kind`` per plan, and each one's WER."""
    built = engines(plans, kind)
    try:
        rounds = [asyncio.run(run_round(built)) for _ in range(runs)]
        return rounds, asyncio.run(word_error_rates(built))
    finally:
        for engine in built.values():
            engine.close()


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and write its Markdown and JSON reports."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--torch-runs", type=int, default=3, help="0: the ONNX engine only")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    onnx = measured(PLANS, "onnx", args.runs)
    torch = measured(TORCH_PLANS, "torch", args.torch_runs) if args.torch_runs else None
    result = report(*onnx, os.getloadavg(), args.runs)
    if torch:
        result["torch"] = report(*torch, os.getloadavg(), args.torch_runs)
    write_files(result, args.out, "streaming_synthesis", markdown, plot)
    print(markdown(result))


if __name__ == "__main__":
    main()
