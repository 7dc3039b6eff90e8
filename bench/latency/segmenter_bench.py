"""Segmenter micro-benchmark: cost per pushed token, and how soon boundaries are released.

    python -m bench.latency.segmenter_bench

Streams every realistic reply of the segmenter's corpus (``agent/segmenter/corpus``), sliced as
an LLM tokenizer would, through ``SentenceSegmenter``. Latencies use a simulated clock at
50 tokens/s: token k arrives at k * 20 ms, nothing sleeps. Writes
``docs/benchmarks/segmenter.{md,json}``.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from agent.segmenter import SentenceSegmenter
from agent.segmenter.corpus import CASES, llm_tokens
from agent.segmenter.sentences import CLAUSE_MARKS

OUT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks"
TOKEN_MS = 1000 / 50  # 50 tokens/s
REPEATS = 9  # cost runs; the median is reported
PASSES = 20  # corpus passes per cost run
EAGER_SWEEP = (None, 2, 3, 4, 5, 6, 8)
MERGE_SWEEP = (0, 2)
DEFAULTS = SentenceSegmenter().sentences  # the default cutting options
WINDOW_CHARS = DEFAULTS.max_chars  # text window for the phonemes-per-character measurement


def replies() -> list[list[str]]:
    """The corpus replies, each as its list of tokens."""
    return [llm_tokens(case.text) for case in CASES if case.is_reply]


def openings() -> list[tuple[list[str], str]]:
    """Every sentence of the corpus replies taken as the start of a reply, as (tokens of the
    sentence and the one after it, so that its end is found in the stream; the sentence)."""
    out = []
    for case in CASES:
        if case.is_reply:
            for first, second in itertools.pairwise(case.expected):
                if first[-1] in ".!?…":  # a sentence, not a heading or a bare list item
                    out.append((llm_tokens(f"{first} {second}"), first))
    return out


def cost_per_token(streams: list[list[str]]) -> list[float]:
    """Microseconds per pushed token (flush included), one figure per run."""
    tokens = sum(map(len, streams)) * PASSES
    runs = []
    for _ in range(REPEATS):
        seg = SentenceSegmenter()
        started = time.perf_counter()
        for _ in range(PASSES):
            for stream in streams:
                for token in stream:
                    seg.push(token)
                seg.flush()
        runs.append((time.perf_counter() - started) / tokens * 1e6)
    return runs


def arrivals(tokens: list[str], segments: list[str], **options: Any) -> list[int]:
    """Index of the token that completes each segment's text.

    Segment k is complete at token t when flushing the reply cut after token t says everything
    up to and including segment k (spaces aside): exact even where markup or a link's URL
    stands between the text and the boundary.
    """
    said = []
    for t in range(len(tokens)):
        seg = SentenceSegmenter(**options)
        said.append("".join(seg.push("".join(tokens[: t + 1])) + seg.flush()).replace(" ", ""))
    out, t, target = [], 0, ""
    for segment in segments:
        target += segment.replace(" ", "")
        while not said[t].startswith(target):
            t += 1
        out.append(t)
    return out


def stream(tokens: list[str], **options: Any) -> list[dict[str, Any]]:
    """Each segment of one reply, the token that completed it and the token that released it
    (-1: released by flush)."""
    seg = SentenceSegmenter(**options)
    released = []
    for index, token in enumerate(tokens):
        released += [(text, index) for text in seg.push(token)]
    released += [(text, -1) for text in seg.flush()]
    texts = [text for text, _ in released]
    return [
        {"text": text, "released": index, "arrived": arrived}
        for (text, index), arrived in zip(released, arrivals(tokens, texts, **options), strict=True)
    ]


def latencies(streams: list[list[str]]) -> dict[str, Any]:
    """Release delay after each boundary's last character, under the default options."""
    delays, at_flush = [], 0
    for tokens in streams:
        for segment in stream(tokens):
            if segment["released"] < 0:
                at_flush += 1
            else:
                delays.append((segment["released"] - segment["arrived"]) * TOKEN_MS)
    return {
        "boundaries": len(delays),
        "median_ms": statistics.median(delays),
        "p90_ms": statistics.quantiles(delays, n=10)[-1],
        "max_ms": max(delays),
        "segments_at_flush": at_flush,
    }


def first_segment(
    starts: list[tuple[list[str], str]], eager: int | None, merge: int
) -> dict[str, Any]:
    """Time to the first segment, its size and the eager cuts, for one eager/merge setting."""
    times, words, cuts = [], [], []
    for tokens, sentence in starts:
        seg = SentenceSegmenter(eager_min_words=eager, merge_under_words=merge)
        index, first = 0, seg.push(tokens[0])
        while not first:
            index += 1
            first = seg.push(tokens[index]) if index < len(tokens) else seg.flush()
        times.append(min(index, len(tokens) - 1) * TOKEN_MS)
        words.append(len(first[0].split()))
        if first[0] != sentence and first[0][-1] in CLAUSE_MARKS:
            cuts.append(words[-1])
    return {
        "eager_min_words": eager,
        "merge_under_words": merge,
        "median_ms": statistics.median(times),
        "max_ms": max(times),
        "median_words": statistics.median(words),
        "clause_cuts": len(cuts),
        "shortest_cut_words": min(cuts, default=None),
    }


