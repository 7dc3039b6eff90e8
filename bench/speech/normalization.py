"""Text normalization: what it costs per sentence, and what it buys in intelligibility.

Cost: ``normalize`` on every sentence of a hard set (numbers, money, times, dates, units,
phone numbers, addresses, abbreviations), many times each, warm (num2words' answers cached,
as in a running server) and cold (the caches cleared before each call); and on 10 kB of
hostile input. Intelligibility: each sentence is synthesized by the embedded ONNX engine with
and without normalization, in the same run, and transcribed by offline Whisper tiny.en
(``bench.speech.intelligibility``). The reference is the sentence in spoken form, written by hand;
Whisper writes what it hears in digits and symbols ("$5.99", "10:30 a.m."), so its transcript
is put into spoken form by the normalizer before it is scored, the same way for both runs. A
second score, independent of this normalizer, puts the spoken-form reference and the
transcript through Whisper's own English normalizer (``EnglishTextNormalizer``, from
transformers, which writes numbers as digits) when it is installed.

``python -m bench.speech.normalization [--sentences N] [--out DIR]`` writes
``normalization.{json,md}`` (to ``docs/benchmarks/`` by default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.speech.intelligibility import transcribe, word_error_rate
from tts_server.normalize import normalize
from tts_server.normalize import numbers as number_words

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
GOAL_P99_MS = 1.0
GOAL_HOSTILE_MS = 50.0
# (written, spoken): what an agent writes, and what a listener should hear.
HARD_SET = (
    ("It costs $5.99 at the store.", "it costs five dollars and ninety-nine cents at the store"),
    ("Meet me at 10:30 a.m. tomorrow.", "meet me at ten thirty am tomorrow"),
    ("The shop is on Oak St. near the bank.", "the shop is on oak street near the bank"),
    ("Dr. Smith lives on Elm Dr. downtown.", "doctor smith lives on elm drive downtown"),
    ("We flew to St. Louis in 2019.", "we flew to saint louis in twenty nineteen"),
    (
        "The drive is 15 km and takes 20 min.",
        "the drive is fifteen kilometers and takes twenty minutes",
    ),
    ("It is 72°F outside today.", "it is seventy-two degrees fahrenheit outside today"),
    (
        "Call 555-123-4567 after 5 p.m.",
        "call five five five one two three four five six seven after five pm",
    ),
    ("Write to help@example.com for support.", "write to help at example dot com for support"),
    (
        "Sales grew 3.5% to $1.2M last year.",
        "sales grew three point five percent to one point two million dollars last year",
    ),
    ("The launch is on March 5, 2024.", "the launch is on march fifth twenty twenty-four"),
    ("World War II ended in 1945.", "world war two ended in nineteen forty-five"),
    ("Henry VIII had six wives.", "henry the eighth had six wives"),
    ("Wait 3-5 days for delivery.", "wait three to five days for delivery"),
    ("The new chip is 10x faster.", "the new chip is ten times faster"),
    ("My laptop has 16GB of memory.", "my laptop has sixteen gigabytes of memory"),
    ("Drive at 65 mph on the highway.", "drive at sixty-five miles per hour on the highway"),
    ("Add 1/2 cup of sugar.", "add one half cup of sugar"),
    ("She finished 1st and he came 22nd.", "she finished first and he came twenty-second"),
    ("Bring fruit, e.g. apples or pears.", "bring fruit for example apples or pears"),
    ("It takes approx. 15 minutes.", "it takes approximately fifteen minutes"),
    ("Visit www.example.com/help today.", "visit w w w dot example dot com slash help today"),
    (
        "The train leaves at 14:05 from platform 9.",
        "the train leaves at fourteen oh five from platform nine",
    ),
    ("Tickets cost €15.50 or £12.", "tickets cost fifteen euros and fifty cents or twelve pounds"),
    (
        "Mt. Everest is 8,849 m tall.",
        "mount everest is eight thousand eight hundred and forty-nine meters tall",
    ),
    ("Tom & Jerry aired in the 1940s.", "tom and jerry aired in the nineteen forties"),
    ("Read Chapter IV by Fri.", "read chapter four by friday"),
    (
        "The 2020-2024 plan cost $3 billion.",
        "the twenty twenty to twenty twenty-four plan cost three billion dollars",
    ),
)
HOSTILE = {
    "10 kB of digits": "7" * 10_000,
    "10 kB of dots": "." * 10_000,
    "10 kB of slashes": "/" * 10_000,
    "10 kB of '1.'": "1." * 5_000,
    "10 kB of '1/'": "1/" * 5_000,
    "10 kB of '1 ' (5,000 numbers)": "1 " * 5_000,
    "10 kB of 'St. ' (2,500 abbreviations)": "St. " * 2_500,
}


def _clear_caches() -> None:
    for cached in (number_words.cardinal, number_words.ordinal, number_words.year):
        cached.cache_clear()


def _percentile(values: list[float], share: float) -> float:
    return float(np.percentile(np.asarray(values), share * 100))


def cost(sentences: list[str], rounds: int = 200) -> dict[str, Any]:
    """Milliseconds per sentence, warm and cold, and on hostile input."""
    warm: list[float] = []
    cold: list[float] = []
    for text in sentences:
        normalize(text)
        for _ in range(rounds):
            started = time.perf_counter()
            normalize(text)
            warm.append((time.perf_counter() - started) * 1000)
        for _ in range(max(1, rounds // 10)):
            _clear_caches()
            started = time.perf_counter()
            normalize(text)
            cold.append((time.perf_counter() - started) * 1000)
    hostile = {}
    for name, text in HOSTILE.items():
        runs = []
        for _ in range(3):
            started = time.perf_counter()
            normalize(text)
            runs.append((time.perf_counter() - started) * 1000)
        hostile[name] = round(max(runs), 2)
    return {
        "calls": len(warm),
        "warm_median_ms": round(statistics.median(warm), 4),
        "warm_p99_ms": round(_percentile(warm, 0.99), 4),
        "cold_median_ms": round(statistics.median(cold), 4),
        "cold_p99_ms": round(_percentile(cold, 0.99), 4),
        "hostile_max_ms": hostile,
    }


def _whisper_normalizer() -> Any:
    try:
        from transformers.models.whisper.english_normalizer import EnglishTextNormalizer
    except ImportError:
        return None
    return EnglishTextNormalizer({})


async def _speak(engine: Any, text: str, normalized: bool) -> np.ndarray:
    from tts_server.engines.base import NORMALIZED

    options = NORMALIZED if normalized else None
    chunks = [c.audio async for c in engine.synthesize(engine.prepare(text, None, 1.0, options))]
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)


def intelligibility(cases: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """WER of the hard set without and with normalization, through the ONNX engine."""
    from tts_server.engines import load_engine
    from tts_server.settings import Settings

    engine = load_engine(Settings())
    whisper_normalizer = _whisper_normalizer()
    rows = []
    try:
        for written, spoken in cases:
            row: dict[str, Any] = {"written": written, "reference": spoken}
            for label, on in (("without", False), ("with", True)):
                heard = transcribe(asyncio.run(_speak(engine, written, on)), engine.sample_rate)
                row[f"heard_{label}"] = heard
                row[f"wer_{label}"] = word_error_rate(spoken, normalize(heard).text)
                if whisper_normalizer is not None:
                    row[f"whisper_wer_{label}"] = word_error_rate(
                        whisper_normalizer(spoken), whisper_normalizer(heard)
                    )
            rows.append(row)
    finally:
        engine.close()
    summary = {
        f"{key}_{label}": round(statistics.mean(r[f"{key}_{label}"] for r in rows), 4)
        for key in ("wer", "whisper_wer")
        for label in ("without", "with")
        if f"{key}_{label}" in rows[0]
    }
    return {"sentences": len(rows), **summary, "rows": rows}


def _cost(result: dict[str, Any]) -> list[str]:
    c = result["cost"]
    return [
        "# Text normalization: cost and intelligibility",
        "",
        f"`python -m bench.speech.normalization` on {result['machine']}, {result['date']}.",
        "",
        "## Cost per sentence (`normalize`, the hard set below)",
        "",
        "| | median | p99 |",
        "|---|---|---|",
        f"| warm (num2words cached, as in a running server) | {c['warm_median_ms']:.3f} ms "
        f"| {c['warm_p99_ms']:.3f} ms |",
        f"| cold (caches cleared before each call) | {c['cold_median_ms']:.3f} ms "
        f"| {c['cold_p99_ms']:.3f} ms |",
        "",
        f"Goal: at most {GOAL_P99_MS} ms at p99: "
        f"{'met' if c['warm_p99_ms'] <= GOAL_P99_MS else 'missed'} warm, "
        f"{'met' if c['cold_p99_ms'] <= GOAL_P99_MS else 'missed'} cold ({c['calls']} calls).",
        "",
        "Hostile input (slowest of three runs):",
        "",
        "| input | ms |",
        "|---|---|",
        *(f"| {name} | {ms} |" for name, ms in c["hostile_max_ms"].items()),
        "",
        f"Goal: 10 kB of digits, dots or slashes under {GOAL_HOSTILE_MS:.0f} ms.",
    ]


def _intelligibility(w: dict[str, Any]) -> list[str]:
    goal_wer = w["wer_with"] <= w["wer_without"] / 2
    goal_whisper = w.get("whisper_wer_with", 1.0) <= w.get("whisper_wer_without", 0.0) / 2
    lines = [
        "",
        "## Intelligibility: Whisper tiny.en WER, same run, same engine",
        "",
        "The embedded ONNX engine speaks each sentence with and without normalization; offline",
        "Whisper tiny.en (faster-whisper, int8, beam 1) transcribes it. **Spoken-form WER**: the",
        "reference is the sentence as it should be heard, written by hand in words; the",
        "transcript is put into spoken form by the normalizer (Whisper writes `$5.99`, `10:30",
        "a.m.`), the same way for both runs, then lower-cased without punctuation. **Whisper-",
        "normalizer WER**: the same reference and the transcript both through Whisper's own",
        "`EnglishTextNormalizer` (transformers; it writes numbers as digits, `fourteen oh five`",
        "and `14:05` both as `1405`), which does not use this normalizer at all.",
        "",
        "| | without | with |",
        "|---|---|---|",
        f"| spoken-form WER | {w['wer_without']:.3f} | {w['wer_with']:.3f} |",
    ]
    if "whisper_wer_with" in w:
        lines.append(
            f"| Whisper-normalizer WER | {w['whisper_wer_without']:.3f} "
            f"| {w['whisper_wer_with']:.3f} |"
        )
    return [
        *lines,
        "",
        f"Goal: with normalization at most half the WER without: spoken-form "
        f"{'met' if goal_wer else 'missed'}, Whisper-normalizer "
        f"{'met' if goal_whisper else 'missed'} ({w['sentences']} sentences).",
        "",
        "| written | heard without | heard with |",
        "|---|---|---|",
        *(
            f"| {r['written']} | {r['heard_without']} ({r['wer_without']:.2f}) "
            f"| {r['heard_with']} ({r['wer_with']:.2f}) |"
            for r in w["rows"]
        ),
        "",
    ]


def report(result: dict[str, Any]) -> str:
    """The markdown note."""
    return "\n".join([*_cost(result), *_intelligibility(result["intelligibility"])])


def run(sentences: int, rounds: int) -> dict[str, Any]:
    """Both measurements on the first ``sentences`` of the hard set."""
    cases = HARD_SET[:sentences]
    return {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cost": cost([written for written, _ in cases], rounds),
        "intelligibility": intelligibility(cases),
    }


def main(argv: list[str] | None = None) -> None:
    """Measure, then write ``normalization.{json,md}``."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.speech.normalization", description=__doc__
    )
    parser.add_argument("--sentences", type=int, default=len(HARD_SET))
    parser.add_argument("--rounds", type=int, default=200, help="timed calls per sentence")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    result = run(args.sentences, args.rounds)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "normalization.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "normalization.md").write_text(report(result))
    print(report(result))


if __name__ == "__main__":
    main()