def phonemes_per_char() -> dict[str, Any] | None:
    """Kokoro phonemes per character over corpus text windows (None without the G2P)."""
    try:
        from tts_server.engines.g2p import MAX_PHONEMES, EnglishG2P

        g2p = EnglishG2P()
    except (ImportError, RuntimeError):
        return None
    text = " ".join(s for c in CASES if c.is_reply for s in c.expected if s.isascii())
    windows = []
    for start in range(0, len(text) - WINDOW_CHARS, WINDOW_CHARS // 2):
        window = text[start : start + WINDOW_CHARS].rsplit(" ", 1)[0].split(" ", 1)[1]
        windows.append(len(g2p(window)) / len(window))
    return {
        "windows": len(windows),
        "window_chars": WINDOW_CHARS,
        "kokoro_max_phonemes": MAX_PHONEMES,
        "median": round(statistics.median(windows), 3),
        "max": round(max(windows), 3),
    }


def machine() -> str:
    """The machine in a few words."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def _cost_and_release(result: dict[str, Any]) -> list[str]:
    cost, lat = result["cost_us_per_token"], result["latency"]
    return [
        "# Segmenter benchmark",
        "",
        f"Machine: {result['machine']}. Written by `bench/latency/segmenter_bench.py`; all figures "
        "from one run.",
        f"Input: the {result['replies']} corpus replies, {result['tokens']} LLM-like tokens "
        f"({result['chars_per_token']:.2f} characters a token).",
        "",
        "## Cost per pushed token",
        "",
        f"Median of {REPEATS} runs of {PASSES} passes over the corpus, flush included: "
        f"**{cost['median']:.2f} µs** per token (runs: {cost['min']:.2f} to "
        f"{cost['max']:.2f} µs). Target: under 20 µs.",
        "",
        "## Boundary release at 50 tokens/s",
        "",
        "Delay between the arrival of a segment's last character and the push that returns "
        "the segment, default options, segments returned by `flush()` excluded "
        f"({lat['segments_at_flush']} of them).",
        "",
        "| boundaries | median (ms) | p90 (ms) | max (ms) |",
        "|---:|---:|---:|---:|",
        f"| {lat['boundaries']} | {lat['median_ms']:.0f} | {lat['p90_ms']:.0f} | "
        f"{lat['max_ms']:.0f} |",
    ]


def _first_segment(result: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "## First segment (time to first audio)",
        "",
        f"Each of the {result['openings']} sentences of the corpus replies taken as the "
        "start of a reply: time from its first token to the push that returns the first "
        "segment, and that segment's size, per setting (defaults in bold).",
        "",
        "| eager_min_words | merge_under_words | median (ms) | max (ms) | median words "
        "| clause cuts | shortest cut (words) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["first_segment"]:
        default = (row["eager_min_words"], row["merge_under_words"]) == (
            DEFAULTS.eager_min_words,
            DEFAULTS.merge_under_words,
        )
        cells = [
            str(row["eager_min_words"]),
            str(row["merge_under_words"]),
            f"{row['median_ms']:.0f}",
            f"{row['max_ms']:.0f}",
            f"{row['median_words']:g}",
            str(row["clause_cuts"]),
            str(row["shortest_cut_words"] or "-"),
        ]
        cells = [f"**{c}**" for c in cells] if default else cells
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _phonemes(phon: dict[str, Any] | None) -> list[str]:
    lines = ["", "## Kokoro phonemes per character", ""]
    if phon is None:
        lines.append("Not measured: the G2P (`pip install -e '.[tts]'`) is not installed.")
    else:
        lines.append(
            f"{phon['windows']} windows of about {phon['window_chars']} characters of corpus "
            f"text through `tts_server.engines.g2p`: median {phon['median']}, max {phon['max']} "
            f"phonemes per character. {phon['window_chars']} characters stay within one Kokoro "
            f"pass ({phon['kokoro_max_phonemes']} phonemes) up to "
            f"{phon['kokoro_max_phonemes'] / phon['window_chars']:.2f} phonemes per character."
        )
    return lines


def markdown(result: dict[str, Any]) -> str:
    """The report for docs/benchmarks/segmenter.md."""
    lines = [
        *_cost_and_release(result),
        *_first_segment(result),
        *_phonemes(result["phonemes_per_char"]),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Measure, print the report and write it next to its JSON."""
    streams, starts = replies(), openings()
    tokens = sum(map(len, streams))
    runs = cost_per_token(streams)
    result = {
        "machine": machine(),
        "replies": len(streams),
        "tokens": tokens,
        "chars_per_token": round(sum(len(t) for s in streams for t in s) / tokens, 2),
        "cost_us_per_token": {
            "median": round(statistics.median(runs), 3),
            "min": round(min(runs), 3),
            "max": round(max(runs), 3),
            "runs": [round(run, 3) for run in runs],
        },
        "openings": len(starts),
        "latency": latencies(streams),
        "first_segment": [
            first_segment(starts, eager, merge) for merge in MERGE_SWEEP for eager in EAGER_SWEEP
        ],
        "phonemes_per_char": phonemes_per_char(),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "segmenter.json").write_text(json.dumps(result, indent=2) + "\n")
    report = markdown(result)
    (OUT / "segmenter.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
